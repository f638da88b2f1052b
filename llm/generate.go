package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Defaults shared by the remote providers.
const (
	DefaultTimeout    = 2 * time.Minute
	DefaultMaxRetries = 2
)

// errTimedOut is the cause of the context a generation runs under once its
// Timeout has passed, telling our own deadline apart from the caller's.
var errTimedOut = errors.New("generation timed out")

// remote holds what both SDK-backed providers share.
type remote struct {
	provider   string
	model      string
	timeout    time.Duration
	maxRetries int
	red        redactor
	prices     map[string]Price
	// backoff is the wait before retry number n (0-based) of a stream that failed
	// after a 200 response but before its first text; tests shorten it. HTTP
	// status retries are the SDK's own and honour Retry-After.
	backoff func(n int) time.Duration
}

func newRemote(provider, model string, timeout time.Duration, maxRetries int, apiKey string, prices map[string]Price) remote {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	switch {
	case maxRetries == 0:
		maxRetries = DefaultMaxRetries
	case maxRetries < 0:
		maxRetries = 0
	}
	if prices == nil {
		prices = DefaultPrices()
	}
	return remote{
		provider:   provider,
		model:      model,
		timeout:    timeout,
		maxRetries: maxRetries,
		red:        redactor(apiKey),
		prices:     prices,
		backoff:    defaultBackoff,
	}
}

// defaultBackoff mirrors the SDKs' schedule: 0.5 s doubling, at most 8 s, minus
// up to a quarter of jitter.
func defaultBackoff(n int) time.Duration {
	d := 500 * time.Millisecond << min(n, 4)
	return d - time.Duration(rand.Int64N(int64(d/4)+1))
}

// attemptResult is what one streaming attempt reports.
type attemptResult struct {
	usage    Usage
	model    string // as the server names it; empty if it did not say
	attempts int    // HTTP attempts the SDK made (its own retries included)
	err      error  // a *ProviderError, the callback's error, or a context error
}

// attemptFunc runs one streaming request allowing the SDK at most httpRetries
// retries of its own, passing text to emit as it arrives.
type attemptFunc func(ctx context.Context, httpRetries int, emit func(string) error) attemptResult

// generate runs attempts until one succeeds, text has been emitted, or the
// retry budget (maxRetries retries over all HTTP attempts) is spent. Once any
// text has reached onDelta nothing is replayed: a failure then ends the
// generation with the text so far in the returned Response.
func (r *remote) generate(ctx context.Context, onDelta func(string) error, attempt attemptFunc) (Response, error) {
	if onDelta == nil {
		onDelta = func(string) error { return nil }
	}
	callerCtx := ctx
	ctx, cancel := context.WithTimeoutCause(ctx, r.timeout, errTimedOut)
	defer cancel()

	var text strings.Builder
	var callbackErr error
	emitted := false
	emit := func(s string) error {
		if s == "" {
			return nil
		}
		emitted = true
		text.WriteString(s)
		if err := onDelta(s); err != nil {
			callbackErr = err
			return err
		}
		return nil
	}

	budget := r.maxRetries + 1 // HTTP attempts left
	attemptsMade := 0
	for n := 0; ; n++ {
		res := attempt(ctx, budget-1, emit)
		used := max(res.attempts, 1)
		budget -= used
		attemptsMade += used
		resp := Response{Text: text.String(), Usage: res.usage, Model: firstNonEmpty(res.model, r.model)}
		if res.err == nil {
			return resp, nil
		}
		switch {
		case callbackErr != nil:
			return resp, callbackErr
		case callerCtx.Err() != nil:
			return resp, fmt.Errorf("%s: generation stopped: %w", r.provider, callerCtx.Err())
		case errors.Is(context.Cause(ctx), errTimedOut):
			return resp, &ProviderError{
				Provider: r.provider, Attempts: attemptsMade, Failure: FailureOutage,
				Message: fmt.Sprintf("no complete answer within %s", r.timeout),
				cause:   context.DeadlineExceeded,
			}
		}
		var pe *ProviderError
		if !errors.As(res.err, &pe) {
			// Not expected: attempts classify their errors. Still redacted.
			pe = errorFromTransport(r.provider, r.red, res.err, false, used)
		}
		pe.Attempts = attemptsMade
		if !pe.retryable || emitted || budget <= 0 {
			return resp, pe
		}
		t := time.NewTimer(r.backoff(n))
		select {
		case <-ctx.Done():
			t.Stop()
			if callerCtx.Err() != nil {
				return resp, fmt.Errorf("%s: generation stopped: %w", r.provider, callerCtx.Err())
			}
			return resp, pe
		case <-t.C:
		}
	}
}

// maxRetryWait is the longest server-directed wait (Retry-After) worth sitting
// through in a chat: past it, or past the generation's deadline, the error is
// returned at once with its real status instead of sleeping.
const maxRetryWait = 30 * time.Second

// sdkMiddleware counts the HTTP requests the SDK sends (its own retries
// included) into n, and tells the SDK not to retry (x-should-retry: false, which
// both SDKs honour) a response whose Retry-After exceeds maxRetryWait or the
// request's deadline.
func sdkMiddleware(n *int) func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		*n++
		res, err := next(req)
		if err != nil || res == nil || res.StatusCode < 400 {
			return res, err
		}
		if wait, ok := retryAfter(res.Header); ok {
			deadline, hasDeadline := req.Context().Deadline()
			if wait > maxRetryWait || (hasDeadline && time.Now().Add(wait).After(deadline)) {
				res.Header.Set("X-Should-Retry", "false")
			}
		}
		return res, err
	}
}

// retryAfter reads Retry-After-Ms, or Retry-After in seconds or as an HTTP date.
func retryAfter(h http.Header) (time.Duration, bool) {
	// Clamped so that absurd values cannot overflow a Duration.
	seconds := func(s float64) time.Duration { return time.Duration(min(s, 1e6) * float64(time.Second)) }
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return seconds(ms / 1000), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return seconds(s), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// CostUSD prices a response of this provider with its price table.
// The model the server reported (often a dated snapshot such as
// gpt-4o-mini-2024-07-18) is looked up first, then the configured one.
func (r *remote) CostUSD(resp Response) float64 {
	for _, m := range []string{resp.Model, r.model} {
		if p, ok := lookupPrice(r.prices, m); ok {
			return p.cost(resp.Usage)
		}
	}
	return 0
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// requestMessages returns the conversation, falling back to the Question as a
// single user turn when the caller sent no messages.
func requestMessages(req Request) []Message {
	if len(req.Messages) == 0 && strings.TrimSpace(req.Question) != "" {
		return []Message{{Role: "user", Content: req.Question}}
	}
	return req.Messages
}
