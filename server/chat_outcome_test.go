package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
	"github.com/canonkb/canon/internal/mcptest"
	"github.com/canonkb/canon/internal/syncbuf"
	"github.com/canonkb/canon/llm"
	"github.com/canonkb/canon/mcpserver"
	"github.com/canonkb/canon/server"
	"github.com/canonkb/canon/telemetry"
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
		}, false, "failed_precondition"},
		{"model overloaded", func(t *testing.T) llm.Provider {
			return openAIProvider(t, newFakeOpenAI(t, &fakeOpenAI{status: http.StatusServiceUnavailable}).URL)
		}, false, "unavailable"},
		{"client stops", func(*testing.T) llm.Provider { return &slowProvider{tick: 10 * time.Millisecond} }, true, "canceled"},
		{"answered", func(*testing.T) llm.Provider { return llm.NewExtractive() }, false, "ok"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var logs syncbuf.Buffer
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

// sampleOf is a counter's value, or a histogram's count, in m: the series of
// family name with the labels given as name, value pairs.
func sampleOf(t *testing.T, m *telemetry.Metrics, name string, labels ...string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			matched := 0
			for _, l := range s.GetLabel() {
				for i := 0; i+1 < len(labels); i += 2 {
					if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
						matched++
					}
				}
			}
			if matched != len(labels)/2 {
				continue
			}
			if h := s.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return s.GetCounter().GetValue()
		}
	}
	return 0
}

// TestEveryChatEntryPointCountsRefusals: a refused question counts once in
// canon_chat_refusals_total and once in the retrieval stage, whichever surface
// asked it: Connect Chat and ChatStream, /api/kb/chat, the web chat and MCP ask.
func TestEveryChatEntryPointCountsRefusals(t *testing.T) {
	t.Parallel()
	s := newStack(t, llm.NewExtractive(), nil)
	s.deps.MCP = mcpserver.New(mcpserver.Deps{Pool: s.deps.Pool, Search: s.deps.SearchService, Chat: s.deps.Chat}).HTTPHandler()
	srv := httptest.NewServer(server.Handler(s.deps))
	defer srv.Close()
	const question = "what is the best banana bread recipe?"
	ctx := context.Background()
	request := &canonv1.ChatRequest{Question: question, Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}}}
	chatc := canonv1connect.NewChatServiceClient(srv.Client(), srv.URL)
	var session *mcp.ClientSession
	cases := []struct {
		name string
		ask  func(t *testing.T)
	}{
		{"Chat", func(t *testing.T) {
			res, err := chatc.Chat(ctx, connect.NewRequest(request))
			if err != nil || res.Msg.GetRefusalReason() == "" {
				t.Fatalf("not refused: %v", err)
			}
		}},
		{"ChatStream", func(t *testing.T) {
			stream, err := chatc.ChatStream(ctx, connect.NewRequest(request))
			if err != nil {
				t.Fatal(err)
			}
			for stream.Receive() {
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
		}},
		{"POST /api/kb/chat", func(t *testing.T) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/api/kb/chat",
				strings.NewReader(`{"question":"`+question+`","project_key":"platform"}`))
			req.Header.Set("Content-Type", "application/json")
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if !strings.Contains(string(b), "no_relevant_context") {
				t.Fatalf("not refused: %s", b)
			}
		}},
		{"POST /api/chat", func(t *testing.T) {
			res := postUIChat(ctx, t, srv.URL, useChatBody(question))
			chunks, done := readUIStream(t, res.Body, nil)
			res.Body.Close()
			if !done || chunkCount(chunks, "data-refusal") != 1 {
				t.Fatalf("not refused: %s", kinds(chunks))
			}
		}},
		{"MCP ask", func(t *testing.T) {
			if session == nil {
				var err error
				session, err = mcp.NewClient(&mcp.Implementation{Name: "canon-test", Version: "1"}, nil).Connect(ctx,
					&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
				if err != nil {
					t.Fatal(err)
				}
			}
			out, text, isError := mcptest.Call(t, session, "ask", map[string]any{"question": question, "project": "platform"})
			if isError || out["refused"] != true {
				t.Fatalf("not refused: %v %s", out, text)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			refusals := sampleOf(t, s.metrics, "canon_chat_refusals_total", "reason", "no_relevant_context")
			retrievals := sampleOf(t, s.metrics, "canon_stage_duration_seconds", "stage", "retrieval")
			c.ask(t)
			// The count is taken when the turn ends, which a client may see first.
			var got float64
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if got = sampleOf(t, s.metrics, "canon_chat_refusals_total", "reason", "no_relevant_context"); got > refusals {
					break
				}
			}
			if got != refusals+1 {
				t.Errorf("canon_chat_refusals_total went from %v to %v, want one more", refusals, got)
			}
			if got := sampleOf(t, s.metrics, "canon_stage_duration_seconds", "stage", "retrieval"); got != retrievals+1 {
				t.Errorf("retrieval stage observations went from %v to %v, want one more", retrievals, got)
			}
		})
	}
	if session != nil {
		session.Close()
	}
}
