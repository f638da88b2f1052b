package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/canonkb/canon/llm"
	"github.com/canonkb/canon/server"
)

// waitMetric scrapes /metrics until it holds line (a request is counted when
// its handler returns, which may be after the client read the last byte).
func waitMetric(t *testing.T, url, line string) {
	t.Helper()
	var metrics string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if metrics = scrape(t, url); strings.Contains(metrics, line) {
			return
		}
	}
	t.Errorf("/metrics lacks %s:\n%s", line, grepLines(metrics, "canon_requests_total"))
}

// TestWebChatOutcomeIsTheRequestsCode: a web chat (POST /api/chat) that fails
// once streaming is logged and counted with the failure's Connect code, as
// /api/kb/chat and the RPCs are; one the client stops is canceled.
func TestWebChatOutcomeIsTheRequestsCode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		provider func(t *testing.T) llm.Provider
		stop     bool // the client leaves after the first words
		code     string
	}{
		{"model refuses the key", func(t *testing.T) llm.Provider {
			return openAIProvider(t, newFakeOpenAI(t, &fakeOpenAI{status: http.StatusUnauthorized}).URL)
		}, false, "unavailable"},
		{"model overloaded", func(t *testing.T) llm.Provider {
			return openAIProvider(t, newFakeOpenAI(t, &fakeOpenAI{status: http.StatusServiceUnavailable}).URL)
		}, false, "unavailable"},
		{"client stops", func(*testing.T) llm.Provider { return &slowProvider{tick: 10 * time.Millisecond} }, true, "canceled"},
		{"answered", func(*testing.T) llm.Provider { return llm.NewExtractive() }, false, "ok"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var logs lockedBuffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			s := newStack(t, c.provider(t), func(d *server.Deps) { d.Logger = log })
			srv := httptest.NewServer(server.Handler(s.deps))
			defer srv.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res := postUIChat(ctx, t, srv.URL, useChatBody("how do deployment rollbacks work?"))
			chunks, _ := readUIStream(t, res.Body, func(ch uiChunk) bool { return !c.stop || ch.Type != "text-delta" })
			if c.stop {
				cancel()
			}
			res.Body.Close()
			if len(chunks) == 0 || res.StatusCode != http.StatusOK {
				t.Fatalf("status %d, chunks %s", res.StatusCode, kinds(chunks))
			}
			waitMetric(t, srv.URL, `canon_requests_total{code="`+c.code+`",route="POST /api/chat"} 1`)
			if want := `route="POST /api/chat" project=platform code=` + c.code; !strings.Contains(logs.String(), want) {
				t.Errorf("the request log lacks %s:\n%s", want, logs.String())
			}
		})
	}
}
