package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"
	"golang.org/x/net/http2"

	"github.com/canonkb/canon/chat"
	"github.com/canonkb/canon/chatlog"
	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
	"github.com/canonkb/canon/hierarchy"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/llm"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/search"
	"github.com/canonkb/canon/server"
	"github.com/canonkb/canon/telemetry"
)

// slowProvider streams deltas every tick, for ticks ticks (0: until cancelled).
type slowProvider struct {
	tick  time.Duration
	ticks int
}

func (p *slowProvider) Name() string  { return "slow" }
func (p *slowProvider) Model() string { return "slow-1" }
func (p *slowProvider) Stream(ctx context.Context, _ llm.Request, onDelta func(string) error) (llm.Response, error) {
	t := time.NewTicker(p.tick)
	defer t.Stop()
	var text string
	for i := 0; p.ticks == 0 || i < p.ticks; i++ {
		select {
		case <-ctx.Done():
			return llm.Response{}, ctx.Err()
		case <-t.C:
		}
		d := "Rollbacks redeploy the previous release [1]. "
		text += d
		if onDelta != nil {
			if err := onDelta(d); err != nil {
				return llm.Response{}, err
			}
		}
	}
	return llm.Response{Text: text}, nil
}

// stack is canon's handlers over a fresh database with the handbook ingested.
type stack struct {
	deps    server.Deps
	chatLog *chatlog.Logger
	metrics *telemetry.Metrics
}

func newStack(t *testing.T, provider llm.Provider, deps func(*server.Deps)) *stack {
	t.Helper()
	return newStackOn(t, dbtest.FreshPool(t), provider, deps)
}

// newStackOn is newStack over a pool of the caller's (a database behind a proxy).
func newStackOn(t *testing.T, pool *pgxpool.Pool, provider llm.Provider, deps func(*server.Deps)) *stack {
	t.Helper()
	m := telemetry.NewMetrics("test", "")
	emb := telemetry.InstrumentEmbedder(embed.NewHash(384), nil, m.ObserveStage)
	in := ingest.New(pool, emb, markdown.Options{})
	files, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Ingest(context.Background(), files, ingest.Options{Project: "platform"}); err != nil {
		t.Fatal(err)
	}
	searcher := search.New(pool, emb, search.Config{Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed),
		Profile: domain.ProfileHashKeywordLed, Graph: search.DefaultGraphConfig(), Stages: m.ObserveStage})
	hcfg := hierarchy.DefaultConfig()
	hcfg.Stages = m.ObserveStage
	twoPass := hierarchy.New(pool, searcher, hcfg)
	prompt, _ := domain.ParsePrompt(domain.DefaultPromptTemplate())
	logger := chatlog.New(pool, 100, nil)
	t.Cleanup(func() { logger.Close(context.Background()) })
	m.Register(telemetry.PoolCollector(pool), telemetry.ChatLogCollector(logger.Stats))
	svc := chat.New(twoPass, telemetry.InstrumentProvider(provider, nil, m.ObserveStage), prompt, logger, chat.Config{
		Gate: domain.Gate{MinSimilarity: 0.26, MinKeywordCoverage: 0.70}, SupportThreshold: 0.5,
		Stages: m.ObserveStage, Refused: m.Refusal})
	s := &stack{chatLog: logger, metrics: m, deps: server.Deps{Pool: pool, Searcher: searcher, SearchService: twoPass,
		Ingester: in, Chat: svc, Metrics: m}}
	if deps != nil {
		deps(&s.deps)
	}
	return s
}

// serveOn starts a server.Server on a loopback port.
func serveOn(t *testing.T, d server.Deps) (*server.Server, string, chan error) {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.NewServer(ln.Addr().String(), d)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	return srv, "http://" + ln.Addr().String(), done
}

// streamChats opens n chat streams at once; each result is nil when the stream
// ended with its final answer.
func streamChats(url string, client *http.Client, n int) <-chan error {
	c := canonv1connect.NewChatServiceClient(client, url, connect.WithGRPC())
	out := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			stream, err := c.ChatStream(context.Background(), connect.NewRequest(&canonv1.ChatRequest{
				Question: "how do deployment rollbacks work?", Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}}}))
			if err != nil {
				out <- err
				return
			}
			final := false
			for stream.Receive() {
				if stream.Msg().GetFinal() != nil {
					final = true
				}
			}
			switch {
			case stream.Err() != nil:
				out <- stream.Err()
			case !final:
				out <- errors.New("stream ended without a final answer")
			default:
				out <- nil
			}
		})
	}
	go func() { wg.Wait(); close(out) }()
	return out
}

func waitInFlight(t *testing.T, srv *server.Server, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for srv.InFlight() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d streams in flight after 30s", srv.InFlight(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestShutdownLetsStreamsFinish: 16 gRPC streams over h2c in flight when the
// shutdown starts all end with their final answer; the server then refuses
// connections.
func TestShutdownLetsStreamsFinish(t *testing.T) {
	s := newStack(t, &slowProvider{tick: 20 * time.Millisecond, ticks: 15}, nil)
	srv, url, done := serveOn(t, s.deps)
	client := h2cClient()
	defer client.CloseIdleConnections()
	results := streamChats(url, client, 16)
	waitInFlight(t, srv, 16)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx, 5*time.Second); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	for err := range results {
		if err != nil {
			t.Errorf("stream: %v", err)
		}
	}
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url+"/healthz", nil)
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
		t.Error("the server still accepts connections after shutdown")
	}
}

// TestShutdownDeadlineCancelsStreams: streams that would never end are
// cancelled at the deadline, every handler returns, and closing the chat log
// right after (as canon serve does) neither panics nor blocks, even with
// handlers logging concurrently; no goroutine of the server is left behind.
func TestShutdownDeadlineCancelsStreams(t *testing.T) {
	s := newStack(t, &slowProvider{tick: 10 * time.Millisecond}, nil)
	before := goleak.IgnoreCurrent()
	srv, url, done := serveOn(t, s.deps)
	client := h2cClient()
	results := streamChats(url, client, 16)
	waitInFlight(t, srv, 16)
	// Handlers logging to the chat log while it closes: the original panic.
	stopLogging := make(chan struct{})
	var logging sync.WaitGroup
	for range 4 {
		logging.Go(func() {
			for {
				select {
				case <-stopLogging:
					return
				default:
					s.chatLog.Log(chatlog.Entry{Question: "in flight", Provider: "slow", Model: "slow-1"})
				}
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := srv.Shutdown(ctx, 10*time.Second)
	if err == nil {
		t.Fatal("shutdown reported success though streams had to be cancelled")
	}
	if srv.InFlight() != 0 {
		t.Fatalf("%d requests still in flight after shutdown", srv.InFlight())
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("shutdown took %s", elapsed)
	}
	closeCtx, cancelClose := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelClose()
	s.chatLog.Close(closeCtx)
	close(stopLogging)
	logging.Wait()
	n := 0
	for err := range results {
		n++
		if err == nil {
			t.Error("a stream that never ends got a final answer")
		}
	}
	if n != 16 {
		t.Errorf("%d streams ended, want 16", n)
	}
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	client.CloseIdleConnections()
	verifyNoLeaks(t, before)
}

// TestShutdownDeadlineEndsChatsWithAnError: a web chat stream, a ChatStream and
// a /api/kb/chat still answering at the shutdown deadline each end with an
// error the client can read (an error chunk then [DONE]; Unavailable; a 503),
// counted as unavailable, and each turn is in the chat log with that error.
func TestShutdownDeadlineEndsChatsWithAnError(t *testing.T) {
	s := newStack(t, &slowProvider{tick: 20 * time.Millisecond}, nil)
	srv, url, done := serveOn(t, s.deps)
	question := &canonv1.ChatRequest{Question: "how do deployment rollbacks work?",
		Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}}}
	ctx := context.Background()
	var wg sync.WaitGroup

	webClient := &http.Client{Transport: &http.Transport{}}
	defer webClient.CloseIdleConnections()
	var webChunks []uiChunk
	var webDone bool
	streaming := make(chan struct{})
	wg.Go(func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/api/chat",
			strings.NewReader(useChatBody(question.GetQuestion())))
		req.Header.Set("Content-Type", "application/json")
		res, err := webClient.Do(req)
		if err != nil {
			t.Error(err)
			close(streaming)
			return
		}
		defer res.Body.Close()
		first := true
		webChunks, webDone = readUIStream(t, res.Body, func(c uiChunk) bool {
			if c.Type == "text-delta" && first {
				first = false
				close(streaming)
			}
			return true
		})
		if first {
			close(streaming)
		}
	})

	grpcClient := h2cClient()
	defer grpcClient.CloseIdleConnections()
	var streamErr error
	wg.Go(func() {
		stream, err := canonv1connect.NewChatServiceClient(grpcClient, url, connect.WithGRPC()).ChatStream(ctx, connect.NewRequest(question))
		if err != nil {
			streamErr = err
			return
		}
		for stream.Receive() {
		}
		streamErr = stream.Err()
	})

	jsonClient := &http.Client{Transport: &http.Transport{}}
	defer jsonClient.CloseIdleConnections()
	var jsonStatus int
	var jsonBody struct{ Code, Message string }
	wg.Go(func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/api/kb/chat",
			strings.NewReader(`{"question":"how do deployment rollbacks work?","project_key":"platform"}`))
		req.Header.Set("Content-Type", "application/json")
		res, err := jsonClient.Do(req)
		if err != nil {
			t.Errorf("/api/kb/chat: %v", err)
			return
		}
		defer res.Body.Close()
		jsonStatus = res.StatusCode
		json.NewDecoder(res.Body).Decode(&jsonBody) //nolint:errcheck // checked below
	})

	<-streaming
	waitInFlight(t, srv, 3)
	shutdownCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx, 5*time.Second); err == nil {
		t.Error("shutdown reported success though requests had to be cancelled")
	}
	wg.Wait()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}

	const why = "the server is shutting down; ask again"
	if n := len(webChunks); n == 0 || !webDone || webChunks[n-1].Type != "error" || !strings.Contains(webChunks[n-1].ErrorText, why) {
		t.Errorf("web chat: [DONE] %v, chunks %s, want an error chunk saying %q then [DONE]", webDone, kinds(webChunks), why)
	}
	if connect.CodeOf(streamErr) != connect.CodeUnavailable || !strings.Contains(streamErr.Error(), why) {
		t.Errorf("ChatStream ended with %v, want Unavailable saying %q", streamErr, why)
	}
	if jsonStatus != http.StatusServiceUnavailable || jsonBody.Code != "unavailable" || !strings.Contains(jsonBody.Message, why) {
		t.Errorf("/api/kb/chat: %d %+v, want 503 unavailable saying %q", jsonStatus, jsonBody, why)
	}
	for _, route := range []string{"POST /api/chat", canonv1connect.ChatServiceChatStreamProcedure, "POST /api/kb/chat"} {
		if got := sampleOf(t, s.metrics, "canon_requests_total", "route", route, "code", "unavailable"); got != 1 {
			t.Errorf("%s counted %v times as unavailable, want 1", route, got)
		}
	}
	// The turns reach the chat log before it closes, as canon serve closes it.
	closeCtx, cancelClose := context.WithTimeout(ctx, 5*time.Second)
	defer cancelClose()
	s.chatLog.Close(closeCtx)
	var logged int
	if err := s.deps.Pool.QueryRow(ctx, `SELECT count(*) FROM chat_logs WHERE error LIKE '%' || $1 || '%'`, why).Scan(&logged); err != nil {
		t.Fatal(err)
	}
	if logged != 3 {
		t.Errorf("%d turns in the chat log with the shutdown's error, want 3", logged)
	}
}

// TestShutdownClosesConnectionsLeftWithNothingInFlight: an HTTP/2 connection
// still sending its preface when the shutdown begins never carries a request,
// yet http.Server.Shutdown alone waits its whole context for it
// (golang/go#81153); canon's closes it soon after nothing is in flight.
func TestShutdownClosesConnectionsLeftWithNothingInFlight(t *testing.T) {
	s := newStack(t, &slowProvider{tick: 10 * time.Millisecond, ticks: 1}, nil)
	srv, url, done := serveOn(t, s.deps)
	conn, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	preface := []byte(http2.ClientPreface)
	if _, err := conn.Write(preface[:10]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the server accepts the connection
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(ctx, 5*time.Second) }()
	time.Sleep(100 * time.Millisecond)
	_, _ = conn.Write(preface[10:])
	_ = http2.NewFramer(conn, conn).WriteSettings()
	if err := <-shut; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("shutdown took %s with nothing in flight", elapsed)
	}
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}
