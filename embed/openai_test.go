package embed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const testKey = "sk-test-0123456789abcdef"

// fakeOpenAI speaks the OpenAI embeddings wire format. Input "text-N" embeds to a
// vector whose first component is N, so tests can check order. fail, when set,
// may answer a call itself (to inject errors) and returns true if it did.
type fakeOpenAI struct {
	t    *testing.T
	dim  int
	fail func(call int, w http.ResponseWriter) bool

	mu       sync.Mutex
	calls    int
	requests []map[string]any
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls++
	call := f.calls
	f.mu.Unlock()

	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error"}}`, strings.TrimPrefix(got, "Bearer "))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		f.t.Errorf("Content-Type = %q", ct)
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.t.Errorf("request body: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, body)
	f.mu.Unlock()
	if f.fail != nil && f.fail(call, w) {
		return
	}

	inputs, _ := body["input"].([]any)
	type datum struct {
		Object    string    `json:"object"`
		Embedding []float32 `json:"embedding"`
		Index     int       `json:"index"`
	}
	data := make([]datum, len(inputs))
	for i, in := range inputs {
		n, _ := strconv.Atoi(strings.TrimPrefix(in.(string), "text-"))
		v := make([]float32, f.dim)
		for k := range v {
			v[k] = 0.5
		}
		v[0] = float32(n)
		data[i] = datum{"embedding", v, i}
	}
	slices.Reverse(data) // servers may answer out of order; index is authoritative
	w.Header().Set("Content-Type", "application/json")
	err := json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"data":   data,
		"model":  body["model"],
		"usage":  map[string]int{"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
	})
	if err != nil {
		f.t.Errorf("writing the response: %v", err)
	}
}

func (f *fakeOpenAI) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// newTestOpenAI starts a fake server and an embedder pointed at it whose retry
// delays are capped at a millisecond, so retry tests run fast (a Retry-After
// above the cap then ends the retries, as one above two minutes does in use).
func newTestOpenAI(t *testing.T, f *fakeOpenAI, cfg OpenAIConfig) *OpenAI {
	t.Helper()
	f.t = t
	if f.dim == 0 {
		f.dim = 8
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg.BaseURL = srv.URL + "/v1/"
	if cfg.Model == "" {
		cfg.Model = "test-embed"
	}
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	if cfg.Dim == 0 {
		cfg.Dim = 8
	}
	o, err := NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o.maxRetryDelay = time.Millisecond
	return o
}

func inputs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("text-%d", i)
	}
	return out
}

func TestOpenAIBatchesAndOrders(t *testing.T) {
	t.Parallel()
	cases := []struct {
		n, batch  int
		wantCalls int
	}{
		{150, 64, 3},
		{64, 64, 1},
		{1, 0, 1}, // default batch size
		{0, 64, 0},
		{5, 1, 5},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d inputs by %d", c.n, c.batch), func(t *testing.T) {
			f := &fakeOpenAI{}
			o := newTestOpenAI(t, f, OpenAIConfig{BatchSize: c.batch})
			vecs, err := o.EmbedDocuments(context.Background(), inputs(c.n))
			if err != nil {
				t.Fatal(err)
			}
			if f.callCount() != c.wantCalls {
				t.Errorf("calls = %d, want %d", f.callCount(), c.wantCalls)
			}
			if len(vecs) != c.n {
				t.Fatalf("got %d vectors, want %d", len(vecs), c.n)
			}
			for i, v := range vecs {
				if len(v) != 8 || v[0] != float32(i) {
					t.Fatalf("vector %d is for input %v (len %d): results out of order", i, v[0], len(v))
				}
			}
			batch := c.batch
			if batch == 0 {
				batch = 64
			}
			for i, req := range f.requests {
				if req["model"] != "test-embed" || req["encoding_format"] != "float" {
					t.Errorf("request %d: model %v, encoding_format %v", i, req["model"], req["encoding_format"])
				}
				if _, ok := req["dimensions"]; ok {
					t.Errorf("request %d sent dimensions although none was configured", i)
				}
				if in := req["input"].([]any); len(in) > batch {
					t.Errorf("request %d has %d inputs, batch size is %d", i, len(in), batch)
				}
			}
		})
	}
}

func TestOpenAISendsDimensionsWhenConfigured(t *testing.T) {
	t.Parallel()
	f := &fakeOpenAI{}
	o := newTestOpenAI(t, f, OpenAIConfig{Dimensions: 8})
	if err := o.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.requests[0]["dimensions"]; got != float64(8) {
		t.Errorf("dimensions = %v, want 8", got)
	}
}

func TestOpenAIRetries(t *testing.T) {
	t.Parallel()
	status := func(code int, retryAfter, body string, failures int) func(int, http.ResponseWriter) bool {
		return func(call int, w http.ResponseWriter) bool {
			if call > failures {
				return false
			}
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(code)
			fmt.Fprint(w, body)
			return true
		}
	}
	cases := []struct {
		name       string
		fail       func(int, http.ResponseWriter) bool
		maxRetries int
		wantCalls  int
		wantErr    []string // substrings; nil means success
	}{
		{name: "429 then success", fail: status(429, "0", `{"error":{"message":"Rate limit reached"}}`, 1), wantCalls: 2},
		{name: "503 then success", fail: status(503, "", `upstream unavailable`, 1), wantCalls: 2},
		{name: "500 twice then success", fail: status(500, "", ``, 2), wantCalls: 3},
		{
			name: "400 is not retried", fail: status(400, "", `{"error":{"message":"'$.input' is invalid.","type":"invalid_request_error"}}`, 99),
			wantCalls: 1, wantErr: []string{"400 Bad Request", "'$.input' is invalid."},
		},
		{
			name: "Ollama-style error string", fail: status(404, "", `{"error":"model \"nomic\" not found, try pulling it first"}`, 99),
			wantCalls: 1, wantErr: []string{"404 Not Found", `model "nomic" not found`},
		},
		{
			name: "server quoting the key", fail: status(403, "", `{"error":{"message":"key `+testKey+` has no access to this model"}}`, 99),
			wantCalls: 1, wantErr: []string{"403 Forbidden", "[redacted] has no access"},
		},
		{
			name: "retries exhausted", fail: status(502, "0", `bad gateway`, 99), maxRetries: 2,
			wantCalls: 3, wantErr: []string{"502 Bad Gateway", "after 3 attempts", "bad gateway"},
		},
		{
			name: "no retries configured", fail: status(429, "0", ``, 99), maxRetries: -1,
			wantCalls: 1, wantErr: []string{"429 Too Many Requests"},
		},
		{
			name: "dropped connection then success",
			fail: func(call int, w http.ResponseWriter) bool {
				if call > 1 {
					return false
				}
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
				return true
			},
			wantCalls: 2,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeOpenAI{fail: c.fail}
			o := newTestOpenAI(t, f, OpenAIConfig{MaxRetries: c.maxRetries})
			vecs, err := o.EmbedDocuments(context.Background(), inputs(3))
			if f.callCount() != c.wantCalls {
				t.Errorf("calls = %d, want %d", f.callCount(), c.wantCalls)
			}
			if c.wantErr == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if len(vecs) != 3 || vecs[2][0] != 2 {
					t.Fatalf("unexpected vectors %v", vecs)
				}
				return
			}
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, want := range c.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("error leaks the API key: %q", err)
			}
		})
	}
}

func TestOpenAIWrongKeyNeverLeaks(t *testing.T) {
	t.Parallel()
	f := &fakeOpenAI{}
	o := newTestOpenAI(t, f, OpenAIConfig{APIKey: "sk-wrong-key-that-the-server-echoes"})
	err := o.Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("err = %v, want a 401", err)
	}
	if strings.Contains(err.Error(), "sk-wrong-key-that-the-server-echoes") {
		t.Errorf("error leaks the API key: %q", err)
	}
	if f.callCount() != 1 {
		t.Errorf("a 401 was retried: %d calls", f.callCount())
	}
}

func TestOpenAIDimensionMismatch(t *testing.T) {
	t.Parallel()
	f := &fakeOpenAI{dim: 1536}
	o := newTestOpenAI(t, f, OpenAIConfig{Dim: 384})
	for name, err := range map[string]error{
		"Check": o.Check(context.Background()),
		"EmbedDocuments": func() error {
			_, err := o.EmbedDocuments(context.Background(), inputs(2))
			return err
		}(),
	} {
		if err == nil {
			t.Fatalf("%s: no error for 1536-dimensional vectors in a 384 schema", name)
		}
		want := "returned 1536-dimensional vectors but the database schema has 384 (KB_EMBEDDING_DIM)"
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not contain %q", name, err, want)
		}
	}
	if f.callCount() != 2 {
		t.Errorf("a dimension mismatch was retried: %d calls", f.callCount())
	}
}

func TestOpenAIRejectsMalformedResponses(t *testing.T) {
	t.Parallel()
	reply := func(body string) func(int, http.ResponseWriter) bool {
		return func(_ int, w http.ResponseWriter) bool {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, body)
			return true
		}
	}
	v := `[1,2,3,4,5,6,7,8]`
	cases := map[string]string{
		"too few":        `{"data":[{"embedding":` + v + `,"index":0}]}`,
		"repeated index": `{"data":[{"embedding":` + v + `,"index":0},{"embedding":` + v + `,"index":0}]}`,
		"index too big":  `{"data":[{"embedding":` + v + `,"index":0},{"embedding":` + v + `,"index":2}]}`,
		"not json":       `<html>proxy error</html>`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			o := newTestOpenAI(t, &fakeOpenAI{fail: reply(body)}, OpenAIConfig{})
			if _, err := o.EmbedDocuments(context.Background(), inputs(2)); err == nil {
				t.Error("expected an error")
			}
		})
	}
}

func TestOpenAICancellationStopsRetries(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	f := &fakeOpenAI{fail: func(call int, w http.ResponseWriter) bool {
		if call == 1 {
			cancel() // the caller gives up while the server asks it to wait a minute
		}
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
		return true
	}}
	o := newTestOpenAI(t, f, OpenAIConfig{MaxRetries: 10})
	start := time.Now()
	_, err := o.EmbedQuery(ctx, "text-1")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v: cancellation did not interrupt the Retry-After wait", time.Since(start))
	}
	if f.callCount() != 1 {
		t.Errorf("calls = %d, want 1", f.callCount())
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("error leaks the API key: %q", err)
	}
}

// A hung attempt is abandoned after Timeout and retried; only the caller's own
// deadline ends the whole call.
func TestOpenAIAttemptTimeoutIsRetried(t *testing.T) {
	release := make(chan struct{})
	f := &fakeOpenAI{fail: func(call int, w http.ResponseWriter) bool {
		if call == 1 {
			select {
			case <-release:
			case <-time.After(5 * time.Second):
			}
			return true
		}
		return false
	}}
	o := newTestOpenAI(t, f, OpenAIConfig{Timeout: 250 * time.Millisecond})
	// Registered after the server's Close, so it runs first and frees the handler.
	t.Cleanup(func() { close(release) })
	v, err := o.EmbedQuery(context.Background(), "text-7")
	if err != nil {
		t.Fatal(err)
	}
	if v[0] != 7 || f.callCount() != 2 {
		t.Errorf("v[0] = %v after %d calls, want 7 after 2", v[0], f.callCount())
	}
}

func TestNewOpenAIValidates(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  OpenAIConfig
		want string
	}{
		{"no model", OpenAIConfig{Dim: 8}, "Model is required"},
		{"no dim", OpenAIConfig{Model: "m"}, "Dim must be"},
		{"bad url", OpenAIConfig{Model: "m", Dim: 8, BaseURL: "api.openai.com/v1"}, "must start with http"},
		{"negative dimensions", OpenAIConfig{Model: "m", Dim: 8, Dimensions: -1}, "must not be negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewOpenAI(c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
	o, err := NewOpenAI(OpenAIConfig{Model: "text-embedding-3-small", Dim: 1536})
	if err != nil {
		t.Fatal(err)
	}
	if o.Name() != "openai:text-embedding-3-small" || o.Dim() != 1536 || o.endpoint != "https://api.openai.com/v1/embeddings" {
		t.Errorf("defaults: name %q dim %d endpoint %q", o.Name(), o.Dim(), o.endpoint)
	}
}

// The SDK waits as long as Retry-After asks (up to two minutes) before retrying.
func TestOpenAIHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	f := &fakeOpenAI{fail: func(call int, w http.ResponseWriter) bool {
		if call > 1 {
			return false
		}
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return true
	}}
	o := newTestOpenAI(t, f, OpenAIConfig{})
	o.maxRetryDelay = 0 // the SDK's own limits, as in use
	start := time.Now()
	if _, err := o.EmbedQuery(context.Background(), "text-1"); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Errorf("retried after %v, the server asked for 1s", waited)
	}
	if f.callCount() != 2 {
		t.Errorf("calls = %d, want 2", f.callCount())
	}
}

// A server that asks for a longer wait than the SDK honours gets no retry: the
// error comes back at once instead of a call hanging for minutes.
func TestOpenAIRetryAfterBeyondLimitFailsAtOnce(t *testing.T) {
	t.Parallel()
	f := &fakeOpenAI{fail: func(_ int, w http.ResponseWriter) bool {
		w.Header().Set("Retry-After", "600")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":{"message":"Rate limit reached, try again in 10m"}}`)
		return true
	}}
	o := newTestOpenAI(t, f, OpenAIConfig{})
	o.maxRetryDelay = 0
	start := time.Now()
	_, err := o.EmbedQuery(context.Background(), "text-1")
	if err == nil || !strings.Contains(err.Error(), "429 Too Many Requests: Rate limit reached") {
		t.Fatalf("err = %v, want the 429 with the server's message", err)
	}
	if f.callCount() != 1 || time.Since(start) > 5*time.Second {
		t.Errorf("%d calls in %v, want 1 at once", f.callCount(), time.Since(start))
	}
}

// An unreachable endpoint is retried, then named in an error that says nothing answered.
func TestOpenAIOutage(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL + "/v1"
	srv.Close()
	o, err := NewOpenAI(OpenAIConfig{BaseURL: base, Model: "m", Dim: 8, APIKey: testKey, MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	o.maxRetryDelay = time.Millisecond
	err = o.Check(context.Background())
	if err == nil {
		t.Fatal("no error from a closed server")
	}
	for _, want := range []string{"openai:m: POST " + base + "/embeddings after 3 attempts: no response", "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

// Keys must stay out of every rendering of an error, including what a
// structured logger makes of it, and the SDK's OPENAI_* environment defaults
// must not leak a key meant for OpenAI to another server.
func TestOpenAIKeyNeverInErrorsOrLogs(t *testing.T) {
	const envKey = "sk-env-key-for-openai-only"
	t.Setenv("OPENAI_API_KEY", envKey)
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	echo := func(code int) func(int, http.ResponseWriter) bool {
		return func(_ int, w http.ResponseWriter) bool {
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"error":{"message":"key %s rejected"}}`, testKey)
			return true
		}
	}
	cases := map[string]*fakeOpenAI{
		"401 echoing the key": {fail: echo(http.StatusUnauthorized)},
		"500 echoing the key": {fail: echo(http.StatusInternalServerError)},
		"dimension mismatch":  {dim: 3},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			var logs strings.Builder
			logger := slog.New(slog.NewJSONHandler(&logs, nil))
			o := newTestOpenAI(t, f, OpenAIConfig{MaxRetries: 1})
			_, err := o.EmbedDocuments(context.Background(), inputs(2))
			if err == nil {
				t.Fatal("expected an error")
			}
			logger.Error("embedding failed", "err", err)
			slog.New(slog.NewTextHandler(&logs, nil)).Error("embedding failed", "err", err)
			for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err), logs.String()} {
				if strings.Contains(s, testKey) || strings.Contains(s, envKey) {
					t.Errorf("a key leaks: %s", s)
				}
			}
			if f.callCount() == 0 {
				t.Error("the request did not reach the configured server")
			}
		})
	}
}
