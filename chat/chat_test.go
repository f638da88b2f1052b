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

	"github.com/canonkb/canon/chat"
	"github.com/canonkb/canon/chatlog"
	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
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
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Messages) == 0 {
		http.Error(w, "want a chat completions request with messages", http.StatusBadRequest)
		return
	}
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

func ask(q string) *domain.ChatRequest {
	return &domain.ChatRequest{Question: q, Filters: domain.RawFilters{ProjectKeys: []string{"platform"}}}
}

func TestRefusalNeverCallsTheModel(t *testing.T) {
	t.Parallel()
	fake := &fakeOpenAI{answer: func(string) string { return "should not happen" }}
	svc, logger := newService(t, fake, nil)
	res, err := svc.Answer(context.Background(), ask("what is the best banana bread recipe?"), "", chat.Events{})
	if err != nil {
		t.Fatal(err)
	}
	if res.RefusalReason != domain.RefusalNoRelevantContext || len(res.Citations) != 0 || res.Answer == "" {
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
	t.Parallel()
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
				if refused := res.RefusalReason != ""; refused != c.refuse {
					t.Errorf("%s: %q: refused=%v (cosine %.3f, coverage %.2f, %s), want %v", name, q, refused,
						res.Meta.BestVectorSimilarity, res.Meta.BestKeywordCoverage,
						res.Meta.SearchMode, c.refuse)
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
	t.Parallel()
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
			var summary *domain.RetrievalSummary
			res, err := svc.Answer(ctx, ask(tc.q), "", chat.Events{
				Retrieval: func(s domain.RetrievalSummary) error { summary = &s; return nil }})
			if err != nil {
				t.Fatal(err)
			}
			m := res.Meta
			mode, reason := hierarchy.ModeFlat, hierarchy.ReasonNoEntityNamed
			if tc.entity != "" {
				mode, reason = hierarchy.ModeTwoPass, hierarchy.ReasonConfident
			}
			if m.SearchMode != mode || m.HierarchyReason != reason ||
				summary.SearchMode != mode || summary.HierarchyReason != reason {
				t.Fatalf("meta %s (%s), summary %s (%s), want %s (%s)", m.SearchMode, m.HierarchyReason,
					summary.SearchMode, summary.HierarchyReason, mode, reason)
			}
			if tc.entity != "" && !slices.ContainsFunc(m.Pass1Entities, func(e domain.EntityScore) bool {
				return e.EntityID == tc.entity && e.Chosen
			}) {
				t.Errorf("pass 1 did not choose %s: %v", tc.entity, m.Pass1Entities)
			}
			if refused := res.RefusalReason != ""; refused != tc.refuse {
				t.Fatalf("refused=%v (cosine %.3f, coverage %.2f), want %v", refused,
					m.BestVectorSimilarity, m.BestKeywordCoverage, tc.refuse)
			}
			found, err := h.Search(ctx, &domain.SearchRequest{Query: tc.q, Filters: ask(tc.q).Filters})
			if err != nil {
				t.Fatal(err)
			}
			if tc.refuse {
				if tc.entity != "" && found.Primary[0].Score < 0.5 {
					t.Errorf("the best two-pass score is %.3f; this case should show a high mixed score refused",
						found.Primary[0].Score)
				}
				return
			}
			// Every citation is a chunk of the entity's documents (one of their hits,
			// or the summary the context adds), or of a graph neighbour of theirs
			// (the related context, which the extractive provider quotes when the
			// documents themselves do not answer).
			linked := map[string]string{}
			for _, hit := range found.Primary {
				linked[hit.DocID] = hit.LinkingEntity
			}
			for _, hit := range found.Expanded {
				linked[hit.DocID] = tc.entity
			}
			if len(res.Citations) == 0 {
				t.Fatalf("no citations: %q", res.Answer)
			}
			for _, c := range res.Citations {
				if e, ok := linked[c.DocID]; !ok || e != tc.entity {
					t.Errorf("citation [%d] %s was linked by %q, want %s", c.N, c.DocID, e, tc.entity)
				}
			}
		})
	}

	// Asked not to, chat retrieves flat and says so.
	req := ask("What has Dana been working on?")
	req.Options = domain.ChatOptions{Hierarchy: new(false)}
	res, err := svc.Answer(ctx, req, "", chat.Events{})
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Meta; m.SearchMode != hierarchy.ModeFlat || m.HierarchyReason != hierarchy.ReasonDisabled {
		t.Errorf("hierarchy=false: %s (%s)", m.SearchMode, m.HierarchyReason)
	}
	req.Options = domain.ChatOptions{HierarchyAlpha: new(1.5)}
	if _, err := svc.Answer(ctx, req, "", chat.Events{}); !domain.IsInvalid(err) {
		t.Errorf("hierarchy_alpha 1.5: want InvalidError, got %v", err)
	}
}

func TestAnswerWithCheckedCitations(t *testing.T) {
	t.Parallel()
	var prompt string
	fake := &fakeOpenAI{answer: func(p string) string {
		prompt = p
		n := numberOf(p, "dec-cache-v2")
		return fmt.Sprintf("We standardised on Redis Cluster with client-side caching [%d]. Kafka runs billing [%d]. See also [99].", n, n)
	}}
	svc, _ := newService(t, fake, nil)
	var deltas []string
	var summary *domain.RetrievalSummary
	res, err := svc.Answer(context.Background(), ask("what cache layer did we standardise on?"), "", chat.Events{
		Retrieval: func(s domain.RetrievalSummary) error { summary = &s; return nil },
		Delta:     func(d string) error { deltas = append(deltas, d); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if summary == nil || summary.PrimaryCount == 0 {
		t.Fatal("the retrieval summary must come first")
	}
	if res.RefusalReason != "" || fake.calls.Load() != 1 {
		t.Fatalf("want an answer from one model call: %+v", res)
	}
	if strings.Contains(res.Answer, "[99]") {
		t.Errorf("an invalid marker survived: %q", res.Answer)
	}
	if len(res.Citations) != 1 || res.Citations[0].DocID != "dec-cache-v2" {
		t.Fatalf("citations = %+v", res.Citations)
	}
	m := res.Meta
	if len(m.DroppedMarkers) != 1 || m.DroppedMarkers[0] != 99 {
		t.Errorf("dropped markers = %v", m.DroppedMarkers)
	}
	// One supported sentence (Redis) and one unsupported (Kafka runs billing).
	if len(m.Sentences) != 2 || !m.Sentences[0].Supported || m.Sentences[1].Supported {
		t.Errorf("support: %+v", m.Sentences)
	}
	if m.CitationSupport != 0.5 {
		t.Errorf("citation_support = %v, want 0.5", m.CitationSupport)
	}
	if m.Usage.PromptTokens != 321 || m.Usage.CompletionTokens != 12 || m.Provider != "openai" {
		t.Errorf("usage/provider: %+v", m)
	}
	if want := (321*1.0 + 12*2.0) / 1e6; abs(m.CostUSD-want) > 1e-12 {
		t.Errorf("cost = %v, want %v", m.CostUSD, want)
	}
	if strings.Join(deltas, "") == "" || !strings.Contains(prompt, "## Context") {
		t.Error("deltas were not streamed or the prompt lacks its context block")
	}
	if len(m.FollowUps) < 2 {
		t.Errorf("want 2-3 follow-ups, got %v", m.FollowUps)
	}
}

// The prompt names each document's owners, and an answer that says who owns
// what it cites is supported by the cited chunk: the owners are part of what
// the model was shown about it.
func TestOwnersInThePromptSupportTheAnswer(t *testing.T) {
	t.Parallel()
	var prompt string
	fake := &fakeOpenAI{answer: func(p string) string {
		prompt = p
		return fmt.Sprintf("Dana Okafor and Lee Chen own the cache layer standard [%d].", numberOf(p, "dec-cache-v2"))
	}}
	svc, _ := newService(t, fake, nil)
	res, err := svc.Answer(context.Background(), ask("who owns the cache layer standard?"), "", chat.Events{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(prompt, "doc_id: dec-cache-v2 | title: ") || !strings.Contains(prompt, "| owners: Dana Okafor, Lee Chen") {
		t.Errorf("the prompt does not name dec-cache-v2's owners:\n%s", prompt)
	}
	if s := res.Meta.Sentences; len(s) != 1 || !s[0].Supported {
		t.Errorf("support: %+v", s)
	}
}

// The context carries each primary document's summary once, just before the
// document's first chunk, when the page has other chunks of it only: asked how
// rollbacks work, the page holds the rollback runbook's short sections (after
// the rollback, its introduction, feature flags), and the answer leads with the
// summary, which says what the runbook covers (automatic aborts first).
func TestContextCarriesDocumentSummaries(t *testing.T) {
	t.Parallel()
	svc, _ := twoPassService(t)
	var passages []*domain.Hit
	var retrieved domain.RetrievalSummary
	res, err := svc.Answer(context.Background(), ask("how do deployment rollbacks work?"), "", chat.Events{
		Retrieval: func(s domain.RetrievalSummary) error { retrieved = s; return nil },
		Passages:  func(p []*domain.Hit) error { passages = p; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.RefusalReason != "" {
		t.Fatalf("refused: %+v", res.Meta)
	}
	summaries, primary := map[string]int{}, 0
	first := map[string]int{} // document -> index of its first passage
	for i, h := range passages {
		if h.Origin != domain.OriginPrimary {
			continue
		}
		primary++
		if _, ok := first[h.DocID]; !ok {
			first[h.DocID] = i
		}
		if h.IsSummary {
			summaries[h.DocID]++
			if h.DocID == "rb-deploy-rollback" && first[h.DocID] != i {
				t.Errorf("the runbook's summary is passage %d, after its first chunk (%d)", i+1, first[h.DocID]+1)
			}
		}
	}
	for doc, n := range summaries {
		if n != 1 {
			t.Errorf("%s: %d summary passages, want 1", doc, n)
		}
	}
	if summaries["rb-deploy-rollback"] != 1 {
		t.Fatalf("no summary of the rollback runbook among the passages: %v", summaries)
	}
	if primary <= retrieved.PrimaryCount {
		t.Errorf("%d primary passages for the %d hits retrieval reported: no summary added", primary, retrieved.PrimaryCount)
	}
	if !strings.Contains(res.Answer, "automatic aborts") || len(res.Citations) == 0 || res.Citations[0].DocID != "rb-deploy-rollback" {
		t.Errorf("answer %q cites %+v; want the runbook's summary first", res.Answer, res.Citations)
	}
}

// The answer numbers what it cites from [1] in order of first use, whatever the
// prompt's numbering; the stream shows the same numbers, each passage announced
// (Cite) before the text that first carries its marker.
func TestAnswerNumbersCitationsInOrderOfUse(t *testing.T) {
	t.Parallel()
	var first, second int
	fake := &fakeOpenAI{answer: func(p string) string {
		second = numberOf(p, "dec-cache-v2")
		first = lastNumber(p)
		return fmt.Sprintf("Some context comes first [%d]. We standardised on Redis Cluster [%d, %d]. Again [%d].",
			first, second, first, second)
	}}
	svc, _ := newService(t, fake, nil)
	var shown strings.Builder
	type cite struct {
		n     int
		doc   string
		after int // bytes shown before the announcement
	}
	var cites []cite
	res, err := svc.Answer(context.Background(), ask("what cache layer did we standardise on?"), "", chat.Events{
		Cite:  func(n int, h *domain.Hit) error { cites = append(cites, cite{n, h.DocID, shown.Len()}); return nil },
		Delta: func(d string) error { shown.WriteString(d); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if first == second || first == 1 {
		t.Fatalf("the test needs two passages, the first cited not numbered 1 in the prompt (got %d and %d)", first, second)
	}
	const want = "Some context comes first [1]. We standardised on Redis Cluster [2, 1]. Again [2]."
	if res.Answer != want || shown.String() != want {
		t.Errorf("answer %q, streamed %q; want %q", res.Answer, shown.String(), want)
	}
	if len(res.Citations) != 2 || res.Citations[0].N != 1 || res.Citations[1].N != 2 ||
		res.Citations[1].DocID != "dec-cache-v2" {
		t.Fatalf("citations = %+v", res.Citations)
	}
	if len(cites) != 2 || cites[0].n != 1 || cites[0].doc != res.Citations[0].DocID || cites[1].n != 2 ||
		cites[1].doc != "dec-cache-v2" {
		t.Fatalf("announced %+v", cites)
	}
	for _, c := range cites {
		if marker := strings.Index(want, fmt.Sprintf("[%d", c.n)); c.after > marker {
			t.Errorf("[%d] was announced after %d bytes were shown, its marker starts at %d", c.n, c.after, marker)
		}
	}
	for _, sp := range res.Meta.Sentences {
		if !slices.ContainsFunc([][]int{{1}, {2, 1}, {2}}, func(w []int) bool { return slices.Equal(w, sp.Cited) }) {
			t.Errorf("sentence %q cites %v: want answer numbers", sp.Sentence, sp.Cited)
		}
	}
}

func TestSelfRefusal(t *testing.T) {
	t.Parallel()
	fake := &fakeOpenAI{answer: func(string) string { return domain.SelfRefusalSentinel }}
	svc, _ := newService(t, fake, nil)
	var deltas strings.Builder
	res, err := svc.Answer(context.Background(), ask("how do deployment rollbacks work?"), "", chat.Events{
		Delta: func(d string) error { deltas.WriteString(d); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.RefusalReason != domain.RefusalLLMSelfRefusal || len(res.Citations) != 0 {
		t.Fatalf("%+v", res)
	}
	if strings.Contains(deltas.String(), domain.SelfRefusalSentinel) {
		t.Error("the sentinel leaked into the stream")
	}
}

func TestProviderOutageIsUnavailable(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	fake := &fakeOpenAI{answer: func(string) string { return "x" }}
	svc, _ := newService(t, fake, nil)
	long := make([]domain.Turn, 51)
	for i := range long {
		long[i] = domain.Turn{Role: "user", Content: "hi"}
	}
	platform := domain.RawFilters{ProjectKeys: []string{"platform"}}
	cases := map[string]struct {
		req  *domain.ChatRequest
		want string
	}{
		"empty":        {ask("   "), "question is empty"},
		"too long":     {ask(strings.Repeat("x", 4001)), "question is 4001 characters long; the limit is 4000"},
		"history":      {&domain.ChatRequest{Question: "q", History: long, Filters: platform}, "history has 51 turns; the limit is 50"},
		"role":         {&domain.ChatRequest{Question: "q", History: []domain.Turn{{Role: "system", Content: "x"}}, Filters: platform}, `history[0].role must be user or assistant (got "system")`},
		"bad filter":   {&domain.ChatRequest{Question: "q", Filters: domain.RawFilters{ProjectKeys: []string{"platform"}, Statuses: []string{"done"}}}, `unknown value "done" in statuses`},
		"invalid utf8": {ask("caf\xe9"), "question is not valid UTF-8 text"},
		"NUL":          {ask("a\x00b"), "question contains a NUL character"},
		// Each says what is wrong with the turn, not a list of every rule.
		"NUL in history":          {&domain.ChatRequest{Question: "q", History: []domain.Turn{{Role: "user", Content: "a\x00b"}}, Filters: platform}, "history[0].content contains a NUL character (U+0000)"},
		"invalid utf8 in history": {&domain.ChatRequest{Question: "q", History: []domain.Turn{{Role: "user", Content: "\xff"}}, Filters: platform}, "history[0].content is not valid UTF-8 text"},
		"long history turn":       {&domain.ChatRequest{Question: "q", History: []domain.Turn{{Role: "user", Content: strings.Repeat("é", 20001)}}, Filters: platform}, "history[0].content is 20001 characters long; the limit is 20000"},
	}
	for name, c := range cases {
		if _, err := svc.Answer(context.Background(), c.req, "", chat.Events{}); !domain.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want InvalidError containing %q, got %v", name, c.want, err)
		}
	}
	if fake.calls.Load() != 0 {
		t.Error("invalid requests must not reach the model")
	}
}

func TestLanguageOfRefusal(t *testing.T) {
	t.Parallel()
	svc, _ := newService(t, &fakeOpenAI{answer: func(string) string { return "x" }}, nil)
	de, _ := svc.Answer(context.Background(), ask("how do I knit a scarf?"), "de-DE,de;q=0.9", chat.Events{})
	en, _ := svc.Answer(context.Background(), ask("how do I knit a scarf?"), "", chat.Events{})
	if de.RefusalReason != en.RefusalReason || de.Answer == en.Answer || de.Meta.Language != "de" {
		t.Errorf("de %q / en %q", de.Answer, en.Answer)
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
		for _, stmt := range []string{"DROP OWNED BY " + role, "DROP ROLE " + role} {
			if _, err := p.Exec(ctx, stmt); err != nil {
				t.Errorf("cleanup: %s: %v", stmt, err)
			}
		}
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
	if err != nil || res.Answer == "" {
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
	// The entries name no project: those not dropped are counted as such, not written.
	if st.Dropped == 0 || st.Written+st.Dropped+st.Failed+st.NoProject != 500 {
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

// lastNumber is the highest passage number of the prompt.
func lastNumber(prompt string) int {
	last := 0
	for _, line := range strings.Split(prompt, "\n") {
		var n int
		if _, err := fmt.Sscanf(line, "[%d] doc_id: ", &n); err == nil {
			last = max(last, n)
		}
	}
	return last
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// TestFollowUpsReadWithThePreviousQuestion: a follow-up that finds nothing to
// answer from on its own ("why?"), or that names its subject only by referring
// back ("how long does it take?"), is retrieved for with the question the user
// asked before it, and says so (meta.retrieval_query); a question that stands
// on its own is answered as asked, whatever came before; a change of subject
// that the two together do not answer is still refused.
func TestFollowUpsReadWithThePreviousQuestion(t *testing.T) {
	t.Parallel()
	svc, _ := twoPassService(t)
	cache := []domain.Turn{
		{Role: "user", Content: "what cache layer did we standardise on?"},
		{Role: "assistant", Content: "We standardised on Redis Cluster with client-side caching [1]."},
	}
	tests := []struct {
		name      string
		question  string
		history   []domain.Turn
		refused   bool
		retrieval string
		cites     string
		says      string
	}{
		{name: "alone, a bare why is refused", question: "why?", refused: true},
		{name: "after a question, why is read with it", question: "why?", history: cache,
			retrieval: "what cache layer did we standardise on? why?", cites: "dec-cache-v2"},
		{name: "a question that stands alone is answered as asked", question: "how do deployment rollbacks work?",
			history: cache, cites: "rb-deploy-rollback"},
		{name: "a question that refers back is read with the one before it first", question: "how long does it take?",
			history:   []domain.Turn{{Role: "user", Content: "how do deployment rollbacks work?"}},
			retrieval: "how do deployment rollbacks work? how long does it take?", cites: "rb-deploy-rollback"},
		{name: "the follow-up asks, about both questions' subject", question: "who leads it?",
			history:   []domain.Turn{{Role: "user", Content: "what message broker do we use?"}},
			retrieval: "what message broker do we use? who leads it?", says: "Lee Chen"},
		{name: "a follow-up the two cannot answer is refused", question: "what is the best banana bread recipe?",
			history: cache, refused: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := ask(tc.question)
			req.History = tc.history
			res, err := svc.Answer(context.Background(), req, "", chat.Events{})
			if err != nil {
				t.Fatal(err)
			}
			if refused := res.RefusalReason != ""; refused != tc.refused {
				t.Fatalf("refusal %q, want refused=%v; answer %q", res.RefusalReason, tc.refused, res.Answer)
			}
			if res.Meta.RetrievalQuery != tc.retrieval {
				t.Errorf("retrieval_query = %q, want %q", res.Meta.RetrievalQuery, tc.retrieval)
			}
			if !strings.Contains(res.Answer, tc.says) {
				t.Errorf("answer %q does not say %q", res.Answer, tc.says)
			}
			if tc.cites != "" && !slices.ContainsFunc(res.Citations, func(c domain.Citation) bool { return c.DocID == tc.cites }) {
				t.Errorf("want %s cited; citations %+v, answer %q", tc.cites, res.Citations, res.Answer)
			}
		})
	}
}
