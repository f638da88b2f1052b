package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func newTestOpenAI(t *testing.T, baseURL string, mod func(*OpenAIConfig)) *OpenAI {
	t.Helper()
	cfg := OpenAIConfig{BaseURL: baseURL + "/v1", Model: "gpt-4o-mini", APIKey: testKey}
	if mod != nil {
		mod(&cfg)
	}
	p, err := NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.backoff = func(int) time.Duration { return time.Millisecond }
	return p
}

func TestOpenAIStreamsAndSendsTheRequest(t *testing.T) {
	t.Parallel()
	temp := 0.2
	tests := []struct {
		name       string
		cfg        func(*OpenAIConfig)
		req        Request
		wantMsgs   []map[string]any
		wantAuth   string
		wantFields map[string]any // top-level body fields that must be present
		absent     []string       // top-level body fields that must be absent
	}{
		{
			name: "system then conversation",
			req:  testRequest,
			wantMsgs: []map[string]any{
				{"role": "system", "content": testRequest.System},
				{"role": "user", "content": "Hi"},
				{"role": "assistant", "content": "Hello!"},
				{"role": "user", "content": "Where are chunks stored?"},
			},
			wantAuth: "Bearer " + testKey,
			absent:   []string{"temperature", "max_tokens", "max_completion_tokens"},
		},
		{
			name:     "question alone, no key, temperature and max tokens",
			cfg:      func(c *OpenAIConfig) { c.APIKey = ""; c.Temperature = &temp; c.MaxTokens = 300 },
			req:      Request{Question: "Where are chunks stored?", MaxTokens: 200},
			wantMsgs: []map[string]any{{"role": "user", "content": "Where are chunks stored?"}},
			wantAuth: "",
			// A compatible server gets max_tokens; the Request's cap wins.
			wantFields: map[string]any{"temperature": 0.2, "max_tokens": float64(200)},
			absent:     []string{"max_completion_tokens"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
				openAIStream(w, "Hel", "lo", " world")
			})
			p := newTestOpenAI(t, srv.URL, tc.cfg)
			var c collector
			resp, err := p.Stream(testContext(t), tc.req, c.add)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.deltas; !reflect.DeepEqual(got, []string{"Hel", "lo", " world"}) {
				t.Errorf("deltas = %q", got)
			}
			if resp.Text != "Hello world" || resp.Text != c.joined() {
				t.Errorf("Text = %q, deltas joined = %q", resp.Text, c.joined())
			}
			if resp.Usage != (Usage{PromptTokens: 42, CompletionTokens: 7}) {
				t.Errorf("Usage = %+v", resp.Usage)
			}
			if resp.Model != "gpt-4o-mini-2024-07-18" {
				t.Errorf("Model = %q", resp.Model)
			}

			reqs := srv.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			got := reqs[0]
			if got.Method != http.MethodPost || got.Path != "/v1/chat/completions" {
				t.Errorf("request %s %s", got.Method, got.Path)
			}
			if a := got.Header.Get("Authorization"); a != tc.wantAuth {
				t.Errorf("Authorization = %q, want %q", a, tc.wantAuth)
			}
			if ct := got.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type = %q", ct)
			}
			b := got.Body
			if b["model"] != "gpt-4o-mini" || b["stream"] != true {
				t.Errorf("model/stream = %v/%v", b["model"], b["stream"])
			}
			if so, _ := b["stream_options"].(map[string]any); so["include_usage"] != true {
				t.Errorf("stream_options = %v", b["stream_options"])
			}
			var msgs []map[string]any
			raw, _ := json.Marshal(b["messages"])
			_ = json.Unmarshal(raw, &msgs)
			if !reflect.DeepEqual(msgs, tc.wantMsgs) {
				t.Errorf("messages = %v\nwant %v", msgs, tc.wantMsgs)
			}
			for k, v := range tc.wantFields {
				if b[k] != v {
					t.Errorf("%s = %v, want %v", k, b[k], v)
				}
			}
			for _, k := range tc.absent {
				if _, ok := b[k]; ok {
					t.Errorf("%s sent: %v", k, b[k])
				}
			}
		})
	}
}

func TestOpenAIOfficialAPIGetsMaxCompletionTokens(t *testing.T) {
	t.Parallel()
	p, err := NewOpenAI(OpenAIConfig{Model: "o4-mini", APIKey: testKey, MaxTokens: 500})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(p.params(Request{Question: "q"}))
	var b map[string]any
	_ = json.Unmarshal(raw, &b)
	if b["max_completion_tokens"] != float64(500) {
		t.Errorf("max_completion_tokens = %v", b["max_completion_tokens"])
	}
	if _, ok := b["max_tokens"]; ok {
		t.Errorf("max_tokens sent to api.openai.com")
	}
}

func TestOpenAIRetriesBeforeTheFirstToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		fail     func(w http.ResponseWriter)
		failures int
	}{
		{"429 rate limit", func(w http.ResponseWriter) {
			jsonError(w, 429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
		}, 2},
		{"503 unavailable", func(w http.ResponseWriter) {
			jsonError(w, 503, `{"error":{"message":"The server is overloaded","type":"server_error"}}`)
		}, 1},
		{"error frame before any text", func(w http.ResponseWriter) {
			s := startSSE(w)
			s.data(`{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`)
		}, 1},
		{"connection dropped before any text", func(w http.ResponseWriter) {
			s := startSSE(w)
			s.data(openAIRoleChunk())
			panic(http.ErrAbortHandler)
		}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n <= tc.failures {
					tc.fail(w)
					return
				}
				openAIStream(w, "ok")
			})
			p := newTestOpenAI(t, srv.URL, nil)
			var c collector
			resp, err := p.Stream(testContext(t), testRequest, c.add)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "ok" || c.joined() != "ok" {
				t.Errorf("Text %q, deltas %q", resp.Text, c.deltas)
			}
			if n := len(srv.requests()); n != tc.failures+1 {
				t.Errorf("%d requests, want %d", n, tc.failures+1)
			}
		})
	}
}

func TestOpenAIGivesUpAfterMaxRetries(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		jsonError(w, 429, `{"error":{"message":"Rate limit reached for gpt-4o-mini","type":"requests"}}`)
	})
	p := newTestOpenAI(t, srv.URL, func(c *OpenAIConfig) { c.MaxRetries = 3 })
	_, err := p.Stream(testContext(t), testRequest, (&collector{}).add)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != 429 || pe.Attempts != 4 {
		t.Fatalf("err = %#v", err)
	}
	if n := len(srv.requests()); n != 4 {
		t.Errorf("%d requests, want 4 (1 + 3 retries)", n)
	}
	if !strings.Contains(err.Error(), "Rate limit reached for gpt-4o-mini") {
		t.Errorf("message lacks the server's: %v", err)
	}
	assertNoKey(t, err)
}

func TestOpenAINoRetryAfterTheFirstToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fail func(s sse)
	}{
		{"connection dropped", func(sse) { panic(http.ErrAbortHandler) }},
		{"error frame", func(s sse) {
			s.data(`{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`)
		}},
		{"stream ends without finishing", func(sse) {}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				s := startSSE(w)
				s.data(openAIRoleChunk())
				s.data(openAIContentChunk("Hel"))
				s.data(openAIContentChunk("lo"))
				tc.fail(s)
			})
			p := newTestOpenAI(t, srv.URL, nil)
			var c collector
			resp, err := p.Stream(testContext(t), testRequest, c.add)
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			if n := len(srv.requests()); n != 1 {
				t.Errorf("%d requests, want 1: text was emitted, nothing may be replayed", n)
			}
			if !reflect.DeepEqual(c.deltas, []string{"Hel", "lo"}) || resp.Text != "Hello" {
				t.Errorf("deltas %q, Text %q", c.deltas, resp.Text)
			}
			assertNoKey(t, err)
		})
	}
}

func TestOpenAICancellationReachesTheServer(t *testing.T) {
	t.Parallel()
	serverSawCancel := make(chan struct{})
	srv := newFakeServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.data(openAIRoleChunk())
		s.data(openAIContentChunk("first"))
		select {
		case <-r.Context().Done():
			close(serverSawCancel)
		case <-time.After(10 * time.Second):
		}
	})
	p := newTestOpenAI(t, srv.URL, nil)
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	resp, err := p.Stream(ctx, testRequest, func(d string) error {
		cancel() // the client goes away mid-stream
		return nil
	})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want context.Canceled and not ErrUnavailable", err)
	}
	if resp.Text != "first" {
		t.Errorf("Text = %q", resp.Text)
	}
	select {
	case <-serverSawCancel:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the request context end")
	}
}

func TestOpenAICallbackErrorStopsTheStream(t *testing.T) {
	t.Parallel()
	serverSawCancel := make(chan struct{})
	srv := newFakeServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.data(openAIContentChunk("first"))
		select {
		case <-r.Context().Done():
			close(serverSawCancel)
		case <-time.After(10 * time.Second):
		}
	})
	p := newTestOpenAI(t, srv.URL, nil)
	errClientGone := errors.New("client gone")
	_, err := p.Stream(testContext(t), testRequest, func(string) error { return errClientGone })
	if err != errClientGone { //nolint:errorlint // the contract is the callback's error itself, unwrapped
		t.Fatalf("err = %v, want the callback's error as is", err)
	}
	select {
	case <-serverSawCancel:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request was not closed")
	}
}

func TestOpenAIErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		status    int
		body      string
		failure   Failure
		wantInMsg string
		requests  int
	}{
		{"401 echoing the key", 401, `{"error":{"message":"Incorrect API key provided: ` + testKey + `. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}`, FailureCredentials, "check the API key", 1},
		{"403", 403, `{"error":{"message":"You are not allowed to use this model","type":"invalid_request_error"}}`, FailureCredentials, "not allowed to use this model", 1},
		{"404 model (Ollama)", 404, `{"error":{"message":"model \"llama3\" not found, try pulling it first","type":"api_error"}}`, FailureRejected, "try pulling it first", 1},
		{"400 is a rejected request, not unavailability", 400, `{"error":{"message":"Invalid value for 'messages[0].role'","type":"invalid_request_error","param":"messages"}}`, FailureRejected, "Invalid value for 'messages[0].role'", 1},
		{"400 in vLLM's format", 400, `{"object":"error","message":"This model's maximum context length is 4096 tokens","type":"BadRequestError","param":null,"code":400}`, FailureRejected, "maximum context length is 4096", 1},
		{"429 out of quota", 429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`, FailureRejected, "check your plan and billing", 3},
		{"500 after retries", 500, `{"error":{"message":"Internal error","type":"server_error"}}`, FailureOutage, "HTTP 500", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				jsonError(w, tc.status, tc.body)
			})
			p := newTestOpenAI(t, srv.URL, nil)
			_, err := p.Stream(testContext(t), testRequest, (&collector{}).add)
			if err == nil {
				t.Fatal("no error")
			}
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Failure != tc.failure {
				t.Errorf("err = %#v, want a ProviderError with failure %v", err, tc.failure)
			}
			unavailable := tc.failure == FailureOutage || tc.failure == FailureRateLimited
			if got := errors.Is(err, ErrUnavailable); got != unavailable {
				t.Errorf("errors.Is(err, ErrUnavailable) = %v, want %v (%v)", got, unavailable, err)
			}
			if !strings.Contains(err.Error(), tc.wantInMsg) {
				t.Errorf("error %q lacks %q", err, tc.wantInMsg)
			}
			if n := len(srv.requests()); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			assertNoKey(t, err)
		})
	}
}

func TestOpenAIConnectionFailure(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, func(int, http.ResponseWriter, *http.Request) {})
	url := srv.URL
	srv.Close()
	p := newTestOpenAI(t, url, func(c *OpenAIConfig) { c.MaxRetries = 1 })
	_, err := p.Stream(testContext(t), testRequest, (&collector{}).add)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "request failed") {
		t.Errorf("err = %v", err)
	}
	assertNoKey(t, err)
}

func TestOpenAITimeout(t *testing.T) {
	var calls atomic.Int32
	srv := newFakeServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		s := startSSE(w)
		s.data(openAIContentChunk("slow"))
		<-r.Context().Done()
	})
	p := newTestOpenAI(t, srv.URL, func(c *OpenAIConfig) { c.Timeout = 200 * time.Millisecond })
	start := time.Now()
	resp, err := p.Stream(testContext(t), testRequest, (&collector{}).add)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrUnavailable and DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
	if resp.Text != "slow" {
		t.Errorf("Text = %q", resp.Text)
	}
}

func TestNewOpenAIValidates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  OpenAIConfig
		want string
	}{
		{"no model", OpenAIConfig{APIKey: "k"}, "Model is required"},
		{"no key for api.openai.com", OpenAIConfig{Model: "gpt-4o-mini"}, "APIKey is required"},
		{"bad URL", OpenAIConfig{Model: "m", BaseURL: "localhost:11434"}, "must be an http:// or https:// URL"},
		{"negative max tokens", OpenAIConfig{Model: "m", BaseURL: "http://localhost:11434/v1", MaxTokens: -1}, "MaxTokens"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewOpenAI(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	p, err := NewOpenAI(OpenAIConfig{Model: "llama3.1:8b", BaseURL: "http://localhost:11434/v1"})
	if err != nil {
		t.Fatalf("a local server needs no key: %v", err)
	}
	if p.Name() != "openai" || p.Model() != "llama3.1:8b" || p.maxRetries != DefaultMaxRetries || p.timeout != DefaultTimeout {
		t.Errorf("defaults: %s %s %d %s", p.Name(), p.Model(), p.maxRetries, p.timeout)
	}
}

func TestOpenAIIgnoresSDKEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env-must-not-be-sent")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	srv := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { openAIStream(w, "ok") })
	p := newTestOpenAI(t, srv.URL, func(c *OpenAIConfig) { c.APIKey = "" })
	if _, err := p.Stream(testContext(t), testRequest, (&collector{}).add); err != nil {
		t.Fatal(err)
	}
	if a := srv.requests()[0].Header.Get("Authorization"); a != "" {
		t.Errorf("Authorization = %q: the SDK's OPENAI_API_KEY leaked into the request", a)
	}
}
