package llm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/canonkb/canon/domain"
)

// Failure says what a provider's failure asks of whoever reads it: whether
// trying again helps, and who must act.
type Failure int

const (
	// FailureOutage is no answer (unreachable, 5xx, a stream cut or garbled, no
	// complete answer in time). Trying again shortly may help.
	FailureOutage Failure = iota
	// FailureRateLimited is the provider throttling canon (429). Trying again
	// later helps.
	FailureRateLimited
	// FailureCredentials is the provider refusing canon's API key (401, 403). The
	// operator must fix the key or its access.
	FailureCredentials
	// FailureRejected is the provider refusing this request (400, 404, 413, 422,
	// another 4xx, an invalid_request_error event): a model it does not have,
	// a prompt too long for the model, a quota used up, or a bug on our side.
	// The same request fails the same way.
	FailureRejected
)

func (f Failure) String() string {
	switch f {
	case FailureOutage:
		return "outage"
	case FailureRateLimited:
		return "rate limited"
	case FailureCredentials:
		return "credentials refused"
	case FailureRejected:
		return "request rejected"
	}
	return fmt.Sprintf("Failure(%d)", int(f))
}

// ProviderError is a failure reported by, or on the way to, a remote provider.
//
// Its message is built by this package from the HTTP status and the server's own
// error message; it never holds the SDK's error text (which may quote URLs,
// headers or bodies) and every occurrence of the configured API key is replaced
// by "[redacted]", so the error is safe to log and to show.
//
// Failure classifies it; outages and rate limits (the provider itself failing
// or busy, not this request) match ErrUnavailable with errors.Is.
type ProviderError struct {
	Provider   string  // "openai" or "anthropic"
	StatusCode int     // HTTP status; 0 when no response arrived, 200 for errors inside the stream
	Type       string  // the server's error type when it gave one, e.g. "rate_limit_error"
	Failure    Failure // what the failure asks of the caller
	Message    string  // redacted, human-readable detail
	// Detail is the server's own error message, redacted and trimmed ("" when
	// it sent none): what a person reads of a rejected request.
	Detail   string
	Attempts int // HTTP attempts made for this generation (retries included)

	cause error // only errors safe to expose (context errors), for errors.Is
	// retryable marks a failure after a 200 response that may be retried when no
	// text has been emitted yet (status errors are retried by the SDK itself).
	retryable bool
}

// Unavailable reports whether the provider itself failed or is busy (an
// outage or a rate limit), rather than refusing this request or canon's key.
func (e *ProviderError) Unavailable() bool {
	return e.Failure == FailureOutage || e.Failure == FailureRateLimited
}

// Reason names the provider's answer: "HTTP 400", or the type of an error
// inside the stream ("invalid_request_error"), or "no response".
func (e *ProviderError) Reason() string {
	switch {
	case e.StatusCode != 0 && e.StatusCode != http.StatusOK:
		return fmt.Sprintf("HTTP %d", e.StatusCode)
	case e.Type != "":
		return e.Type
	case e.StatusCode == http.StatusOK:
		return "an error in the response stream"
	}
	return "no response"
}

func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	b.WriteString(": ")
	if e.Unavailable() {
		b.WriteString(ErrUnavailable.Error())
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

// Unwrap lets errors.Is find ErrUnavailable (for outages and rate limits) and,
// for a timeout, context.DeadlineExceeded.
func (e *ProviderError) Unwrap() []error {
	var errs []error
	if e.Unavailable() {
		errs = append(errs, ErrUnavailable)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

// redactor removes a secret from text that goes into errors.
type redactor string

func (r redactor) clean(s string) string {
	if r == "" {
		return s
	}
	return strings.ReplaceAll(s, string(r), "[redacted]")
}

// maxServerMessage bounds how much of a server's error text goes into an error.
const maxServerMessage = 400

// errorFromStatus classifies an HTTP error response.
func errorFromStatus(provider string, red redactor, status int, typ, serverMsg string, attempts int) *ProviderError {
	e := &ProviderError{Provider: provider, StatusCode: status, Type: typ, Attempts: attempts,
		Detail: trimMessage(red.clean(serverMsg))}
	var hint string
	switch {
	case status == http.StatusUnauthorized:
		e.Failure, hint = FailureCredentials, "authentication failed, check the API key"
	case status == http.StatusForbidden:
		e.Failure, hint = FailureCredentials, "permission denied, check the API key's access to this model"
	case status == http.StatusTooManyRequests && typ == "insufficient_quota":
		// OpenAI's answer when the account's credit is spent: waiting does not help.
		e.Failure, hint = FailureRejected, "quota exhausted, check the account's plan and billing"
	case status == http.StatusTooManyRequests:
		e.Failure, hint = FailureRateLimited, "rate limited"
	case status == http.StatusRequestTimeout || status == http.StatusConflict:
		e.Failure, hint = FailureOutage, "try again"
	case status == http.StatusNotFound:
		e.Failure, hint = FailureRejected, "not found, check the base URL and the model name"
	case status >= 400 && status < 500:
		// Our request is wrong (or too large for the model): not the provider's fault.
		e.Failure, hint = FailureRejected, "request rejected"
	case status >= 500:
		e.Failure, hint = FailureOutage, "server error"
	default:
		e.Failure, hint = FailureOutage, "unexpected response"
	}
	msg := fmt.Sprintf("HTTP %d %s: %s", status, http.StatusText(status), hint)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	e.Message = msg
	return e
}

// errorFromStreamEvent classifies an error event received after a 200 response.
func errorFromStreamEvent(provider string, red redactor, typ, serverMsg string, attempts int) *ProviderError {
	e := &ProviderError{Provider: provider, StatusCode: http.StatusOK, Type: typ, Attempts: attempts,
		Detail: trimMessage(red.clean(serverMsg))}
	switch typ {
	case "invalid_request_error", "request_too_large", "not_found_error":
		e.Failure = FailureRejected
	case "authentication_error", "permission_error":
		e.Failure = FailureCredentials
	case "rate_limit_error":
		e.Failure = FailureRateLimited
	default:
		e.Failure = FailureOutage
	}
	e.retryable = e.Unavailable()
	msg := "error in the response stream"
	if typ != "" {
		msg += " (" + typ + ")"
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	e.Message = msg
	return e
}

// errorFromTransport classifies a failure without an error response: no
// connection (before any response) or a stream cut or garbled after a 200.
func errorFromTransport(provider string, red redactor, err error, gotResponse bool, attempts int) *ProviderError {
	e := &ProviderError{Provider: provider, Attempts: attempts, Failure: FailureOutage}
	if gotResponse {
		e.StatusCode = http.StatusOK
		e.retryable = true
		e.Message = "response stream interrupted: " + trimMessage(red.clean(err.Error()))
	} else {
		e.Message = "request failed: " + trimMessage(red.clean(err.Error()))
	}
	return e
}

func trimMessage(s string) string {
	return domain.Clip(strings.Join(strings.Fields(s), " "), maxServerMessage)
}

// parseErrorBody extracts the error type and message from the JSON error bodies
// that OpenAI, Anthropic and the OpenAI-compatible servers send:
//
//	{"error":{"type":"...","message":"..."}}           OpenAI, Anthropic, Ollama, llama.cpp
//	{"type":"error","error":{"type":"...","message":"..."}}  Anthropic
//	{"object":"error","message":"...","type":"..."}    vLLM
//	{"error":"..."}                                    Ollama's native errors
//	{"detail":"..."}                                   FastAPI-based servers
//
// Anything else is returned as the (trimmed) raw text.
func parseErrorBody(body []byte) (typ, msg string) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) != nil {
		return "", strings.TrimSpace(string(body))
	}
	if len(v.Error) > 0 {
		var inner struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		}
		if json.Unmarshal(v.Error, &inner) == nil && (inner.Message != "" || inner.Type != "") {
			return inner.Type, inner.Message
		}
		var s string
		if json.Unmarshal(v.Error, &s) == nil {
			return v.Type, s
		}
	}
	if v.Message != "" {
		return v.Type, v.Message
	}
	if len(v.Detail) > 0 {
		var s string
		if json.Unmarshal(v.Detail, &s) == nil {
			return "", s
		}
		return "", string(v.Detail)
	}
	return "", strings.TrimSpace(string(body))
}
