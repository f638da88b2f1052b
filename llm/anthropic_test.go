package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

func newTestAnthropic(t *testing.T, baseURL string, mod func(*AnthropicConfig)) *Anthropic {
	t.Helper()
	cfg := AnthropicConfig{BaseURL: baseURL, Model: "claude-3-5-haiku-latest", APIKey: testKey}
	if mod != nil {
		mod(&cfg)
	}
	p, err := NewAnthropic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.backoff = func(int) time.Duration { return time.Millisecond }
	return p
}

func TestAnthropicStreamsAndSendsTheRequest(t *testing.T) {
	t.Parallel()
	temp := 0.0
	tests := []struct {
		name        string
		cfg         func(*AnthropicConfig)
		baseSuffix  string
		req         Request
		wantVersion string
		wantMax     float64
		wantSystem  any
		wantMsgs    []map[string]any
		wantTemp    any
	}{
		{
			name:        "defaults",
			req:         testRequest,
			wantVersion: "2023-06-01",
			wantMax:     1024,
			wantSystem:  []any{map[string]any{"type": "text", "text": testRequest.System}},
			wantMsgs: []map[string]any{
				{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Hi"}}},
				{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Hello!"}}},
				{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Where are chunks stored?"}}},
			},
		},
		{
			name:        "base URL with /v1, version, max tokens, temperature, question alone",
			cfg:         func(c *AnthropicConfig) { c.Version = "2024-01-01"; c.MaxTokens = 512; c.Temperature = &temp },
			baseSuffix:  "/v1",
			req:         Request{Question: "Where?", MaxTokens: 100},
			wantVersion: "2024-01-01",
			wantMax:     100,
			wantMsgs:    []map[string]any{{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Where?"}}}},
			wantTemp:    0.0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				anthropicStream(w, "Hi", " there", "!")
			})
			p := newTestAnthropic(t, srv.URL+tc.baseSuffix, tc.cfg)
			var c collector
			resp, err := p.Stream(testContext(t), tc.req, c.add)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.deltas, []string{"Hi", " there", "!"}) || resp.Text != "Hi there!" {
				t.Errorf("deltas %q, Text %q", c.deltas, resp.Text)
			}
			if resp.Usage != (Usage{PromptTokens: 25, CompletionTokens: 15}) {
				t.Errorf("Usage = %+v", resp.Usage)
			}
			if resp.Model != "claude-3-5-haiku-20241022" {
				t.Errorf("Model = %q", resp.Model)
			}
			reqs := srv.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			got := reqs[0]
			if got.Method != http.MethodPost || got.Path != "/v1/messages" {
				t.Errorf("request %s %s", got.Method, got.Path)
			}
			if k := got.Header.Get("X-Api-Key"); k != testKey {
				t.Errorf("x-api-key = %q", k)
			}
			if a := got.Header.Get("Authorization"); a != "" {
				t.Errorf("Authorization = %q, want none", a)
			}
			if v := got.Header.Get("Anthropic-Version"); v != tc.wantVersion {
				t.Errorf("anthropic-version = %q, want %q", v, tc.wantVersion)
			}
			b := got.Body
			if b["model"] != "claude-3-5-haiku-latest" || b["stream"] != true || b["max_tokens"] != tc.wantMax {
				t.Errorf("model/stream/max_tokens = %v/%v/%v", b["model"], b["stream"], b["max_tokens"])
			}
			if !reflect.DeepEqual(b["system"], tc.wantSystem) {
				t.Errorf("system = %#v, want %#v", b["system"], tc.wantSystem)
			}
			var msgs []map[string]any
			raw, _ := json.Marshal(b["messages"])
			_ = json.Unmarshal(raw, &msgs)
			if !reflect.DeepEqual(msgs, tc.wantMsgs) {
				t.Errorf("messages = %v\nwant %v", msgs, tc.wantMsgs)
			}
			if b["temperature"] != tc.wantTemp {
				t.Errorf("temperature = %v, want %v", b["temperature"], tc.wantTemp)
			}
		})
	}
}

func TestAnthropicRetriesBeforeTheFirstToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		fail     func(w http.ResponseWriter)
		failures int
	}{
		{"429 rate limit", func(w http.ResponseWriter) {
			jsonError(w, 429, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}`)
		}, 2},
		{"503", func(w http.ResponseWriter) {
			jsonError(w, 503, `{"type":"error","error":{"type":"api_error","message":"Service unavailable"}}`)
		}, 1},
		{"529 overloaded", func(w http.ResponseWriter) {
			jsonError(w, 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		}, 1},
		{"overloaded event before any text", func(w http.ResponseWriter) {
			s := startSSE(w)
			anthropicStart(s, 25)
			s.event("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, func(n int, w http.ResponseWriter, _ *http.Request) {
				if n <= tc.failures {
					tc.fail(w)
					return
				}
				anthropicStream(w, "ok")
			})
			p := newTestAnthropic(t, srv.URL, nil)
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

func TestAnthropicRetryBudgetCoversStreamFailures(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		s := startSSE(w)
		anthropicStart(s, 25)
		s.event("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	})
	p := newTestAnthropic(t, srv.URL, func(c *AnthropicConfig) { c.MaxRetries = 2 })
	_, err := p.Stream(testContext(t), testRequest, (&collector{}).add)
	var pe *ProviderError
	if !errors.As(err, &pe) || !errors.Is(err, ErrUnavailable) || pe.Type != "overloaded_error" {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.requests()); n != 3 {
		t.Errorf("%d requests, want 3 (1 + 2 retries)", n)
	}
}

func TestAnthropicNoRetryAfterTheFirstToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fail func(s sse)
	}{
		{"overloaded event", func(s sse) {
			s.event("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		}},
		{"connection dropped", func(sse) { panic(http.ErrAbortHandler) }},
		{"no message_stop", func(sse) {}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				s := startSSE(w)
				anthropicStart(s, 25)
				anthropicDelta(s, "Hel")
				anthropicDelta(s, "lo")
				tc.fail(s)
			})
			p := newTestAnthropic(t, srv.URL, nil)
			var c collector
			resp, err := p.Stream(testContext(t), testRequest, c.add)
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			if n := len(srv.requests()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
			if !reflect.DeepEqual(c.deltas, []string{"Hel", "lo"}) || resp.Text != "Hello" {
				t.Errorf("deltas %q, Text %q", c.deltas, resp.Text)
			}
			assertNoKey(t, err)
		})
	}
}

func TestAnthropicCancellationReachesTheServer(t *testing.T) {
	t.Parallel()
	serverSawCancel := make(chan struct{})
	srv := newFakeServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		anthropicStart(s, 25)
		anthropicDelta(s, "first")
		select {
		case <-r.Context().Done():
			close(serverSawCancel)
		case <-time.After(10 * time.Second):
		}
	})
	p := newTestAnthropic(t, srv.URL, nil)
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	resp, err := p.Stream(ctx, testRequest, func(string) error { cancel(); return nil })
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

func TestAnthropicErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		status    int
		body      string
		failure   Failure
		wantInMsg string
		requests  int
	}{
		{"401 echoing the key", 401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + testKey + `"}}`, FailureCredentials, "invalid x-api-key [redacted]", 1},
		{"403", 403, `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`, FailureCredentials, "does not have permission", 1},
		{"404 model", 404, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}}`, FailureRejected, "model: claude-9", 1},
		{"400 is our bug", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: at least one message is required"}}`, FailureRejected, "at least one message is required", 1},
		{"413", 413, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`, FailureRejected, "maximum allowed number of bytes", 1},
		{"500 after retries", 500, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, FailureOutage, "Internal server error", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				jsonError(w, tc.status, tc.body)
			})
			p := newTestAnthropic(t, srv.URL, nil)
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

func TestAnthropicInvalidRequestEventIsNotUnavailable(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		s := startSSE(w)
		s.event("error", `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`)
	})
	p := newTestAnthropic(t, srv.URL, nil)
	_, err := p.Stream(testContext(t), testRequest, (&collector{}).add)
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Failure != FailureRejected || errors.Is(err, ErrUnavailable) ||
		pe.Detail != "prompt is too long" || pe.Reason() != "invalid_request_error" {
		t.Fatalf("err = %v, want a rejected request quoting the provider", err)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestAnthropicIgnoresSDKEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	srv := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { anthropicStream(w, "ok") })
	p := newTestAnthropic(t, srv.URL, nil)
	if _, err := p.Stream(testContext(t), testRequest, (&collector{}).add); err != nil {
		t.Fatal(err)
	}
	if k := srv.requests()[0].Header.Get("X-Api-Key"); k != testKey {
		t.Errorf("x-api-key = %q", k)
	}
}

func TestNewAnthropicValidates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  AnthropicConfig
		want string
	}{
		{"no model", AnthropicConfig{APIKey: "k"}, "Model is required"},
		{"no key for api.anthropic.com", AnthropicConfig{Model: "claude-3-5-haiku-latest"}, "APIKey is required"},
		{"bad URL", AnthropicConfig{Model: "m", APIKey: "k", BaseURL: "ftp://x"}, "must be an http:// or https:// URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewAnthropic(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	p, err := NewAnthropic(AnthropicConfig{Model: "claude-3-5-haiku-latest", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "anthropic" || p.Model() != "claude-3-5-haiku-latest" || p.maxTokens != DefaultAnthropicMaxTokens {
		t.Errorf("defaults: %s %s %d", p.Name(), p.Model(), p.maxTokens)
	}
}
