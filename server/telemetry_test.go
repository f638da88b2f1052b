package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/canonkb/canon/auth"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
	"github.com/canonkb/canon/internal/syncbuf"
	"github.com/canonkb/canon/llm"
	"github.com/canonkb/canon/server"
	"github.com/canonkb/canon/telemetry"
)

// TestMetricsAndRequestLog: a search, a chat answer, a refusal and an ingest show
// in /metrics (requests by RPC and code, stage latencies, refusals, chat-log rows,
// ingest counts, pool statistics, build info) and each request is one JSON log
// line with its request id, RPC, project, code and duration; the API key sent
// in the Authorization header and the configured key never appear in the log.
func TestMetricsAndRequestLog(t *testing.T) {
	t.Parallel()
	const llmKey = "sk-test-llm-key-0123456789"
	var logs syncbuf.Buffer
	log, err := telemetry.NewLogger("json", &logs, slog.LevelDebug, llmKey)
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(t, llm.NewExtractive(), func(d *server.Deps) { d.Logger = log })
	// A key that is sent is checked even with KB_AUTH=off: a real one.
	bearer, _ := newKey(t, s.deps.Pool, "editor", []string{"platform", "ops-test"})
	srv := httptest.NewServer(server.Handler(s.deps))
	defer srv.Close()
	withKey := connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", "Bearer "+bearer)
			req.Header().Set(telemetry.RequestIDHeader, "test-req-1")
			return next(ctx, req)
		}
	}))
	ctx := context.Background()
	platform := &canonv1.Filters{ProjectKeys: []string{"platform"}}
	if _, err := canonv1connect.NewSearchServiceClient(srv.Client(), srv.URL, withKey).Search(ctx,
		connect.NewRequest(&canonv1.SearchRequest{Query: "what cache layer did Dana standardise on?", Filters: platform})); err != nil {
		t.Fatal(err)
	}
	chatc := canonv1connect.NewChatServiceClient(srv.Client(), srv.URL, withKey)
	for _, q := range []string{"how do deployment rollbacks work?", "what is the airspeed of an unladen swallow?"} {
		if _, err := chatc.Chat(ctx, connect.NewRequest(&canonv1.ChatRequest{Question: q, Filters: platform})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := canonv1connect.NewIngestServiceClient(srv.Client(), srv.URL, withKey).Ingest(ctx, connect.NewRequest(&canonv1.IngestRequest{
		ProjectKey: "ops-test", Files: []*canonv1.IngestFile{{Path: "note.md", Content: []byte("---\ntitle: Note\n---\n# Note\n\nPagers rotate weekly.\n")}},
	})); err != nil {
		t.Fatal(err)
	}
	_, err = canonv1connect.NewSearchServiceClient(srv.Client(), srv.URL, withKey).Search(ctx,
		connect.NewRequest(&canonv1.SearchRequest{Query: " ", Filters: platform}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("blank query: %v", err)
	}
	// A plain HTTP route is named by its pattern.
	docReq, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/doc/platform/dec-cache-v2", nil)
	docReq.Header.Set("Authorization", "Bearer "+bearer)
	docRes, err := srv.Client().Do(docReq)
	if err != nil {
		t.Fatal(err)
	}
	docRes.Body.Close()
	closeCtx, cancel := context.WithTimeout(ctx, 10e9)
	defer cancel()
	s.chatLog.Close(closeCtx) // the rows are written before they are counted

	scrape := func() string {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/metrics", nil)
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return string(body)
	}
	// A response with a length can be read whole before its handler returns and
	// the request is counted: wait (bounded) for the last request's count.
	const lastCounted = `canon_requests_total{code="ok",route="GET /api/doc/{project}/{slug}"} 1`
	metrics := scrape()
	for i := 0; i < 50 && !strings.Contains(metrics, lastCounted); i++ {
		time.Sleep(20 * time.Millisecond)
		metrics = scrape()
	}
	for _, want := range []string{
		`canon_requests_total{code="ok",route="/canon.v1.SearchService/Search"} 1`,
		`canon_requests_total{code="invalid_argument",route="/canon.v1.SearchService/Search"} 1`,
		`canon_requests_total{code="ok",route="/canon.v1.ChatService/Chat"} 2`,
		`canon_requests_total{code="ok",route="GET /api/doc/{project}/{slug}"} 1`,
		`canon_request_duration_seconds_count{code="ok",route="/canon.v1.IngestService/Ingest"} 1`,
		`canon_stage_duration_seconds_count{stage="embed"}`,
		`canon_stage_duration_seconds_count{stage="ranking_statement"}`,
		`canon_stage_duration_seconds_count{stage="pass1"}`,
		`canon_stage_duration_seconds_count{stage="llm_first_token"} 1`,
		`canon_stage_duration_seconds_count{stage="llm_total"} 1`,
		`canon_stage_duration_seconds_count{stage="retrieval"}`,
		`canon_chat_refusals_total{reason="no_relevant_context"} 1`,
		`canon_chat_log_rows_written_total 2`,
		`canon_chat_log_rows_lost_total{reason="insert_failed"} 0`,
		`canon_ingest_documents_total{result="created"} 1`,
		`canon_ingest_chunks_total 1`,
		`canon_db_pool_max_connections`,
		`canon_build_info{goversion=`,
		`process_resident_memory_bytes`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !strings.Contains(metrics, `canon_stage_duration_seconds_count{stage="graph_step"}`) {
		t.Logf("no graph step ran (no relevant seed)")
	}

	out := logs.String()
	for _, secret := range []string{llmKey, bearer} {
		if strings.Contains(out, secret) {
			t.Errorf("the log carries the secret %q", secret)
		}
	}
	var found bool
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if rec["msg"] == "request" && rec["route"] == "/canon.v1.SearchService/Search" && rec["code"] == "ok" {
			found = true
			if rec["request_id"] != "test-req-1" || rec["project"] != "platform" || rec["duration_ms"] == nil {
				t.Errorf("search log line = %v", rec)
			}
		}
	}
	if !found {
		t.Errorf("no request line for the search in:\n%s", out)
	}
	// A log line that would carry the configured key has it redacted.
	log.Error("provider said", "err", io.ErrUnexpectedEOF, "detail", "key "+llmKey+" rejected")
	if strings.Contains(logs.String(), llmKey) {
		t.Error("a value carrying the LLM key was logged as is")
	}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get(telemetry.RequestIDHeader) == "" {
		t.Errorf("healthz: no %s header", telemetry.RequestIDHeader)
	}
}

// A request the guard refuses before routing (no key, a revoked one) is logged
// and counted under its route's pattern, never its path, rather than unmatched.
func TestRefusedRequestsKeepTheirRoute(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	s := newStack(t, llm.NewExtractive(), func(d *server.Deps) {
		d.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		d.Auth = auth.Config{Required: true}
	})
	srv := httptest.NewServer(server.Handler(s.deps))
	defer srv.Close()
	for _, path := range []string{"/api/doc/platform/dec-cache-v2", "/api/doc/platform/other"} {
		res, err := srv.Client().Get(srv.URL + path) //nolint:noctx // a test's request
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s without a key: status %d", path, res.StatusCode)
		}
	}
	waitMetric(t, srv.URL, `canon_requests_total{code="unauthenticated",route="GET /api/doc/{project}/{slug}"} 2`)
	if want := `route="GET /api/doc/{project}/{slug}" project="" code=unauthenticated`; !strings.Contains(logs.String(), want) {
		t.Errorf("the request log lacks %s:\n%s", want, logs.String())
	}
}
