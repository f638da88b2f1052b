package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/canonkb/canon/bench"
	"github.com/canonkb/canon/chat"
	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/hierarchy"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/llm"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/search"
)

func TestParseScenariosRejectsMistakes(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"unknown key": {`corpus: c
project: p
scenarios:
  - id: a
    question: q
    expect: {topp: {x: 1}}`, "field topp not found"},
		"bad fusion": {`corpus: c
project: p
scenarios:
  - {id: a, question: q, fusion: bm25, expect: {min_primary: 1}}`, `fusion "bm25"`},
		"duplicate id": {`corpus: c
project: p
scenarios:
  - {id: a, question: q, expect: {min_primary: 1}}
  - {id: a, question: q, expect: {min_primary: 1}}`, "duplicate id"},
		"no expectation": {`corpus: c
project: p
scenarios:
  - {id: a, question: q}`, "no expectation"},
		"bad search mode": {`corpus: c
project: p
scenarios:
  - {id: a, question: q, expect: {search_mode: twopass}}`, "use two_pass or flat"},
		"bad hierarchy reason": {`corpus: c
project: p
scenarios:
  - {id: a, question: q, expect: {hierarchy_reason: confident}}`, `hierarchy_reason "confident": use one of confident_entities`},
		"bad project": {`corpus: c
project: Platform
scenarios:
  - {id: a, question: q, expect: {min_primary: 1}}`, "not a valid project key"},
		"negative max": {`corpus: c
project: p
scenarios:
  - {id: a, question: q, expect: {max_expanded: -1}}`, "expect.max_expanded: must not be negative"},
		"empty question": {`corpus: c
project: p
scenarios:
  - {id: a, question: "  ", expect: {min_primary: 1}}`, "question"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := bench.ParseScenarios([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestShippedScenarioFileIsValid(t *testing.T) {
	f, err := bench.LoadScenarios("scenarios/handbook.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Scenarios) < 40 {
		t.Errorf("handbook.yaml has %d scenarios, want 40 or more", len(f.Scenarios))
	}
	if _, err := f.CorpusDir(); err != nil {
		t.Error(err)
	}
}

func TestPrefixProject(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"---\nid: a\nproject: platform\n---\n\nproject: body\n", "---\nid: a\nproject: x-platform\n---\n\nproject: body\n"},
		{"---\nproject: \"payments\"  # quoted\ntags: [a]\n---\nbody\n", "---\nproject: x-payments\ntags: [a]\n---\nbody\n"},
		{"---\nid: a\n---\nproject: body\n", "---\nid: a\n---\nproject: body\n"},
		{"no frontmatter\nproject: body\n", "no frontmatter\nproject: body\n"},
		{"---\nnested:\n  project: keep\n---\n", "---\nnested:\n  project: keep\n---\n"},
	} {
		if got := string(bench.PrefixProject([]byte(tc.in), "x-")); got != tc.want {
			t.Errorf("PrefixProject(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// scenarioSearch answers every question with the same result.
type scenarioSearch struct{ res *domain.SearchResult }

func (f scenarioSearch) Search(context.Context, *domain.SearchRequest) (*domain.SearchResult, error) {
	return f.res, nil
}

type scenarioChat struct{ refuse bool }

func (f scenarioChat) Answer(context.Context, *domain.ChatRequest, string, chat.Events) (*domain.ChatResponse, error) {
	if f.refuse {
		return &domain.ChatResponse{RefusalReason: domain.RefusalNoRelevantContext, Meta: domain.ChatMeta{}}, nil
	}
	return &domain.ChatResponse{Answer: "a", Meta: domain.ChatMeta{}}, nil
}

func scenarioHits(project string, docs ...string) []*domain.Hit {
	var out []*domain.Hit
	for _, d := range docs {
		out = append(out, &domain.Hit{DocID: d, ProjectKey: project, Status: "accepted"})
	}
	return out
}

func TestScenarioExpectationsAndMetrics(t *testing.T) {
	dir := t.TempDir()
	writeScenarioFile(t, filepath.Join(dir, "kb", "a.md"), "---\nid: a\n---\n# A\n\ntext\n")
	file := `corpus: kb
project: platform
project_prefix: t-
gate: {pass_rate: 1.0, ndcg_at_5: 0.9, graph_recall: 1.0, rejected_recall: 0.5, refusal_accuracy: 1.0}
scenarios:
  - id: good
    question: q
    relevant: {a: 3, b: 1}
    expect:
      top: {a: 1, b: 2}
      above: [[a, b], [b, zz]]
      absent: [x]
      expanded: [e1]
      rejected: [r1]
      max_expanded: 1
      max_rejected: 1
      projects: [platform]
      hits: {statuses: [accepted]}
      hierarchy_reason: disabled
      refused: false
  - id: bad
    question: q
    relevant: {c: 3}
    expect:
      top: {c: 1, b: 1}
      above: [[b, a]]
      absent: [a]
      expanded: [e9]
      rejected: [r9]
      not_rejected: [r1]
      max_expanded: 0
      max_rejected: 0
      search_mode: two_pass
      hierarchy_reason: confident_entities
      projects: [payments]
      hits: {linking_entities: [dana]}
      refused: true
  - id: pending-passing
    question: q
    pending: not built
    expect: {top: {a: 1}}
`
	writeScenarioFile(t, filepath.Join(dir, "s.yaml"), file)
	f, err := bench.LoadScenarios(filepath.Join(dir, "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res := &domain.SearchResult{
		Primary:  scenarioHits("t-platform", "a", "a", "b"),
		RunnerUp: scenarioHits("t-platform", "c"),
		Expanded: scenarioHits("t-platform", "e1"),
		Rejected: scenarioHits("t-platform", "r1"),
		Meta:     domain.SearchMeta{SearchMode: "flat", HierarchyReason: "disabled"},
	}
	// No ingester: the corpus counts as loaded.
	rep, err := bench.RunScenarios(context.Background(), f, bench.ScenarioSetup{
		Searcher: scenarioSearch{res}, Chat: scenarioChat{},
	})
	if err != nil {
		t.Fatal(err)
	}
	good, bad, pend := rep.Outcomes[0], rep.Outcomes[1], rep.Outcomes[2]
	if !good.Passed {
		t.Errorf("good failed: %v", good.Failures)
	}
	wantFailures := []string{
		"top: b should be in the top 1, it is at rank 2",
		"top: c should be in the top 1, it is a runner-up (rank 3)",
		"above: b (rank 2) should rank above a (rank 1)",
		"absent: a should not be a primary hit, it is at rank 1",
		"expanded: e9 should be in the expanded section (got e1)",
		"rejected: r9 should be in the rejected section (got r1)",
		"not_rejected: r1 should not be in the rejected section",
		"max_expanded: want at most 0 expanded documents, got 1 (e1)",
		"max_rejected: want at most 0 rejected approaches, got 1 (r1)",
		"search_mode: want two_pass, got flat (disabled)",
		`hierarchy_reason: want confident_entities, got "disabled"`,
		"projects: a comes from project platform, want payments",
		`hits: a was linked by entity "", want one of dana`,
		"refused: want refused, got answered (best cosine 0.000, best keyword coverage 0.00)",
	}
	if strings.Join(bad.Failures, "\n") != strings.Join(wantFailures, "\n") {
		t.Errorf("bad failures:\n%s\nwant:\n%s", strings.Join(bad.Failures, "\n"), strings.Join(wantFailures, "\n"))
	}
	if !pend.Passed || len(rep.NowPassing) != 1 || rep.NowPassing[0] != "pending-passing" {
		t.Errorf("pending scenario: passed %v, now passing %v", pend.Passed, rep.NowPassing)
	}
	m := rep.Metrics
	if m.Scenarios != 2 || m.Passed != 1 || m.Pending != 1 || *m.PassRate != 0.5 {
		t.Errorf("counts: %+v", m)
	}
	// good: a (gain 3) at 1, b (gain 1) at 2: ideal ranking, nDCG 1. bad: c at 3:
	// 3/log2(4) / 3 = 0.5.
	if *m.NDCG5 != 0.75 || *m.MRR != (1+1.0/3)/2 {
		t.Errorf("nDCG@5 %v, MRR %v", *m.NDCG5, *m.MRR)
	}
	if *m.GraphRecall != 0.5 || *m.RejectedRecall != 0.5 || *m.RefusalAccuracy != 0.5 {
		t.Errorf("graph %v, rejected %v, refusal %v", *m.GraphRecall, *m.RejectedRecall, *m.RefusalAccuracy)
	}
	if rep.GatePassed() {
		t.Error("the gate passed")
	}
	got := strings.Join(rep.GateFail, "\n")
	for _, want := range []string{"pass_rate 0.500", "ndcg_at_5 0.750", "graph_recall 0.500", "refusal_accuracy 0.500"} {
		if !strings.Contains(got, want) {
			t.Errorf("gate failures %q lack %q", got, want)
		}
	}
	if strings.Contains(got, "rejected_recall") {
		t.Errorf("rejected_recall 0.5 meets its threshold 0.5: %q", got)
	}
	var text strings.Builder
	rep.WriteText(&text, true)
	for _, want := range []string{"FAIL  bad", "PASS* pending-passing", "gate: FAILED"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

// TestScenariosOnDatabase runs a small corpus end to end: prefixed projects beside
// an unprefixed one of the same name, idempotent reload, pruning, the chat gate.
func TestScenariosOnDatabase(t *testing.T) {
	pool := dbtest.FreshPool(t)
	ctx := context.Background()
	emb := embed.NewHash(384)
	in := ingest.New(pool, emb, markdown.Options{ChunkTokens: 512, OverlapTokens: 64})
	// Someone else's "platform" project in the same database.
	other := "---\nid: cache-other\nproject: platform\n---\n# Memcached everywhere\n\nWe use memcached for every cache.\n"
	if _, err := in.Ingest(ctx, []ingest.File{{Path: "o.md", Content: []byte(other)}}, ingest.Options{Project: "platform"}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	writeScenarioFile(t, filepath.Join(dir, "kb", "platform", "cache.md"), `---
id: dec-cache
title: Cache layer standard
type: decision
status: accepted
project: platform
rejects: [rej-memcached]
---
# Cache layer standard

We standardised on Redis Cluster as the cache layer for every service.
`)
	writeScenarioFile(t, filepath.Join(dir, "kb", "platform", "rej.md"), `---
id: rej-memcached
title: "Rejected: Memcached"
type: rejected-approach
status: accepted
project: platform
---
# Rejected: Memcached

Memcached has no persistence and no replication.
`)
	// A person and a runbook she owns: a question naming her runs in two passes.
	writeScenarioFile(t, filepath.Join(dir, "kb", "platform", "kim.md"), `---
id: kim
title: Kim Sato
type: person
role: Site reliability engineer
project: platform
---
# Kim Sato

Kim keeps the queues healthy.
`)
	writeScenarioFile(t, filepath.Join(dir, "kb", "platform", "restart.md"), `---
id: rb-restart
title: Restarting the queue workers
type: runbook
status: active
owners: [kim]
project: platform
---
# Restarting the queue workers

This runbook drains the workers, restarts them one at a time, then checks the backlog.
`)
	writeScenarioFile(t, filepath.Join(dir, "kb", "payments", "refunds.md"), `---
id: pay-refunds
title: Refunds stuck in pending
type: runbook
status: active
project: payments
---
# Refunds stuck in pending

Check the provider status, then re-sync the refund.
`)
	writeScenarioFile(t, filepath.Join(dir, "s.yaml"), `corpus: kb
project: platform
project_prefix: sc-
today: "2025-09-01"
gate: {pass_rate: 1.0, refusal_accuracy: 1.0, rejected_recall: 1.0}
scenarios:
  - id: cache
    question: what cache layer did we standardise on?
    expect:
      top: {dec-cache: 1}
      absent: [cache-other]
      rejected: [rej-memcached]
      projects: [platform]
      refused: false
      answer: {facts: [Redis Cluster], cite: [dec-cache]}
  - id: refunds
    question: refunds stuck in pending
    projects: [payments]
    expect: {top: {pay-refunds: 1}, projects: [payments]}
  - id: off-topic
    question: how do I bake banana bread?
    expect: {refused: true, search_mode: flat, hierarchy_reason: no_entity_named}
  - id: person
    question: which runbooks does Kim own?
    options: {hierarchy: true}
    expect:
      search_mode: two_pass
      hierarchy_reason: confident_entities
      top: {rb-restart: 2}
      hits: {linking_entities: [kim]}
      refused: false
  - id: person-flat
    question: which runbooks does Kim own?
    options: {hierarchy: false}
    expect: {search_mode: flat, hierarchy_reason: disabled}
`)
	f, err := bench.LoadScenarios(filepath.Join(dir, "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	flat := search.New(pool, emb, search.Config{
		Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed), Profile: domain.ProfileHashKeywordLed,
		Graph: search.DefaultGraphConfig(),
	})
	flat.Today = func() time.Time { return time.Date(2025, 9, 1, 0, 0, 0, 0, time.UTC) }
	// As `canon bench scenarios` runs them: searches and chat turns through the
	// two-pass searcher.
	searcher := hierarchy.New(pool, flat, hierarchy.DefaultConfig())
	prompt, err := domain.ParsePrompt(domain.DefaultPromptTemplate())
	if err != nil {
		t.Fatal(err)
	}
	asker := chat.New(searcher, llm.NewExtractive(), prompt, nil, chat.Config{
		Gate: domain.Gate{MinSimilarity: 0.30, MinKeywordCoverage: 0.60}, SupportThreshold: 0.5})
	setup := bench.ScenarioSetup{Ingester: in, Searcher: searcher, Chat: asker}

	rep, err := bench.RunScenarios(ctx, f, setup)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.GatePassed() {
		var b strings.Builder
		rep.WriteText(&b, true)
		t.Fatalf("gate failed:\n%s", b.String())
	}
	if rep.Ingest.Created != 5 {
		t.Errorf("first run created %d documents, want 5", rep.Ingest.Created)
	}
	// Again: nothing to store. Then drop a file: it is pruned.
	if rep, err = bench.RunScenarios(ctx, f, setup); err != nil || rep.Ingest.Unchanged != 5 || rep.Ingest.Created+rep.Ingest.Updated != 0 {
		t.Fatalf("second run: %+v, %v", rep.Ingest, err)
	}
	if err := os.Remove(filepath.Join(dir, "kb", "payments", "refunds.md")); err != nil {
		t.Fatal(err)
	}
	if rep, err = bench.RunScenarios(ctx, f, setup); err != nil {
		t.Fatal(err)
	}
	if rep.Ingest.Pruned != 1 || rep.Outcomes[1].Passed {
		t.Errorf("after removing refunds.md: pruned %d, refunds scenario passed %v", rep.Ingest.Pruned, rep.Outcomes[1].Passed)
	}
	var projects []string
	rows, err := pool.Query(ctx, "SELECT project_key FROM projects ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		projects = append(projects, k)
	}
	if got := strings.Join(projects, ","); got != "platform,sc-payments,sc-platform" {
		t.Errorf("projects %s, want platform,sc-payments,sc-platform", got)
	}
}

func writeScenarioFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
