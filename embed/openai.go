package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultOpenAIBaseURL is OpenAI's API. Ollama, vLLM and text-embeddings-inference
// serve the same /embeddings route under their own base URL (e.g.
// http://localhost:11434/v1 for Ollama).
const DefaultOpenAIBaseURL = "https://api.openai.com/v1"

// OpenAIConfig configures an embedder for any OpenAI-compatible embeddings API.
type OpenAIConfig struct {
	BaseURL string // default DefaultOpenAIBaseURL; "/embeddings" is appended
	Model   string // required, e.g. "text-embedding-3-small"
	// APIKey is sent as a bearer token when set; local servers usually need none.
	APIKey     string
	BatchSize  int           // inputs per request; default 64
	Timeout    time.Duration // per request attempt; default 30s
	MaxRetries int           // retries after the first attempt; default 4, negative means none
	// Dim is the dimension the database schema stores (KB_EMBEDDING_DIM); every
	// returned vector must have exactly this length.
	Dim int
	// Dimensions, when > 0, is sent as the request's "dimensions" field, which
	// asks models that support it (OpenAI text-embedding-3-*) for shortened
	// vectors. Servers that do not support it may reject the request, so it is
	// sent only when set.
	Dimensions int
	HTTPClient *http.Client // default: a client without its own timeout (Timeout applies per attempt)
}

// OpenAI embeds text with an OpenAI-compatible embeddings endpoint. It returns the
// vectors as the server gives them, without re-normalising: canon compares them
// by cosine, which ignores length.
type OpenAI struct {
	cfg      OpenAIConfig
	endpoint string
	client   *http.Client
	// backoff is the delay before retry number attempt (1-based) when the server
	// gives no Retry-After; tests shorten it.
	backoff func(attempt int) time.Duration
}

// NewOpenAI validates cfg and fills its defaults.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("openai embedder: Model is required")
	}
	if cfg.Dim <= 0 {
		return nil, fmt.Errorf("openai embedder: Dim must be the schema's vector dimension (KB_EMBEDDING_DIM), got %d", cfg.Dim)
	}
	if cfg.Dimensions < 0 {
		return nil, fmt.Errorf("openai embedder: Dimensions must not be negative, got %d", cfg.Dimensions)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultOpenAIBaseURL
	}
	if !strings.HasPrefix(cfg.BaseURL, "http://") && !strings.HasPrefix(cfg.BaseURL, "https://") {
		return nil, fmt.Errorf("openai embedder: BaseURL %q must start with http:// or https://", cfg.BaseURL)
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 64
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 4
	} else if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	return &OpenAI{
		cfg:      cfg,
		endpoint: strings.TrimRight(cfg.BaseURL, "/") + "/embeddings",
		client:   client,
		backoff:  exponentialJitter(500*time.Millisecond, 20*time.Second),
	}, nil
}

// Name is "openai:<model>": vectors of different models are not comparable, so
// the model is part of cache keys and meta.
func (o *OpenAI) Name() string { return KindOpenAI + ":" + o.cfg.Model }

// Dim is the configured vector dimension.
func (o *OpenAI) Dim() int { return o.cfg.Dim }

// Check embeds one short text so that startup fails fast, with an actionable
// message, when the endpoint is unreachable, the key is wrong, or the model's
// dimension differs from the schema's.
func (o *OpenAI) Check(ctx context.Context) error {
	_, err := o.EmbedQuery(ctx, "canon embedding check")
	return err
}

// EmbedQuery embeds one text.
func (o *OpenAI) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	vecs, err := o.EmbedDocuments(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	return vecs[0], nil
}

// EmbedDocuments embeds texts in batches of BatchSize, one request at a time so
// that a rate-limited account is not hit by a burst.
func (o *OpenAI) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += o.cfg.BatchSize {
		batch := texts[start:min(start+o.cfg.BatchSize, len(texts))]
		vecs, err := o.embedBatch(ctx, batch)
		if err != nil {
			if len(texts) > len(batch) {
				return nil, fmt.Errorf("%w (batch of inputs %d–%d of %d)", err, start, start+len(batch)-1, len(texts))
			}
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

type embeddingsRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

type embeddingsResponse struct {
	Data []struct {
		Embedding []float32 `json:"embedding"`
		Index     int       `json:"index"`
	} `json:"data"`
	Model string `json:"model"`
}

// statusError is a failed HTTP exchange; retryable says whether trying again can help.
type statusError struct {
	status     int
	msg        string
	retryable  bool
	retryAfter time.Duration // from the Retry-After header; < 0 when absent
}

func (e *statusError) Error() string {
	if e.status == 0 {
		return e.msg
	}
	if e.msg == "" {
		return fmt.Sprintf("%d %s", e.status, http.StatusText(e.status))
	}
	return fmt.Sprintf("%d %s: %s", e.status, http.StatusText(e.status), e.msg)
}

func (o *OpenAI) embedBatch(ctx context.Context, batch []string) ([][]float32, error) {
	body, err := json.Marshal(embeddingsRequest{
		Model:          o.cfg.Model,
		Input:          batch,
		EncodingFormat: "float",
		Dimensions:     o.cfg.Dimensions,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: encoding request: %w", o.Name(), err)
	}
	for attempt := 0; ; attempt++ {
		resp, err := o.post(ctx, body)
		if err == nil {
			return o.decode(resp, len(batch))
		}
		// The caller's own deadline or cancellation ends the retries; a
		// per-attempt timeout does not.
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w (last error: %s)", o.Name(), ctx.Err(), o.redact(err.Error()))
		}
		var se *statusError
		retryable := true
		wait := o.backoff(attempt + 1)
		if errors.As(err, &se) {
			retryable = se.retryable
			if se.retryAfter >= 0 {
				wait = se.retryAfter
			}
		}
		if !retryable || attempt >= o.cfg.MaxRetries {
			tries := ""
			if attempt > 0 {
				tries = fmt.Sprintf(" after %d attempts", attempt+1)
			}
			return nil, fmt.Errorf("%s: POST %s%s: %s", o.Name(), o.endpoint, tries, o.redact(err.Error()))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%s: %w (last error: %s)", o.Name(), ctx.Err(), o.redact(err.Error()))
		case <-t.C:
		}
	}
}

// post makes one attempt and returns the body of a 2xx response.
func (o *OpenAI) post(ctx context.Context, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, o.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &statusError{msg: err.Error(), retryAfter: -1} // a malformed BaseURL: not retryable
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if o.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.cfg.APIKey)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return nil, err // network error or attempt timeout: retryable
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		// A full batch of large vectors is a few megabytes; the cap only stops a
		// misbehaving server from exhausting memory.
		b, err := io.ReadAll(io.LimitReader(resp.Body, 512<<20))
		if err != nil {
			return nil, fmt.Errorf("reading response: %w", err)
		}
		return b, nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return nil, &statusError{
		status:     resp.StatusCode,
		msg:        serverMessage(b),
		retryable:  retryableStatus(resp.StatusCode),
		retryAfter: parseRetryAfter(resp.Header.Get("Retry-After")),
	}
}

// retryableStatus follows OpenAI's own clients: rate limits, server errors, and
// the timeout and conflict statuses that a repeat can clear.
func retryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusRequestTimeout ||
		code == http.StatusConflict || code >= 500
}

// serverMessage extracts {"error":{"message":...}} (OpenAI, vLLM), {"error":"..."}
// (Ollama, TEI) or else a trimmed prefix of the body.
func serverMessage(body []byte) string {
	var withObject struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &withObject) == nil && withObject.Error.Message != "" {
		return withObject.Error.Message
	}
	var withString struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &withString) == nil && withString.Error != "" {
		return withString.Error
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// parseRetryAfter reads Retry-After as seconds or an HTTP date; -1 when absent or
// unreadable.
func parseRetryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return -1
}

// exponentialJitter doubles the delay per attempt up to limit and picks uniformly
// from its upper half, so that clients throttled together do not retry together.
func exponentialJitter(base, limit time.Duration) func(int) time.Duration {
	return func(attempt int) time.Duration {
		d := base << min(attempt-1, 20)
		if d <= 0 || d > limit {
			d = limit
		}
		return d/2 + rand.N(d/2+1)
	}
}

func (o *OpenAI) decode(body []byte, n int) ([][]float32, error) {
	var r embeddingsResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%s: decoding response from %s: %w", o.Name(), o.endpoint, err)
	}
	if len(r.Data) != n {
		return nil, fmt.Errorf("%s: %s returned %d embeddings for %d inputs", o.Name(), o.endpoint, len(r.Data), n)
	}
	out := make([][]float32, n)
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= n || out[d.Index] != nil {
			return nil, fmt.Errorf("%s: %s returned an invalid or repeated index %d for %d inputs", o.Name(), o.endpoint, d.Index, n)
		}
		if len(d.Embedding) != o.cfg.Dim {
			return nil, o.dimError(len(d.Embedding))
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}

func (o *OpenAI) dimError(got int) error {
	hint := fmt.Sprintf("set KB_EMBEDDING_DIM=%d and recreate the embeddings, or choose a model that returns %d dimensions", got, o.cfg.Dim)
	if o.cfg.Dimensions == 0 && got > o.cfg.Dim {
		hint += fmt.Sprintf(" (models such as text-embedding-3-* can shorten their vectors: configure Dimensions=%d)", o.cfg.Dim)
	}
	return fmt.Errorf("embedder %s returned %d-dimensional vectors but the database schema has %d (KB_EMBEDDING_DIM); %s",
		o.Name(), got, o.cfg.Dim, hint)
}

// redact removes the API key from text that may echo it (some servers quote the
// rejected key in their error message).
func (o *OpenAI) redact(s string) string {
	if o.cfg.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, o.cfg.APIKey, "[redacted]")
}
