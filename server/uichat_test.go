package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/canonkb/canon/auth"
	"github.com/canonkb/canon/chat"
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
	"github.com/jackc/pgx/v5/pgxpool"
)

// fakeOpenAI is an in-process OpenAI-compatible chat completions server: it
// streams its deltas, records each request's messages and whether the client
// went away before the stream ended.
type fakeOpenAI struct {
	deltas []string
	status int           // non-zero: answer with this HTTP status instead
	body   string        // with status: the error body ("": an overloaded server's)
	hold   chan struct{} // non-nil: after the first delta, wait for it or the client to leave
	mu     sync.Mutex
	bodies []map[string]any
	cancel chan struct{}
}

func newFakeOpenAI(t *testing.T, f *fakeOpenAI) *httptest.Server {
	t.Helper()
	f.cancel = make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body) //nolint:errcheck // recorded as far as it decodes
		f.mu.Lock()
		f.bodies = append(f.bodies, body)
		f.mu.Unlock()
		if f.status != 0 {
			body := f.body
			if body == "" {
				body = `{"error":{"message":"overloaded","type":"server_error"}}`
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(f.status)
			fmt.Fprint(w, body)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(v string) {
			fmt.Fprintf(w, "data: %s\n\n", v)
			w.(http.Flusher).Flush()
		}
		for i, d := range f.deltas {
			b, _ := json.Marshal(d)
			chunk(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"fake-model","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}`)
			if i == 0 && f.hold != nil {
				select {
				case <-r.Context().Done():
					select { // the first cancellation is the one a test waits for
					case f.cancel <- struct{}{}:
					default:
					}
					return
				case <-f.hold:
				}
			}
		}
		chunk(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"fake-model","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		chunk(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"fake-model","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":34,"total_tokens":1234}}`)
		chunk("[DONE]")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// handbookPool is a fresh database with the example handbook as project platform.
func handbookPool(t *testing.T) (*pgxpool.Pool, *search.Searcher, *hierarchy.Searcher, *ingest.Ingester) {
	t.Helper()
	pool := dbtest.FreshPool(t)
	emb := embed.NewHash(384)
	in := ingest.New(pool, emb, markdown.Options{})
	files, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Ingest(context.Background(), files, ingest.Options{Project: "platform"}); err != nil {
		t.Fatal(err)
	}
	searcher := search.New(pool, emb, search.Config{Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed),
		Profile: domain.ProfileHashKeywordLed, Graph: search.DefaultGraphConfig()})
	return pool, searcher, hierarchy.New(pool, searcher, hierarchy.DefaultConfig()), in
}

func uiChatServer(t *testing.T, pool *pgxpool.Pool, s *search.Searcher, h *hierarchy.Searcher, in *ingest.Ingester, p llm.Provider) *httptest.Server {
	t.Helper()
	return uiChatServerWith(t, auth.Config{}, pool, s, h, in, p)
}

// uiChatServerWith is uiChatServer behind the given guard settings.
func uiChatServerWith(t *testing.T, cfg auth.Config, pool *pgxpool.Pool, s *search.Searcher, h *hierarchy.Searcher,
	in *ingest.Ingester, p llm.Provider) *httptest.Server {
	t.Helper()
	prompt, _ := domain.ParsePrompt(domain.DefaultPromptTemplate())
	svc := chat.New(h, p, prompt, nil, chat.Config{
		Gate: domain.Gate{MinSimilarity: 0.26, MinKeywordCoverage: 0.70}, SupportThreshold: 0.5,
		Prices: map[string]llm.Price{"fake-model": {PromptPerMTok: 1, CompletionPerMTok: 2}}})
	srv := httptest.NewServer(server.Handler(server.Deps{Pool: pool, Searcher: s, SearchService: h, Ingester: in, Chat: svc, Auth: cfg}))
	t.Cleanup(srv.Close)
	return srv
}

func openAIProvider(t *testing.T, url string) llm.Provider {
	t.Helper()
	p, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: url + "/v1", Model: "fake-model", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// useChatBody is the body useChat's DefaultChatTransport sends, plus canon's fields.
func useChatBody(turns ...string) string {
	var msgs []map[string]any
	for i, text := range turns {
		role := map[bool]string{true: "user", false: "assistant"}[i%2 == 0]
		msgs = append(msgs, map[string]any{"id": fmt.Sprintf("m%d", i), "role": role,
			"parts": []map[string]any{{"type": "text", "text": text}}})
	}
	b, _ := json.Marshal(map[string]any{"id": "conv1", "messages": msgs, "trigger": "submit-message",
		"messageId": nil, "project": "platform", "filters": map[string]any{}, "fusion": ""})
	return string(b)
}

type uiChunk struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Delta     string          `json:"delta"`
	ErrorText string          `json:"errorText"`
	MessageID string          `json:"messageId"`
	Data      json.RawMessage `json:"data"`
}

// readUIStream reads frames until [DONE]; onChunk may stop early by returning false.
func readUIStream(t *testing.T, body io.Reader, onChunk func(uiChunk) bool) (chunks []uiChunk, done bool) {
	t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		payload, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data frame: %q", line)
		}
		if payload == "[DONE]" {
			return chunks, true
		}
		var c uiChunk
		if err := json.Unmarshal([]byte(payload), &c); err != nil {
			t.Fatalf("frame %q: %v", payload, err)
		}
		chunks = append(chunks, c)
		if onChunk != nil && !onChunk(c) {
			return chunks, false
		}
	}
	return chunks, false
}

// kinds collapses runs of one chunk type: the order the issue specifies.
func kinds(chunks []uiChunk) string {
	var out []string
	for _, c := range chunks {
		if len(out) == 0 || out[len(out)-1] != c.Type {
			out = append(out, c.Type)
		}
	}
	return strings.Join(out, ",")
}

func chunkCount(chunks []uiChunk, kind string) int {
	n := 0
	for _, c := range chunks {
		if c.Type == kind {
			n++
		}
	}
	return n
}

func postUIChat(ctx context.Context, t *testing.T, url, body string) *http.Response {
	t.Helper()
	return postUIChatAs(ctx, t, url, "", body)
}

// postUIChatAs posts as the holder of key ("": no Authorization header).
func postUIChatAs(ctx context.Context, t *testing.T, url, key, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/api/chat", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestUIChat(t *testing.T) {
	t.Parallel()
	pool, s, h, in := handbookPool(t)

	t.Run("grounded answer: events in order", func(t *testing.T) {
		fake := &fakeOpenAI{deltas: []string{"We standardised ", "on Redis ", "[1] for ", "the cache [99]."}}
		srv := uiChatServer(t, pool, s, h, in, openAIProvider(t, newFakeOpenAI(t, fake).URL))
		res := postUIChat(context.Background(), t, srv.URL, useChatBody(
			"how do deployment rollbacks work?", "Roll back with the deploy tool [1].", "what cache layer did we standardise on?"))
		defer res.Body.Close()
		if res.StatusCode != 200 || res.Header.Get("x-vercel-ai-ui-message-stream") != "v1" ||
			!strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("status %d, headers %v", res.StatusCode, res.Header)
		}
		chunks, done := readUIStream(t, res.Body, nil)
		if !done {
			t.Fatal("stream ended without [DONE]")
		}
		// Every passage as a source first; a citation only for what the answer cites,
		// numbered from [1] as the answer numbers it, just before the text that
		// first carries its marker.
		want := "start,data-retrieval,source-document,data-related,data-rejected,text-start,"
		if got := kinds(chunks); !strings.HasPrefix(got, want) || chunkCount(chunks, "source-document") < 2 ||
			!strings.Contains(got, ",text-delta,data-citation,text-delta,") || strings.Count(got, "data-citation") != 1 ||
			!strings.HasSuffix(got, ",text-end,data-answer,data-usage,data-followups,finish") {
			t.Fatalf("event order = %s", got)
		}
		var text strings.Builder
		var answer struct {
			Text  string  `json:"text"`
			Cited []int   `json:"cited"`
			Drop  []int   `json:"dropped"`
			_     float64 // citationSupport
		}
		var usage struct {
			PromptTokens, CompletionTokens int
			CostUSD                        float64 `json:"costUsd"`
		}
		var citation struct {
			N                    int
			DocID, Status, Title string
			EvidenceTier         string `json:"evidenceTier"`
			ChunkID              int64  `json:"chunkId"`
		}
		var rejected struct {
			Approaches []struct{ DocID string } `json:"approaches"`
		}
		for _, c := range chunks {
			switch c.Type {
			case "text-delta":
				text.WriteString(c.Delta)
			case "data-answer":
				json.Unmarshal(c.Data, &answer) //nolint:errcheck // checked below
			case "data-usage":
				json.Unmarshal(c.Data, &usage) //nolint:errcheck // checked below
			case "data-rejected":
				json.Unmarshal(c.Data, &rejected) //nolint:errcheck // checked below
			case "data-citation":
				if citation.N == 0 {
					json.Unmarshal(c.Data, &citation) //nolint:errcheck // checked below
				}
			}
		}
		// The stream drops the unknown [99] at once; the answer's text (data-answer)
		// is the checked one.
		if text.String() != "We standardised on Redis [1] for the cache ." {
			t.Errorf("streamed text = %q", text.String())
		}
		if len(answer.Cited) != 1 || answer.Cited[0] != 1 || len(answer.Drop) != 1 || strings.Contains(answer.Text, "[99]") {
			t.Errorf("answer = %+v: want [1] cited and the unknown [99] dropped", answer)
		}
		if usage.PromptTokens != 1200 || usage.CompletionTokens != 34 || usage.CostUSD <= 0 {
			t.Errorf("usage = %+v", usage)
		}
		if citation.N != 1 || citation.DocID == "" || citation.ChunkID == 0 || citation.Title == "" {
			t.Errorf("first citation = %+v", citation)
		}
		if len(rejected.Approaches) == 0 || rejected.Approaches[0].DocID != "rej-memcached-2023" {
			t.Errorf("rejected = %+v: want the Memcached approach", rejected)
		}
		// The history reached the model: the earlier turns before the question.
		msgs, _ := fake.bodies[0]["messages"].([]any)
		var roles []string
		for _, m := range msgs {
			roles = append(roles, m.(map[string]any)["role"].(string))
		}
		if strings.Join(roles, ",") != "system,user,assistant,user" {
			t.Errorf("model saw roles %v: want the system prompt, two history turns and the question", roles)
		}
	})

	t.Run("follow-up: why? is searched for with the question before it", func(t *testing.T) {
		fake := &fakeOpenAI{deltas: []string{"Because failover was manual [1]."}}
		srv := uiChatServer(t, pool, s, h, in, openAIProvider(t, newFakeOpenAI(t, fake).URL))
		res := postUIChat(context.Background(), t, srv.URL, useChatBody(
			"what cache layer did we standardise on?", "Redis Cluster [1].", "why?"))
		defer res.Body.Close()
		chunks, done := readUIStream(t, res.Body, nil)
		if !done || chunkCount(chunks, "data-refusal") != 0 || chunkCount(chunks, "text-delta") == 0 {
			t.Fatalf("want an answer, got %s", kinds(chunks))
		}
		var retrieval struct{ RetrievalQuery string }
		for _, c := range chunks {
			if c.Type == "data-retrieval" {
				json.Unmarshal(c.Data, &retrieval) //nolint:errcheck // checked below
			}
		}
		if retrieval.RetrievalQuery != "what cache layer did we standardise on? why?" {
			t.Errorf("data-retrieval's retrievalQuery = %q", retrieval.RetrievalQuery)
		}
		// The model gets the conversation and the question as asked.
		msgs, _ := fake.bodies[0]["messages"].([]any)
		if last, _ := msgs[len(msgs)-1].(map[string]any); last["content"] != "why?" {
			t.Errorf("the model's last message = %v, want the question as asked", last)
		}
	})

	t.Run("refusal: data-refusal, no text, HTTP 200", func(t *testing.T) {
		fake := &fakeOpenAI{deltas: []string{"never called"}}
		srv := uiChatServer(t, pool, s, h, in, openAIProvider(t, newFakeOpenAI(t, fake).URL))
		res := postUIChat(context.Background(), t, srv.URL, useChatBody("what is the best banana bread recipe?"))
		defer res.Body.Close()
		chunks, done := readUIStream(t, res.Body, nil)
		if res.StatusCode != 200 || !done {
			t.Fatalf("status %d, done %v", res.StatusCode, done)
		}
		if got := kinds(chunks); got != "start,data-retrieval,data-refusal,data-usage,data-followups,finish" {
			t.Fatalf("event order = %s", got)
		}
		var refusal struct {
			Reason, Body string
			Gap          struct {
				Question string
				Projects []string
			}
		}
		json.Unmarshal(chunks[2].Data, &refusal) //nolint:errcheck // checked below
		if refusal.Reason != domain.RefusalNoRelevantContext || refusal.Body == "" ||
			refusal.Gap.Question != "what is the best banana bread recipe?" || len(refusal.Gap.Projects) != 1 {
			t.Errorf("refusal = %+v", refusal)
		}
		if len(fake.bodies) != 0 {
			t.Error("the model was called for a refused question")
		}
	})

	t.Run("model outage: an error chunk a person can act on", func(t *testing.T) {
		fake := &fakeOpenAI{status: http.StatusServiceUnavailable}
		srv := uiChatServer(t, pool, s, h, in, openAIProvider(t, newFakeOpenAI(t, fake).URL))
		res := postUIChat(context.Background(), t, srv.URL, useChatBody("what cache layer did we standardise on?"))
		defer res.Body.Close()
		chunks, done := readUIStream(t, res.Body, nil)
		last := chunks[len(chunks)-1]
		if res.StatusCode != 200 || !done || last.Type != "error" || !strings.Contains(last.ErrorText, "language model is unavailable") {
			t.Fatalf("status %d, done %v, chunks %s, last %+v", res.StatusCode, done, kinds(chunks), last)
		}
	})

	t.Run("stop: a client that leaves cancels the model request", func(t *testing.T) {
		fake := &fakeOpenAI{deltas: []string{"Redis ", "is ", "the cache [1]."}, hold: make(chan struct{})}
		defer close(fake.hold)
		srv := uiChatServer(t, pool, s, h, in, openAIProvider(t, newFakeOpenAI(t, fake).URL))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		res := postUIChat(ctx, t, srv.URL, useChatBody("what cache layer did we standardise on?"))
		chunks, _ := readUIStream(t, res.Body, func(c uiChunk) bool { return c.Type != "text-delta" })
		if chunks[len(chunks)-1].Type != "text-delta" {
			t.Fatalf("no text before the stop: %s", kinds(chunks))
		}
		cancel() // the Stop button: fetch aborted
		res.Body.Close()
		select {
		case <-fake.cancel:
		case <-time.After(10 * time.Second):
			t.Fatal("the model request was not cancelled within 10 s of the client leaving")
		}
	})

	t.Run("bad bodies are 400 with a clear message", func(t *testing.T) {
		srv := uiChatServer(t, pool, s, h, in, llm.NewExtractive())
		long := strings.Repeat("why ", domain.MaxQueryLength)
		cases := map[string]struct{ body, want string }{
			"not json":       {`{"messages": [`, "not the JSON useChat sends"},
			"no messages":    {`{"id":"x","messages":[]}`, "messages is empty"},
			"assistant last": {useChatBody("q", "a"), "last message must be the user's question"},
			"system role":    {`{"messages":[{"id":"1","role":"system","parts":[{"type":"text","text":"hi"}]}]}`, "role must be user or assistant"},
			"bad filters":    {`{"messages":[{"id":"1","role":"user","parts":[{"type":"text","text":"hi"}]}],"filters":{"tags":"x"}}`, `filters is not valid JSON for canon.v1.Filters: unexpected token "x" (line 1, column 9)`},
			// Decode errors name the JSON field and the types, not Go's.
			"messages not an array": {`{"messages":"x"}`, "messages must be an array, not a string (byte 15)"},
			"text not a string":     {`{"messages":[{"id":"1","role":"user","parts":[{"type":"text","text":5}]}]}`, "messages.parts.text must be a string, not a number"},
			"limit not whole":       {`{"messages":[],"limit":1.5}`, "limit must be a whole number, not 1.5"},
			"role not a string":     {`{"messages":[{"role":true}]}`, "messages.role must be a string, not a boolean"},
			"body not an object":    {`[]`, "the body must be an object, not an array"},
			"question length":       {useChatBody(long), "the limit is"},
			// As the Chat RPC and /api/kb/chat answer, before the stream starts.
			"invalid UTF-8":     {"{\"messages\":[{\"id\":\"m1\",\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"cache \xff\xfe?\"}]}],\"project\":\"platform\"}", "invalid UTF-8"},
			"blank question":    {useChatBody("   "), "question is empty"},
			"question no text":  {`{"messages":[{"id":"1","role":"user","parts":[{"type":"step-start"}]}]}`, "question is empty"},
			"blank after turns": {useChatBody("q", "a", " \n "), "question is empty"},
		}
		for name, c := range cases {
			t.Run(name, func(t *testing.T) {
				res := postUIChat(context.Background(), t, srv.URL, c.body)
				defer res.Body.Close()
				var e struct{ Code, Message string }
				json.NewDecoder(res.Body).Decode(&e) //nolint:errcheck // checked below
				if res.StatusCode != http.StatusBadRequest || e.Code != "invalid_argument" || !strings.Contains(e.Message, c.want) {
					t.Errorf("status %d, %+v: want 400 with %q", res.StatusCode, e, c.want)
				}
				if strings.Contains(e.Message, "Go struct") || strings.Contains(e.Message, "server.") || strings.Contains(e.Message, "proto:") {
					t.Errorf("%q names the implementation", e.Message)
				}
			})
		}
	})

	t.Run("document view and the app", func(t *testing.T) {
		srv := uiChatServer(t, pool, s, h, in, llm.NewExtractive())
		res := getURL(t, srv.URL+"/api/doc/platform/dec-cache-v2")
		var doc struct {
			Title, Status string
			Edges         []struct{ DocID, EdgeType, Direction string }
			Chunks        []struct{ ID int64 }
		}
		json.NewDecoder(res.Body).Decode(&doc) //nolint:errcheck // checked below
		res.Body.Close()
		dirs := map[string]bool{}
		for _, e := range doc.Edges {
			dirs[e.Direction] = true
		}
		if res.StatusCode != 200 || doc.Title == "" || doc.Status == "" || len(doc.Chunks) == 0 || !dirs["outgoing"] || !dirs["incoming"] {
			t.Errorf("status %d, doc %+v: want its state, chunks and edges both ways", res.StatusCode, doc)
		}
		res = getURL(t, srv.URL+"/api/doc/platform/no-such-doc")
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("unknown document: status %d", res.StatusCode)
		}
		// A path that is not text PostgreSQL can hold is the caller's mistake.
		for path, want := range map[string]string{
			"/api/doc/platform/a%00b": `slug \"a\\x00b\" contains a NUL character`,
			"/api/doc/platform/%ff":   `slug \"\\xff\" is not valid UTF-8 text`,
			"/api/doc/%ff/x":          `project key \"\\xff\" is not valid UTF-8 text`,
		} {
			res := getURL(t, srv.URL+path)
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), want) {
				t.Errorf("%s: status %d %s, want 400 with %s", path, res.StatusCode, b, want)
			}
		}
		for _, path := range []string{"/app/chat", "/app/doc/platform/dec-cache-v2", "/app/gaps"} {
			res := getURL(t, srv.URL+path)
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 || !strings.Contains(string(b), `<div id="root">`) {
				t.Errorf("%s: status %d", path, res.StatusCode)
			}
		}
	})
}

func getURL(t *testing.T, url string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestWebChatCountsAgainstTheStreamCap: a web chat is one of its key's open
// streams, as a ChatStream call is; past KB_MAX_STREAMS_PER_KEY of them
// together, /api/chat answers 429 before streaming, with the RPC's message.
func TestWebChatCountsAgainstTheStreamCap(t *testing.T) {
	t.Parallel()
	pool, s, h, in := handbookPool(t)
	fake := &fakeOpenAI{deltas: []string{"Redis ", "is the cache [1]."}, hold: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			released = true
			close(fake.hold)
		}
	}
	defer release()
	srv := uiChatServerWith(t, auth.Config{Required: true, MaxStreamsPerKey: 2}, pool, s, h, in,
		openAIProvider(t, newFakeOpenAI(t, fake).URL))
	key, _ := newKey(t, pool, "reader", []string{"platform"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const question = "what cache layer did we standardise on?"

	// Two streams, held open by the model after its first words: a ChatStream and a web chat.
	req := connect.NewRequest(&canonv1.ChatRequest{Question: question, ProjectKey: "platform"})
	req.Header().Set("Authorization", "Bearer "+key)
	rpc, err := canonv1connect.NewChatServiceClient(srv.Client(), srv.URL).ChatStream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for rpc.Receive() {
		if rpc.Msg().GetDelta() != "" {
			break
		}
	}
	if rpc.Err() != nil {
		t.Fatalf("the first stream: %v", rpc.Err())
	}
	web := postUIChatAs(ctx, t, srv.URL, key, useChatBody(question))
	defer web.Body.Close()
	if chunks, _ := readUIStream(t, web.Body, func(c uiChunk) bool { return c.Type != "text-delta" }); web.StatusCode != 200 ||
		len(chunks) == 0 || chunks[len(chunks)-1].Type != "text-delta" {
		t.Fatalf("the second stream: status %d, %s", web.StatusCode, kinds(chunks))
	}

	// The third, of either kind, is refused.
	want := "this key already has 2 streams open (the limit); close one and retry"
	third := postUIChatAs(ctx, t, srv.URL, key, useChatBody(question))
	var e struct{ Code, Message string }
	json.NewDecoder(third.Body).Decode(&e) //nolint:errcheck // checked below
	third.Body.Close()
	if third.StatusCode != http.StatusTooManyRequests || e.Code != "resource_exhausted" || e.Message != want {
		t.Errorf("a third web chat: status %d, %+v: want 429 resource_exhausted %q", third.StatusCode, e, want)
	}
	// Bounded: a third stream let through would be held by the model.
	actx, acancel := context.WithTimeout(ctx, 5*time.Second)
	defer acancel()
	again, err := canonv1connect.NewChatServiceClient(srv.Client(), srv.URL).ChatStream(actx, req)
	if err == nil {
		for again.Receive() {
		}
		err = again.Err()
	}
	if connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Errorf("a third ChatStream: %v, want resource_exhausted", err)
	}

	// Once they end, the key streams again: the web chat gave its place back.
	release()
	for rpc.Receive() {
	}
	if _, done := readUIStream(t, web.Body, nil); rpc.Err() != nil || !done {
		t.Fatalf("the held streams did not finish: %v, web done %v", rpc.Err(), done)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		res := postUIChatAs(ctx, t, srv.URL, key, useChatBody(question))
		done := false
		if res.StatusCode == 200 {
			_, done = readUIStream(t, res.Body, nil)
		}
		res.Body.Close()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the streams ended, a web chat still gets status %d", res.StatusCode)
		}
	}
}

// TestProviderRefusalsAreTyped: a provider that refuses canon's request, or
// its credentials, or throttles it, is answered on every chat route with a
// code and a message that say which (and never the key), not as an internal
// error; an outage stays unavailable.
func TestProviderRefusalsAreTyped(t *testing.T) {
	t.Parallel()
	pool, s, h, in := handbookPool(t)
	const key = "sk-canon-test-0123456789abcdef"
	tests := []struct {
		name   string
		status int
		body   string
		code   connect.Code
		msg    string
	}{
		{"400: a model that does not exist", 400, `{"error":{"message":"model \"x\" does not exist","type":"invalid_request_error"}}`,
			connect.CodeFailedPrecondition, `the language model provider rejected the request (HTTP 400): model "x" does not exist`},
		{"400: a context too long (vLLM)", 400, `{"object":"error","message":"This model's maximum context length is 4096 tokens","type":"BadRequestError"}`,
			connect.CodeFailedPrecondition, "rejected the request (HTTP 400): This model's maximum context length is 4096 tokens"},
		{"404: a model not pulled (Ollama)", 404, `{"error":{"message":"model \"llama3\" not found, try pulling it first","type":"api_error"}}`,
			connect.CodeFailedPrecondition, `rejected the request (HTTP 404): model "llama3" not found, try pulling it first`},
		{"401: a bad key, echoed", 401, `{"error":{"message":"Incorrect API key provided: ` + key + `","type":"invalid_request_error","code":"invalid_api_key"}}`,
			connect.CodeFailedPrecondition, "the language model provider refused canon's credentials (HTTP 401); check KB_LLM_API_KEY"},
		{"403: no access to the model", 403, `{"error":{"message":"You are not allowed to use this model","type":"invalid_request_error"}}`,
			connect.CodeFailedPrecondition, "refused canon's credentials (HTTP 403); check KB_LLM_API_KEY"},
		{"429: rate limited", 429, `{"error":{"message":"Rate limit reached for requests","type":"requests"}}`,
			connect.CodeUnavailable, "the language model provider is rate-limiting canon (HTTP 429); try again in a minute"},
		{"429: out of quota", 429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota"}}`,
			connect.CodeFailedPrecondition, "rejected the request (HTTP 429): You exceeded your current quota"},
		{"500: an outage", 500, `{"error":{"message":"Internal error","type":"server_error"}}`,
			connect.CodeUnavailable, "the language model is unavailable; try again shortly"},
	}
	question := "what cache layer did we standardise on?"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := &fakeOpenAI{status: tt.status, body: tt.body}
			provider, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: newFakeOpenAI(t, fake).URL + "/v1", Model: "fake-model",
				APIKey: key, MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			srv := uiChatServer(t, pool, s, h, in, provider)
			check := func(route string, code connect.Code, msg string) {
				t.Helper()
				if code != tt.code || !strings.Contains(msg, tt.msg) || strings.Contains(msg, key) {
					t.Errorf("%s: %v %q, want %v with %q (and never the key)", route, code, msg, tt.code, tt.msg)
				}
			}
			req := &canonv1.ChatRequest{Question: question, ProjectKey: "platform"}
			client := canonv1connect.NewChatServiceClient(srv.Client(), srv.URL)
			_, err = client.Chat(context.Background(), connect.NewRequest(req))
			check("Chat", connect.CodeOf(err), connectMessage(err))

			stream, err := client.ChatStream(context.Background(), connect.NewRequest(req))
			if err != nil {
				t.Fatal(err)
			}
			for stream.Receive() {
			}
			check("ChatStream", connect.CodeOf(stream.Err()), connectMessage(stream.Err()))
			stream.Close()

			body, _ := json.Marshal(map[string]any{"question": question, "project_key": "platform"})
			res, err := http.Post(srv.URL+"/api/kb/chat", "application/json", strings.NewReader(string(body))) //nolint:noctx // a test's request
			if err != nil {
				t.Fatal(err)
			}
			var e struct{ Code, Message string }
			json.NewDecoder(res.Body).Decode(&e) //nolint:errcheck // checked below
			res.Body.Close()
			var code connect.Code
			if err := code.UnmarshalText([]byte(e.Code)); err != nil {
				t.Errorf("/api/kb/chat: status %d, code %q", res.StatusCode, e.Code)
			}
			check("/api/kb/chat", code, e.Message)

			res = postUIChat(context.Background(), t, srv.URL, useChatBody(question))
			chunks, _ := readUIStream(t, res.Body, nil)
			res.Body.Close()
			last := chunks[len(chunks)-1]
			if last.Type != "error" || !strings.Contains(last.ErrorText, tt.msg) || strings.Contains(last.ErrorText, key) {
				t.Errorf("/api/chat: last chunk %+v, want an error chunk with %q", last, tt.msg)
			}
		})
	}
}

// connectMessage is a Connect error's message without its code prefix.
func connectMessage(err error) string {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Message()
	}
	return fmt.Sprint(err)
}
