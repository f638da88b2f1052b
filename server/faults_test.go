package server_test

// Faults under load: PostgreSQL going away and coming back, and language-model
// providers that hang or die mid-stream. Each test is bounded, on loopback, and
// ends by checking that no goroutine it started is left.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/llm"
	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/server"
)

// pgProxy forwards loopback TCP connections to PostgreSQL. down cuts every
// connection and closes the listener, which is what clients see of a database
// restart (resets, then refused connections); up listens on the same port again.
type pgProxy struct {
	target, addr string
	mu           sync.Mutex
	ln           net.Listener // nil while down
	conns        map[net.Conn]struct{}
	wg           sync.WaitGroup
}

// Its port is below the ephemeral range (dbtest.Port): while the proxy is down,
// a client connection could otherwise take the port it must listen on again.
func newPGProxy(t *testing.T, target string) *pgProxy {
	t.Helper()
	p := &pgProxy{target: target, conns: map[net.Conn]struct{}{}}
	if err := p.listen(fmt.Sprintf("127.0.0.1:%d", dbtest.Port(t, 3))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	return p
}

func (p *pgProxy) listen(addr string) error {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", addr)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.forward(c) })
		}
	})
	return nil
}

func (p *pgProxy) forward(client net.Conn) {
	server, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(context.Background(), "tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // went down while dialling
		p.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var copies sync.WaitGroup
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src) //nolint:errcheck // either side closing ends the connection
		client.Close()
		server.Close()
	}
	copies.Go(func() { pipe(server, client) })
	copies.Go(func() { pipe(client, server) })
	copies.Wait()
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// down closes the listener and every connection through it.
func (p *pgProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

func (p *pgProxy) up(t *testing.T) {
	t.Helper()
	if err := p.listen(p.addr); err != nil {
		t.Fatalf("proxy back up on %s: %v", p.addr, err)
	}
}

func (p *pgProxy) close() {
	p.down()
	p.wg.Wait()
}

// terminateBackends ends every server process of database name, as an
// administrator would with pg_terminate_backend.
func terminateBackends(t *testing.T, name string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
		FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, name).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// outcome is one request of a load: which RPC, its code (0 for success), when
// it started and how long it took.
type outcome struct {
	rpc   string
	code  connect.Code
	start time.Time
	took  time.Duration
	err   error
}

// loadClients runs search, chat and ingest against url from n clients until
// stop is closed, recording every outcome.
type loadClients struct {
	search canonv1connect.SearchServiceClient
	chat   canonv1connect.ChatServiceClient
	ingest canonv1connect.IngestServiceClient
	mu     sync.Mutex
	out    []outcome
}

func newLoadClients(client *http.Client, url string) *loadClients {
	return &loadClients{
		search: canonv1connect.NewSearchServiceClient(client, url),
		chat:   canonv1connect.NewChatServiceClient(client, url),
		ingest: canonv1connect.NewIngestServiceClient(client, url),
	}
}

var loadRPCs = []string{"search", "chat", "ingest"}

func (l *loadClients) call(rpc string, n int) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	platform := &canonv1.Filters{ProjectKeys: []string{"platform"}}
	start := time.Now()
	var err error
	switch rpc {
	case "search":
		_, err = l.search.Search(ctx, connect.NewRequest(&canonv1.SearchRequest{Query: "how do deployment rollbacks work?", Filters: platform}))
	case "chat":
		_, err = l.chat.Chat(ctx, connect.NewRequest(&canonv1.ChatRequest{Question: "what cache layer did we standardise on?", Filters: platform}))
	case "ingest":
		_, err = l.ingest.Ingest(ctx, connect.NewRequest(&canonv1.IngestRequest{ProjectKey: "load", Files: []*canonv1.IngestFile{{
			Path: fmt.Sprintf("notes/note-%d.md", n%8), Content: fmt.Appendf(nil, "# Load note %d\n\nChange number %d of a small note.\n", n%8, n)}}}))
	}
	o := outcome{rpc: rpc, start: start, took: time.Since(start), err: err}
	if err != nil {
		o.code = connect.CodeOf(err)
	}
	return o
}

func (l *loadClients) run(n int, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			for i := w; ; i += n {
				select {
				case <-stop:
					return
				default:
				}
				o := l.call(loadRPCs[i%len(loadRPCs)], i)
				l.mu.Lock()
				l.out = append(l.out, o)
				l.mu.Unlock()
			}
		})
	}
	return &wg
}

func (l *loadClients) succeeded() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, o := range l.out {
		if o.err == nil {
			n++
		}
	}
	return n
}

func (l *loadClients) outcomes() []outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]outcome(nil), l.out...)
}

// TestDatabaseRestartMidLoad: six clients mix search, chat and ingest while an
// administrator terminates canon's backends and then the database goes away
// for 1.5 s (connections cut, new ones refused) and comes back. Every failure is
// Unavailable and fast, canon serves again without a restart once the database
// is back, and no goroutine is left behind.
func TestDatabaseRestartMidLoad(t *testing.T) {
	before := goleak.IgnoreCurrent()
	url := dbtest.FreshURL(t)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	proxy := newPGProxy(t, u.Host)
	u.Host = proxy.addr
	pool, err := postgres.Connect(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	s := newStackOn(t, pool, llm.NewExtractive(), nil)
	srv, base, done := serveOn(t, s.deps)
	client := &http.Client{Transport: &http.Transport{}}
	load := newLoadClients(client, base)

	stop := make(chan struct{})
	workers := load.run(6, stop)
	// Healthy first: a dozen requests answered (seconds under -race on a busy machine).
	for deadline := time.Now().Add(time.Minute); load.succeeded() < 12; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d requests answered in a minute before any fault", load.succeeded())
		}
	}
	faultStart := time.Now()
	for range 3 {
		terminateBackends(t, dbName)
		time.Sleep(150 * time.Millisecond)
	}
	downAt := time.Now()
	proxy.down()
	time.Sleep(1500 * time.Millisecond)
	proxy.up(t)
	upAt := time.Now()
	// Recovered: the first search that succeeds after the database is back.
	var recoveredAt time.Time
	for deadline := time.Now().Add(15 * time.Second); recoveredAt.IsZero() && time.Now().Before(deadline); {
		if o := load.call("search", 0); o.err == nil {
			recoveredAt = time.Now()
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if recoveredAt.IsZero() {
		t.Fatal("canon did not serve again within 15 s of the database coming back")
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	workers.Wait()

	var healthy, unavailableWhileDown, afterRecovery int
	for _, o := range load.outcomes() {
		switch {
		case o.start.Add(o.took).Before(faultStart):
			healthy++
			if o.err != nil {
				t.Errorf("%s failed before any fault: %v", o.rpc, o.err)
			}
		case o.err != nil && o.code != connect.CodeUnavailable:
			t.Errorf("%s failed with %v during the outage, want Unavailable: %v", o.rpc, o.code, o.err)
		// A hang waits for the request's deadline; two dials' timeout is a busy machine.
		case o.err != nil && o.took > 2*postgres.DefaultConnectTimeout:
			t.Errorf("%s took %s to fail: want a fast Unavailable", o.rpc, o.took)
		}
		if o.err != nil && !o.start.Before(downAt) && o.start.Before(upAt) {
			unavailableWhileDown++
		}
		if o.start.After(recoveredAt) {
			afterRecovery++
		}
	}
	if healthy == 0 || unavailableWhileDown == 0 {
		t.Errorf("%d requests before the fault, %d failed while the database was down: the load did not meet the fault", healthy, unavailableWhileDown)
	}
	t.Logf("recovered %s after the database came back; %d requests after recovery", recoveredAt.Sub(upAt), afterRecovery)
	// Recovered for good: every RPC succeeds, several times over.
	for i := range 12 {
		if o := load.call(loadRPCs[i%len(loadRPCs)], 100+i); o.err != nil {
			t.Errorf("%s after recovery: %v", o.rpc, o.err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx, 5*time.Second); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	client.CloseIdleConnections()
	s.chatLog.Close(ctx)
	pool.Close()
	proxy.close()
	verifyNoLeaks(t, before)
}

// llmFault is how a fake provider misbehaves.
type llmFault string

const (
	faultHang    llmFault = "hangs before answering"
	faultStall   llmFault = "stalls mid-stream"
	faultDieMid  llmFault = "dies mid-stream"
	faultedDelta          = "Rollbacks redeploy the previous release [1]. "
)

// faultyLLM serves the OpenAI chat completions or the Anthropic Messages wire
// format (streaming) and misbehaves as told.
type faultyLLM struct {
	srv     *httptest.Server
	mu      sync.Mutex
	fault   llmFault
	release chan struct{} // closed at the end: no handler outlives the test
}

func newFaultyLLM(t *testing.T, wire string) *faultyLLM {
	t.Helper()
	f := &faultyLLM{release: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck // the request is not inspected
		f.mu.Lock()
		fault := f.fault
		f.mu.Unlock()
		wait := func() {
			select {
			case <-r.Context().Done():
			case <-f.release:
			}
		}
		if fault == faultHang {
			wait()
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		send := func(event, data string) {
			if event != "" {
				fmt.Fprintf(w, "event: %s\n", event)
			}
			fmt.Fprintf(w, "data: %s\n\n", data)
			w.(http.Flusher).Flush()
		}
		text, _ := json.Marshal(faultedDelta)
		for range 2 {
			if wire == "openai" {
				send("", `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"fake-model","choices":[{"index":0,"delta":{"content":`+string(text)+`},"finish_reason":null}]}`)
				continue
			}
			send("message_start", `{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"fake-model","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}`)
			send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
			send("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(text)+`}}`)
		}
		if fault == faultStall {
			wait()
			return
		}
		panic(http.ErrAbortHandler) // the connection closes without the stream's end
	}))
	t.Cleanup(func() {
		close(f.release)
		f.srv.Close()
	})
	return f
}

func (f *faultyLLM) set(fault llmFault) {
	f.mu.Lock()
	f.fault = fault
	f.mu.Unlock()
}

// TestLLMProviderFaults: for the OpenAI and Anthropic wire formats, a provider
// that hangs, stalls mid-stream or dies mid-stream ends a ChatStream with
// Unavailable and the web chat's stream with an error chunk, within the
// provider timeout; the chat log records each failed turn with its error, and
// nothing is left running.
func TestLLMProviderFaults(t *testing.T) {
	const timeout = 500 * time.Millisecond
	for _, wire := range []string{"openai", "anthropic"} {
		t.Run(wire, func(t *testing.T) {
			fake := newFaultyLLM(t, wire)
			transport := &http.Transport{}
			defer transport.CloseIdleConnections()
			var provider llm.Provider
			var err error
			if wire == "openai" {
				provider, err = llm.NewOpenAI(llm.OpenAIConfig{BaseURL: fake.srv.URL + "/v1", Model: "fake-model",
					Timeout: timeout, MaxRetries: -1, HTTPClient: &http.Client{Transport: transport}})
			} else {
				provider, err = llm.NewAnthropic(llm.AnthropicConfig{BaseURL: fake.srv.URL, Model: "fake-model",
					APIKey: "sk-ant-test", Timeout: timeout, MaxRetries: -1, HTTPClient: &http.Client{Transport: transport}})
			}
			if err != nil {
				t.Fatal(err)
			}
			s := newStack(t, provider, nil)
			srv := httptest.NewServer(server.Handler(s.deps))
			defer srv.Close()
			logged := 0
			for _, fault := range []llmFault{faultHang, faultStall, faultDieMid} {
				t.Run(string(fault), func(t *testing.T) {
					fake.set(fault)
					before := goleak.IgnoreCurrent()
					client := &http.Client{Transport: &http.Transport{}}
					question := &canonv1.ChatRequest{Question: "how do deployment rollbacks work?",
						Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}}}

					start := time.Now()
					stream, err := canonv1connect.NewChatServiceClient(client, srv.URL).ChatStream(context.Background(),
						connect.NewRequest(question))
					if err != nil {
						t.Fatal(err)
					}
					deltas := 0
					for stream.Receive() {
						if stream.Msg().GetFinal() != nil {
							t.Error("a final answer from a provider that failed")
						}
						if stream.Msg().GetDelta() != "" {
							deltas++
						}
					}
					stream.Close()
					if code := connect.CodeOf(stream.Err()); code != connect.CodeUnavailable {
						t.Errorf("ChatStream ended with %v (%v), want Unavailable", code, stream.Err())
					}
					if took := time.Since(start); took > timeout+5*time.Second {
						t.Errorf("ChatStream took %s to end; the provider timeout is %s", took, timeout)
					}
					if wantText := fault != faultHang; wantText != (deltas > 0) {
						t.Errorf("%d deltas before the failure", deltas)
					}

					req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/api/chat",
						strings.NewReader(useChatBody("how do deployment rollbacks work?")))
					req.Header.Set("Content-Type", "application/json")
					res, err := client.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					chunks, done := readUIStream(t, res.Body, nil)
					res.Body.Close()
					last := chunks[len(chunks)-1]
					if !done || last.Type != "error" || !strings.Contains(last.ErrorText, "language model is unavailable") {
						t.Errorf("web chat: done %v, chunks %s, last %+v", done, kinds(chunks), last)
					}

					logged += 2
					waitFailedTurns(t, s, provider.Name(), logged)
					client.CloseIdleConnections()
					transport.CloseIdleConnections()
					verifyNoLeaks(t, before)
				})
			}
		})
	}
}

// waitFailedTurns waits for the chat log to hold want failed turns of provider,
// each with its error.
func waitFailedTurns(t *testing.T, s *stack, provider string, want int) {
	t.Helper()
	var n int
	var last string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		err := s.deps.Pool.QueryRow(context.Background(), `SELECT count(*), coalesce(max(error), '')
			FROM chat_logs WHERE provider = $1 AND error IS NOT NULL AND refusal_reason IS NULL`, provider).Scan(&n, &last)
		if err != nil {
			t.Fatal(err)
		}
		if n >= want {
			break
		}
	}
	if n != want || !strings.Contains(last, "unavailable") {
		t.Errorf("chat log: %d failed turns (last error %q), want %d with the provider's error", n, last, want)
	}
}

// TestChatLogUnwritable: with every insert into chat_logs failing (a trigger
// raising), chats keep answering and each lost row is counted in /metrics.
func TestChatLogUnwritable(t *testing.T) {
	s := newStack(t, llm.NewExtractive(), nil)
	ctx := context.Background()
	for _, stmt := range []string{
		`CREATE FUNCTION chat_logs_refuse() RETURNS trigger LANGUAGE plpgsql AS
			$$ BEGIN RAISE EXCEPTION 'chat_logs is read-only in this test'; END $$`,
		`CREATE TRIGGER chat_logs_refuse BEFORE INSERT ON chat_logs FOR EACH ROW EXECUTE FUNCTION chat_logs_refuse()`,
	} {
		if _, err := s.deps.Pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(server.Handler(s.deps))
	defer srv.Close()
	c := canonv1connect.NewChatServiceClient(srv.Client(), srv.URL)
	const turns = 6
	for range turns {
		res, err := c.Chat(ctx, connect.NewRequest(&canonv1.ChatRequest{Question: "how do deployment rollbacks work?",
			Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}}}))
		if err != nil {
			t.Fatalf("chat with the log unwritable: %v", err)
		}
		if res.Msg.GetAnswer() == "" || len(res.Msg.GetCitations()) == 0 {
			t.Fatalf("answer = %+v", res.Msg)
		}
	}
	want := fmt.Sprintf(`canon_chat_log_rows_lost_total{reason="insert_failed"} %d`, turns)
	var metrics string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		metrics = scrape(t, srv.URL)
		if strings.Contains(metrics, want) {
			break
		}
	}
	if !strings.Contains(metrics, want) {
		t.Errorf("/metrics lacks %s:\n%s", want, grepLines(metrics, "canon_chat_log"))
	}
	if !strings.Contains(metrics, "canon_chat_log_rows_written_total 0") {
		t.Errorf("rows written though every insert fails:\n%s", grepLines(metrics, "canon_chat_log"))
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url+"/metrics", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func grepLines(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// verifyNoLeaks is goleak.VerifyNone with more patience: goleak retries for about
// a second, and on a loaded machine a closed connection's goroutines take longer to end.
// A pgx background reader is not the server's: pgx starts one when a write is slow
// (a loaded machine), and it stays blocked in Read while its pool connection sits
// idle, until the test's pool closes.
func verifyNoLeaks(t *testing.T, before goleak.Option) {
	t.Helper()
	opts := []goleak.Option{before,
		goleak.IgnoreAnyFunction("github.com/jackc/pgx/v5/pgconn/internal/bgreader.(*BGReader).bgRead")}
	for deadline := time.Now().Add(10 * time.Second); goleak.Find(opts...) != nil && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	goleak.VerifyNone(t, opts...)
}
