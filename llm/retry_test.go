package llm

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestLongRetryAfterFailsFast(t *testing.T) {
	tests := []struct {
		name    string
		header  string
		value   string
		timeout time.Duration
	}{
		{"an hour", "Retry-After", "3600", 0},
		{"an HTTP date far ahead", "Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), 0},
		{"beyond the generation's timeout", "Retry-After-Ms", "3000", 2 * time.Second},
	}
	providers := []struct {
		name string
		body string
		new  func(t *testing.T, url string, timeout time.Duration) Provider
	}{
		{"openai", `{"error":{"message":"Rate limit reached","type":"requests"}}`, func(t *testing.T, url string, timeout time.Duration) Provider {
			return newTestOpenAI(t, url, func(c *OpenAIConfig) { c.Timeout = timeout })
		}},
		{"anthropic", `{"type":"error","error":{"type":"rate_limit_error","message":"Rate limit reached"}}`, func(t *testing.T, url string, timeout time.Duration) Provider {
			return newTestAnthropic(t, url, func(c *AnthropicConfig) { c.Timeout = timeout })
		}},
	}
	for _, pv := range providers {
		for _, tc := range tests {
			t.Run(pv.name+"/"+tc.name, func(t *testing.T) {
				srv := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set(tc.header, tc.value)
					w.WriteHeader(http.StatusTooManyRequests)
					_, _ = w.Write([]byte(pv.body))
				})
				start := time.Now()
				_, err := pv.new(t, srv.URL, tc.timeout).Stream(testContext(t), testRequest, (&collector{}).add)
				var pe *ProviderError
				if !errors.As(err, &pe) || pe.StatusCode != http.StatusTooManyRequests || !errors.Is(err, ErrUnavailable) {
					t.Fatalf("err = %v, want the 429 as ErrUnavailable", err)
				}
				if n := len(srv.requests()); n != 1 {
					t.Errorf("%d requests, want 1", n)
				}
				if d := time.Since(start); d > time.Second {
					t.Errorf("took %s: it waited for Retry-After", d)
				}
			})
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{"Retry-After-Ms": {"250"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second, true},
		{http.Header{"Retry-After": {"1e308"}}, 1e6 * time.Second, true},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{}, 0, false},
	}
	for _, tc := range tests {
		got, ok := retryAfter(tc.h)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%v) = %s, %v; want %s, %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}
