package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const testKey = "sk-test-SECRET-0123456789abcdef"

// recorded is one request a fake server received.
type recorded struct {
	Method string
	Path   string
	Header http.Header
	Body   map[string]any
}

// fakeServer is an httptest.Server whose handler sees each request numbered
// from 1, and which records every request.
type fakeServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newFakeServer(t *testing.T, handle func(n int, w http.ResponseWriter, r *http.Request)) *fakeServer {
	t.Helper()
	fs := &fakeServer{}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		fs.mu.Lock()
		fs.reqs = append(fs.reqs, recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		n := len(fs.reqs)
		fs.mu.Unlock()
		handle(n, w, r)
	}))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *fakeServer) requests() []recorded {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]recorded(nil), fs.reqs...)
}

// sse writes Server-Sent Events frames and flushes each one, like a real API.
type sse struct {
	w http.ResponseWriter
}

func startSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

// data writes "data: <payload>\n\n".
func (s sse) data(payload string) {
	fmt.Fprintf(s.w, "data: %s\n\n", payload)
	s.w.(http.Flusher).Flush()
}

// event writes "event: <name>\ndata: <payload>\n\n".
func (s sse) event(name, payload string) {
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, payload)
	s.w.(http.Flusher).Flush()
}

// OpenAI chat.completion.chunk frames.

const openAIChunkHead = `{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1718000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_1","choices":[`

func openAIRoleChunk() string {
	return openAIChunkHead + `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}`
}

func openAIContentChunk(text string) string {
	b, _ := json.Marshal(text)
	return openAIChunkHead + `{"index":0,"delta":{"content":` + string(b) + `},"logprobs":null,"finish_reason":null}],"usage":null}`
}

func openAIFinishChunk() string {
	return openAIChunkHead + `{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`
}

func openAIUsageChunk(prompt, completion int) string {
	return fmt.Sprintf(openAIChunkHead+`],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, prompt, completion, prompt+completion)
}

// openAIStream writes a complete, successful stream of the given pieces.
func openAIStream(w http.ResponseWriter, pieces ...string) {
	s := startSSE(w)
	s.data(openAIRoleChunk())
	for _, p := range pieces {
		s.data(openAIContentChunk(p))
	}
	s.data(openAIFinishChunk())
	s.data(openAIUsageChunk(42, 7))
	s.data("[DONE]")
}

// Anthropic Messages API events.

func anthropicStart(s sse, inputTokens int) {
	s.event("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-3-5-haiku-20241022","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":1}}}`, inputTokens))
	s.event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	s.event("ping", `{"type": "ping"}`)
}

func anthropicDelta(s sse, text string) {
	b, _ := json.Marshal(text)
	s.event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(b)+`}}`)
}

func anthropicEnd(s sse, outputTokens int) {
	s.event("content_block_stop", `{"type":"content_block_stop","index":0}`)
	s.event("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":%d}}`, outputTokens))
	s.event("message_stop", `{"type":"message_stop"}`)
}

func anthropicStream(w http.ResponseWriter, pieces ...string) {
	s := startSSE(w)
	anthropicStart(s, 25)
	for _, p := range pieces {
		anthropicDelta(s, p)
	}
	anthropicEnd(s, 15)
}

// jsonError writes an API error response.
func jsonError(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After-Ms", "5") // keep the SDK's backoff short in tests
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body) // a client that hung up fails its own assertion
}

// collector gathers deltas.
type collector struct {
	mu     sync.Mutex
	deltas []string
}

func (c *collector) add(s string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deltas = append(c.deltas, s)
	return nil
}

func (c *collector) joined() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.deltas, "")
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// assertNoKey fails if the secret shows in any rendering of err.
func assertNoKey(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err), fmt.Sprintf("%q", err)} {
		if strings.Contains(s, testKey) || strings.Contains(s, "SECRET") {
			t.Fatalf("error leaks the API key: %s", s)
		}
	}
}

var testRequest = Request{
	System:   "You answer from the numbered context.\n[1] Canon stores chunks in Postgres.",
	Messages: []Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello!"}, {Role: "user", Content: "Where are chunks stored?"}},
	Question: "Where are chunks stored?",
}
