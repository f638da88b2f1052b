package chat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"

	"github.com/canonkb/canon/chat"
	"github.com/canonkb/canon/chatlog"
	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/hierarchy"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/llm"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/search"
)

// defaultGate is the calibrated default (see README, "Refusal calibration").
var defaultGate = domain.Gate{MinSimilarity: 0.26, MinKeywordCoverage: 0.70}

var (
	once    sync.Once
	pool    *pgxpool.Pool
	dbURL   string
	initErr error
)

func handbookPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	url := dbtest.URL(t)
	once.Do(func() {
		ctx := context.Background()
		dbURL = url
		pool, initErr = postgres.Connect(ctx, url)
		if initErr != nil {
			return
		}
		files, err := ingest.ReadDirs([]string{"../examples/handbook"})
		if err != nil {
			initErr = err
			return
		}
		_, initErr = ingest.New(pool, embed.NewHash(384), markdown.Options{}).Ingest(ctx, files, ingest.Options{Project: "platform"})
	})
	if initErr != nil {
		t.Fatal(initErr)
	}
	return pool
}

// fakeOpenAI speaks the OpenAI chat completions streaming wire format and counts calls.
type fakeOpenAI struct {
	calls  atomic.Int32
	answer func(prompt string) string
	status int
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	if f.status != 0 {
		w.WriteHeader(f.status)
		fmt.Fprint(w, `{"error":{"message":"upstream overloaded","type":"server_error"}}`)
		return
	}
	var body struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	json.NewDecoder(r.Body).Decode(&body) //nolint:errcheck
	answer := f.answer(body.Messages[0].Content)
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for _, word := range strings.SplitAfter(answer, " ") {
		chunk := map[string]any{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": word}}}}
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":321,"completion_tokens":12,"total_tokens":333}}`+"\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func newService(t *testing.T, fake *fakeOpenAI, logPool *pgxpool.Pool) (*chat.Service, *chatlog.Logger) {
	t.Helper()
	p := handbookPool(t)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	provider, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "gpt-test", APIKey: "sk-test", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	searcher := search.New(p, embed.NewHash(384), search.Config{Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed), Profile: domain.ProfileHashKeywordLed})
	prompt, err := domain.ParsePrompt(domain.DefaultPromptTemplate())
	if err != nil {
		t.Fatal(err)
	}
	if logPool == nil {
		logPool = p
	}
	logger := chatlog.New(logPool, 100, nil)
	t.Cleanup(func() { logger.Close(context.Background()) })
	return chat.New(searcher, provider, prompt, logger, chat.Config{Gate: defaultGate, SupportThreshold: 0.5,
		Prices: map[string]llm.Price{"gpt-test": {PromptPerMTok: 1, CompletionPerMTok: 2}}}), logger
}

// twoPassService answers as `canon serve` and `canon ask` do: retrieval through
// the two-pass entity search (flat fallback), the extractive provider, the
// calibrated gate.
func twoPassService(t *testing.T) (*chat.Service, *hierarchy.Searcher) {
	t.Helper()
	p := handbookPool(t)
	flat := search.New(p, embed.NewHash(384), search.Config{Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed),
		Profile: domain.ProfileHashKeywordLed, Graph: search.DefaultGraphConfig()})
	h := hierarchy.New(p, flat, hierarchy.DefaultConfig())
	prompt, err := domain.ParsePrompt(domain.DefaultPromptTemplate())
	if err != nil {
		t.Fatal(err)
	}
	return chat.New(h, llm.NewExtractive(), prompt, nil, chat.Config{Gate: defaultGate, SupportThreshold: 0.5}), h
}

func ask(q string) *canonv1.ChatRequest {
	return &canonv1.ChatRequest{Question: q, Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}}}
}

func TestRefusalNeverCallsTheModel(t *testing.T) {
	fake := &fakeOpenAI{answer: func(string) string { return "should not happen" }}
	svc, logger := newService(t, fake, nil)
	res, err := svc.Answer(context.Background(), ask("what is the best banana bread recipe?"), "", chat.Events{})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetRefusalReason() != domain.RefusalNoRelevantContext || len(res.GetCitations()) != 0 || res.GetAnswer() == "" {
		t.Fatalf("want a no_relevant_context refusal with a message and no citations: %+v", res)
	}
	if n := fake.calls.Load(); n != 0 {
		t.Fatalf("the provider received %d calls; a refusal must never call it", n)
	}
	// Refusals roll up as content gaps.
	logger.Close(context.Background())
	var count int64
	err = pool.QueryRow(context.Background(), `SELECT g.count FROM content_gaps g JOIN projects p ON p.id = g.project_id
		WHERE p.project_key = 'platform' AND g.normalized_question = 'what is the best banana bread recipe'`).Scan(&count)
	if err != nil || count < 1 {
		t.Fatalf("content gap not recorded: %v (count %d)", err, count)
	}
}

// TestRefusalCalibrationOnHandbook holds for flat retrieval and for the two-pass
// retrieval canon serves (several answerable questions name an entity).
func TestRefusalCalibrationOnHandbook(t *testing.T) {
	fake := &fakeOpenAI{answer: func(string) string { return "Answer [1]." }}
	flat, _ := newService(t, fake, nil)
	twoPass, _ := twoPassService(t)
	answerable := []string{"what cache layer did we standardise on?", "how do deployment rollbacks work?", "error E5032",
		"why did we reject memcached?", "what is the postgres 16 migration plan?", "who leads project atlas?",
		"how do we handle stripe webhooks?", "what does KB_RRF_K do?", "which log format should services use?",
		"what happened in the ledger lag incident?", "why not a graphql gateway?",
		"what did the platform team decide about the queue migration?", "how should Go services access the database?",
		"what is an idempotency key?", "how do I fail over postgres?"}
	offTopic := []string{"what is the capital of France?", "best banana bread recipe", "who won the football world cup in 2018?",
		"do I need a visa to travel to Japan?", "how tall is mount everest?", "what is the meaning of life",
		"recommend a good pizza place", "how do I knit a scarf?", "what's the weather tomorrow in Paris?",
		"translate hello into Spanish", "how many calories in an apple", "who painted the mona lisa",
		"write me a poem about the sea", "what is quantum entanglement?", "how do I change a car tire?"}
	for name, svc := range map[string]*chat.Service{"flat": flat, "two-pass": twoPass} {
		for _, c := range []struct {
			qs     []string
			refuse bool
		}{{answerable, false}, {offTopic, true}} {
			for _, q := range c.qs {
				res, err := svc.Answer(context.Background(), ask(q), "", chat.Events{})
				if err != nil {
					t.Fatal(err)
				}
				if refused := res.GetRefusalReason() != ""; refused != c.refuse {
					t.Errorf("%s: %q: refused=%v (cosine %.3f, coverage %.2f, %s), want %v", name, q, refused,
						res.GetMeta().GetBestVectorSimilarity(), res.GetMeta().GetBestKeywordCoverage(),
						res.GetMeta().GetSearchMode(), c.refuse)
				}
			}
		}
	}
}

// TestEntityQuestionsTwoPass: a question that names a person is answered from
// that person's documents, and the refusal gate still judges the question asked
// by absolute evidence (the hits' cosine and keyword coverage), never by the
// two-pass score, which mixes the entity's score in: an off-topic question that
// names someone gets high-scoring hits and is refused all the same.
func TestEntityQuestionsTwoPass(t *testing.T) {
	svc, h := twoPassService(t)
	ctx := context.Background()
	for _, tc := range []struct {
		q, entity string // entity: the one pass 1 must choose ("" = flat)
		refuse    bool
	}{
		{"What has Dana been working on?", "dana", false},
		{"Which meetings did Sam attend?", "sam", false},
		{"what is Lee working on?", "lee", false},
		{"What standards did D. Okafor write?", "dana", false},
		{"what is the capital of France?", "", true},
		{"what is Dana's favourite pizza?", "dana", true},
		{"does Lee like football?", "lee", true},
		{"how do I bake banana bread with Marco?", "marco", true},
		{"what is the capital of France, Priya?", "priya", true},
	} {
		t.Run(tc.q, func(t *testing.T) {
			var summary *canonv1.RetrievalSummary
			res, err := svc.Answer(ctx, ask(tc.q), "", chat.Events{
				Retrieval: func(s *canonv1.RetrievalSummary) error { summary = s; return nil }})
			if err != nil {
				t.Fatal(err)
			}
			m := res.GetMeta()
			mode, reason := hierarchy.ModeFlat, hierarchy.ReasonNoConfidentEntity
			if tc.entity != "" {
				mode, reason = hierarchy.ModeTwoPass, hierarchy.ReasonConfident
			}
			if m.GetSearchMode() != mode || m.GetHierarchyReason() != reason ||
				summary.GetSearchMode() != mode || summary.GetHierarchyReason() != reason {
				t.Fatalf("meta %s (%s), summary %s (%s), want %s (%s)", m.GetSearchMode(), m.GetHierarchyReason(),
					summary.GetSearchMode(), summary.GetHierarchyReason(), mode, reason)
			}
			if tc.entity != "" && !slices.ContainsFunc(m.GetPass1Entities(), func(e *canonv1.EntityScore) bool {
				return e.GetEntityId() == tc.entity && e.GetChosen()
			}) {
				t.Errorf("pass 1 did not choose %s: %v", tc.entity, m.GetPass1Entities())
			}
			if refused := res.GetRefusalReason() != ""; refused != tc.refuse {
				t.Fatalf("refused=%v (cosine %.3f, coverage %.2f), want %v", refused,
					m.GetBestVectorSimilarity(), m.GetBestKeywordCoverage(), tc.refuse)
			}
			found, err := h.Search(ctx, &canonv1.SearchRequest{Query: tc.q, Filters: ask(tc.q).GetFilters()})
			if err != nil {
				t.Fatal(err)
			}
			if tc.refuse {
				if tc.entity != "" && found.GetPrimary()[0].GetScore() < 0.5 {
					t.Errorf("the best two-pass score is %.3f; this case should show a high mixed score refused",
						found.GetPrimary()[0].GetScore())
				}
				return
			}
			// Every citation is a chunk of the entity's documents, or of a graph
			// neighbour of theirs (the related context, which the extractive
			// provider quotes when the documents themselves do not answer).
			linked := map[int64]string{}
			for _, hit := range found.GetPrimary() {
				linked[hit.GetChunkId()] = hit.GetLinkingEntity()
			}
			for _, hit := range found.GetExpanded() {
				linked[hit.GetChunkId()] = tc.entity
			}
			if len(res.GetCitations()) == 0 {
				t.Fatalf("no citations: %q", res.GetAnswer())
			}
			for _, c := range res.GetCitations() {
				if e, ok := linked[c.GetChunkId()]; !ok || e != tc.entity {
					t.Errorf("citation [%d] %s was linked by %q, want %s", c.GetN(), c.GetDocId(), e, tc.entity)
				}
			}
		})
	}

	// Asked not to, chat retrieves flat and says so.
	req := ask("What has Dana been working on?")
	req.Options = &canonv1.ChatOptions{Hierarchy: proto.Bool(false)}
	res, err := svc.Answer(ctx, req, "", chat.Events{})
	if err != nil {
		t.Fatal(err)
	}
	if m := res.GetMeta(); m.GetSearchMode() != hierarchy.ModeFlat || m.GetHierarchyReason() != hierarchy.ReasonDisabled {
		t.Errorf("hierarchy=false: %s (%s)", m.GetSearchMode(), m.GetHierarchyReason())
	}
	req.Options = &canonv1.ChatOptions{HierarchyAlpha: proto.Float64(1.5)}
	if _, err := svc.Answer(ctx, req, "", chat.Events{}); !domain.IsInvalid(err) {
		t.Errorf("hierarchy_alpha 1.5: want InvalidError, got %v", err)
	}
}

func TestAnswerWithCheckedCitations(t *testing.T) {
	var prompt string
	fake := &fakeOpenAI{answer: func(p string) string {
		prompt = p
		n := numberOf(p, "dec-cache-v2")
		return fmt.Sprintf("We standardised on Redis Cluster with client-side caching [%d]. Kafka runs billing [%d]. See also [99].", n, n)
	}}
	svc, _ := newService(t, fake, nil)
	var deltas []string
	var summary *canonv1.RetrievalSummary
	res, err := svc.Answer(context.Background(), ask("what cache layer did we standardise on?"), "", chat.Events{
		Retrieval: func(s *canonv1.RetrievalSummary) error { summary = s; return nil },
		Delta:     func(d string) error { deltas = append(deltas, d); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if summary == nil || summary.GetPrimaryCount() == 0 {
		t.Fatal("the retrieval summary must come first")
	}
	if res.GetRefusalReason() != "" || fake.calls.Load() != 1 {
		t.Fatalf("want an answer from one model call: %+v", res)
	}
	if strings.Contains(res.GetAnswer(), "[99]") {
		t.Errorf("an invalid marker survived: %q", res.GetAnswer())
	}
	if len(res.GetCitations()) != 1 || res.GetCitations()[0].GetDocId() != "dec-cache-v2" {
		t.Fatalf("citations = %+v", res.GetCitations())
	}
	m := res.GetMeta()
	if len(m.GetDroppedMarkers()) != 1 || m.GetDroppedMarkers()[0] != 99 {
		t.Errorf("dropped markers = %v", m.GetDroppedMarkers())
	}
	// One supported sentence (Redis) and one unsupported (Kafka runs billing).
	if len(m.GetSentences()) != 2 || !m.GetSentences()[0].GetSupported() || m.GetSentences()[1].GetSupported() {
		t.Errorf("support: %+v", m.GetSentences())
	}
	if m.GetCitationSupport() != 0.5 {
		t.Errorf("citation_support = %v, want 0.5", m.GetCitationSupport())
	}
	if m.GetUsage().GetPromptTokens() != 321 || m.GetUsage().GetCompletionTokens() != 12 || m.GetProvider() != "openai" {
		t.Errorf("usage/provider: %+v", m)
	}
	if want := (321*1.0 + 12*2.0) / 1e6; abs(m.GetCostUsd()-want) > 1e-12 {
		t.Errorf("cost = %v, want %v", m.GetCostUsd(), want)
	}
	if strings.Join(deltas, "") == "" || !strings.Contains(prompt, "## Context") {
		t.Error("deltas were not streamed or the prompt lacks its context block")
	}
	if len(m.GetFollowUps()) < 2 {
		t.Errorf("want 2-3 follow-ups, got %v", m.GetFollowUps())
	}
}

func TestSelfRefusal(t *testing.T) {
	fake := &fakeOpenAI{answer: func(string) string { return domain.SelfRefusalSentinel }}
	svc, _ := newService(t, fake, nil)
	var deltas strings.Builder
	res, err := svc.Answer(context.Background(), ask("how do deployment rollbacks work?"), "", chat.Events{
		Delta: func(d string) error { deltas.WriteString(d); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetRefusalReason() != domain.RefusalLLMSelfRefusal || len(res.GetCitations()) != 0 {
		t.Fatalf("%+v", res)
	}
	if strings.Contains(deltas.String(), domain.SelfRefusalSentinel) {
		t.Error("the sentinel leaked into the stream")
	}
}

func TestProviderOutageIsUnavailable(t *testing.T) {
	fake := &fakeOpenAI{status: http.StatusServiceUnavailable}
	svc, _ := newService(t, fake, nil)
	_, err := svc.Answer(context.Background(), ask("how do deployment rollbacks work?"), "", chat.Events{})
	if !chat.IsUnavailable(err) {
		t.Fatalf("want an Unavailable error, got %v", err)
	}
	if strings.Contains(err.Error(), "sk-test") {
		t.Error("the API key leaked into an error")
	}
}

func TestInvalidChatRequests(t *testing.T) {
	fake := &fakeOpenAI{answer: func(string) string { return "x" }}
	svc, _ := newService(t, fake, nil)
	long := make([]*canonv1.Turn, 51)
	for i := range long {
		long[i] = &canonv1.Turn{Role: "user", Content: "hi"}
	}
	cases := map[string]*canonv1.ChatRequest{
		"empty":        ask("   "),
		"too long":     ask(strings.Repeat("x", 4001)),
		"history":      {Question: "q", History: long, Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}}},
		"role":         {Question: "q", History: []*canonv1.Turn{{Role: "system", Content: "x"}}, Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}}},
		"bad filter":   {Question: "q", Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}, Statuses: []string{"done"}}},
		"invalid utf8": ask("caf\xe9"),
	}
	for name, r := range cases {
		if _, err := svc.Answer(context.Background(), r, "", chat.Events{}); !domain.IsInvalid(err) {
			t.Errorf("%s: want InvalidError, got %v", name, err)
		}
	}
	if fake.calls.Load() != 0 {
		t.Error("invalid requests must not reach the model")
	}
}

func TestLanguageOfRefusal(t *testing.T) {
	svc, _ := newService(t, &fakeOpenAI{answer: func(string) string { return "x" }}, nil)
	de, _ := svc.Answer(context.Background(), ask("how do I knit a scarf?"), "de-DE,de;q=0.9", chat.Events{})
	en, _ := svc.Answer(context.Background(), ask("how do I knit a scarf?"), "", chat.Events{})
	if de.GetRefusalReason() != en.GetRefusalReason() || de.GetAnswer() == en.GetAnswer() || de.GetMeta().GetLanguage() != "de" {
		t.Errorf("de %q / en %q", de.GetAnswer(), en.GetAnswer())
	}
}

// TestLoggingNeverBreaksChat revokes INSERT on chat_logs from the role the service
// uses: the answer still comes back, and the lost row is counted.
func TestLoggingNeverBreaksChat(t *testing.T) {
	p := handbookPool(t)
	ctx := context.Background()
	role := fmt.Sprintf("canon_app_%d", time.Now().UnixNano()%1e9)
	for _, stmt := range []string{
		"CREATE ROLE " + role + " LOGIN",
		"GRANT USAGE ON SCHEMA public TO " + role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO " + role,
		"REVOKE INSERT ON chat_logs FROM " + role,
	} {
		if _, err := p.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		p.Exec(ctx, "DROP OWNED BY "+role) //nolint:errcheck
		p.Exec(ctx, "DROP ROLE "+role)     //nolint:errcheck
	})
	limitedURL := strings.Replace(dbURL, "postgres@", role+"@", 1)
	limited, err := postgres.Connect(ctx, limitedURL)
	if err != nil {
		t.Fatal(err)
	}
	defer limited.Close()
	fake := &fakeOpenAI{answer: func(string) string { return "Rollbacks use the previous release [1]." }}
	svc, logger := newService(t, fake, limited)
	res, err := svc.Answer(ctx, ask("how do deployment rollbacks work?"), "", chat.Events{})
	if err != nil || res.GetAnswer() == "" {
		t.Fatalf("chat must answer although logging fails: %v %+v", err, res)
	}
	logger.Close(ctx)
	if st := logger.Stats(); st.Failed != 1 || st.Written != 0 {
		t.Errorf("logger stats = %+v, want one failed write", st)
	}
}

func TestLoggerDropsWhenFullWithoutBlocking(t *testing.T) {
	p := handbookPool(t)
	logger := chatlog.New(p, 1, nil)
	start := time.Now()
	for i := 0; i < 500; i++ {
		logger.Log(chatlog.Entry{Question: "q"})
	}
	if time.Since(start) > time.Second {
		t.Error("Log blocked")
	}
	logger.Close(context.Background())
	st := logger.Stats()
	if st.Dropped == 0 || st.Written+st.Dropped+st.Failed != 500 {
		t.Errorf("stats = %+v", st)
	}
}

// numberOf finds the [n] the prompt gave a document's first chunk.
func numberOf(prompt, docID string) int {
	for _, line := range strings.Split(prompt, "\n") {
		var n int
		if _, err := fmt.Sscanf(line, "[%d] doc_id: ", &n); err == nil && strings.Contains(line, "doc_id: "+docID+" ") {
			return n
		}
	}
	return 0
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
