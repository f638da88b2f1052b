package bench

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/canonkb/canon/chat"
	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/ingest"
)

// Asker is the chat turn under test (*chat.Service).
type Asker interface {
	Answer(ctx context.Context, req *domain.ChatRequest, acceptLanguage string, ev chat.Events) (*domain.ChatResponse, error)
}

// ScenarioSetup is the system the scenarios run against.
type ScenarioSetup struct {
	// Ingester loads the corpus; nil means it is loaded already.
	Ingester *ingest.Ingester
	// Searcher answers the scenarios' searches as SearchService does: the two-pass
	// *hierarchy.Searcher, so options.hierarchy and expect.search_mode mean what
	// they say (a flat *search.Searcher always reports flat).
	Searcher Searcher
	// Chat answers the scenarios that expect a refusal or an answer; it should use
	// the extractive provider so the suite needs no network.
	Chat     Asker
	Embedder string // recorded in the report, e.g. "hash/384"
	Profile  string
}

// ScenarioOutcome is what happened to one scenario.
type ScenarioOutcome struct {
	ID       string   `json:"id"`
	Feature  string   `json:"feature,omitempty"`
	Question string   `json:"question"`
	Fusion   string   `json:"fusion"`
	Projects []string `json:"projects"`
	Pending  string   `json:"pending,omitempty"`
	Passed   bool     `json:"passed"`
	Failures []string `json:"failures,omitempty"`
	// Documents as ranked (distinct, first hit's order) and the graph sections.
	Primary    []string `json:"primary"`
	RunnerUp   []string `json:"runner_up,omitempty"`
	Expanded   []string `json:"expanded,omitempty"`
	Rejected   []string `json:"rejected,omitempty"`
	SearchMode string   `json:"search_mode"`
	// HierarchyReason says why (meta.hierarchy_reason; "" from a flat searcher).
	HierarchyReason string `json:"hierarchy_reason,omitempty"`
	// The chat turn, when the scenario has a refusal expectation.
	Refused        *bool   `json:"refused,omitempty"`
	RefusalReason  string  `json:"refusal_reason,omitempty"`
	BestSimilarity float64 `json:"best_vector_similarity"`
	BestCoverage   float64 `json:"best_keyword_coverage"`
	// The answer, when the scenario has an answer expectation.
	Answer *AnswerOutcome `json:"answer,omitempty"`
	// Compare: the flat and two-pass runs of a compare_hierarchy file.
	Compare *CompareOutcome `json:"compare,omitempty"`
	// Per-scenario metrics, when it lists relevant documents.
	NDCG5     *float64 `json:"ndcg_at_5,omitempty"`
	MRR       *float64 `json:"mrr,omitempty"`
	LatencyMs float64  `json:"search_ms"`
}

// ScenarioMetrics are the suite's numbers over the scenarios that are not pending.
// A metric no scenario measures is nil.
type ScenarioMetrics struct {
	Scenarios int `json:"scenarios"`
	Passed    int `json:"passed"`
	Pending   int `json:"pending"`
	// PassRate: passed / scenarios (pending ones excluded).
	PassRate *float64 `json:"pass_rate"`
	// NDCG5 and MRR (MRR@10) are means over the scenarios with relevant documents,
	// the ranking being the primary then runner-up documents.
	NDCG5  *float64 `json:"ndcg_at_5"`
	MRR    *float64 `json:"mrr"`
	Judged int      `json:"judged"`
	// RefusalAccuracy: share of refusal expectations met.
	RefusalAccuracy *float64 `json:"refusal_accuracy"`
	RefusalChecks   int      `json:"refusal_checks"`
	// GraphRecall / RejectedRecall: expected documents found in the expanded /
	// rejected sections, over all scenarios (micro average).
	GraphRecall      *float64 `json:"graph_recall"`
	GraphExpected    int      `json:"graph_expected"`
	RejectedRecall   *float64 `json:"rejected_recall"`
	RejectedExpected int      `json:"rejected_expected"`
	AnswerMetrics
	EntityMetrics
}

// ScenarioReport is the result of one file.
type ScenarioReport struct {
	Name     string            `json:"name"`
	Corpus   string            `json:"corpus"`
	Prefix   string            `json:"project_prefix"`
	Today    string            `json:"today,omitempty"`
	Embedder string            `json:"embedder,omitempty"`
	Profile  string            `json:"profile,omitempty"`
	Ingest   ScenarioIngest    `json:"ingest"`
	Metrics  ScenarioMetrics   `json:"metrics"`
	Gate     ScenarioGate      `json:"gate"`
	GateFail []string          `json:"gate_failures,omitempty"`
	Outcomes []ScenarioOutcome `json:"scenarios"`
	// NowPassing lists pending scenarios that pass: drop their pending marks.
	NowPassing []string `json:"pending_now_passing,omitempty"`
	ElapsedMs  float64  `json:"elapsed_ms"`
}

// ScenarioIngest summarises the corpus load.
type ScenarioIngest struct {
	Files     int `json:"files"`
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
	Pruned    int `json:"pruned"`
	Chunks    int `json:"chunks"`
}

// GatePassed reports whether every threshold of the file is met.
func (r *ScenarioReport) GatePassed() bool { return len(r.GateFail) == 0 }

// RunScenarios loads the corpus (idempotently; skipped without an ingester) and
// runs every scenario.
func RunScenarios(ctx context.Context, f *ScenarioFile, setup ScenarioSetup) (*ScenarioReport, error) {
	start := time.Now()
	dir, err := f.CorpusDir()
	if err != nil {
		return nil, err
	}
	rep := &ScenarioReport{
		Name: f.Name, Corpus: dir, Prefix: f.ProjectPrefix, Today: f.Today, Embedder: setup.Embedder,
		Profile: setup.Profile, Gate: f.Gate,
	}
	if setup.Ingester != nil {
		res, err := IngestScenarioCorpus(ctx, setup.Ingester, f)
		if err != nil {
			return nil, err
		}
		rep.Ingest = ScenarioIngest{Files: res.Files, Created: res.Created, Updated: res.Updated,
			Unchanged: res.Unchanged, Pruned: res.Pruned, Chunks: res.Chunks}
	}
	for _, s := range f.Scenarios {
		o, err := runScenario(ctx, f, s, setup)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", s.ID, err)
		}
		rep.Outcomes = append(rep.Outcomes, o)
	}
	rep.score(f)
	rep.ElapsedMs = ms(time.Since(start))
	return rep, nil
}

// request builds the search request of a scenario.
func (f *ScenarioFile) request(s Scenario) *domain.SearchRequest {
	projects := s.Projects
	if len(projects) == 0 {
		projects = []string{f.Project}
	}
	stored := make([]string, len(projects))
	for i, p := range projects {
		stored[i] = f.StoredProject(p)
	}
	fl := s.Filters
	return &domain.SearchRequest{
		Query: s.Question,
		Filters: domain.RawFilters{
			ProjectKeys: stored, Tags: fl.Tags, SourceTypes: fl.SourceTypes, CanonicalTypes: fl.CanonicalTypes,
			Statuses: fl.Statuses, EvidenceTiers: fl.EvidenceTiers, DateFrom: fl.DateFrom, DateTo: fl.DateTo,
			DocIDs: fl.DocIDs, DocIDsMode: fl.DocIDsMode, IncludeSuperseded: fl.IncludeSuperseded,
		},
		Options: domain.SearchOptions{
			Fusion: s.Fusion, Limit: s.Limit,
			GraphExpansion: s.Options.GraphExpansion, RejectedInjection: s.Options.RejectedInjection,
			Hierarchy: s.Options.Hierarchy,
		},
	}
}

func runScenario(ctx context.Context, f *ScenarioFile, s Scenario, setup ScenarioSetup) (ScenarioOutcome, error) {
	req := f.request(s)
	if f.CompareHierarchy {
		compareRequest(req)
	}
	o := ScenarioOutcome{ID: s.ID, Feature: s.Feature, Question: s.Question, Pending: s.Pending}
	o.Projects = slices.Clone(s.Projects)
	if len(o.Projects) == 0 {
		o.Projects = []string{f.Project}
	}
	start := time.Now()
	res, err := setup.Searcher.Search(ctx, req)
	o.LatencyMs = ms(time.Since(start))
	if err != nil {
		return o, err
	}
	o.Fusion = res.Meta.SearchStrategy.FusionMethod
	o.SearchMode = res.Meta.SearchMode
	if o.SearchMode == "" {
		o.SearchMode = "flat"
	}
	o.HierarchyReason = res.Meta.HierarchyReason
	o.Primary = docsOf(res.Primary)
	o.RunnerUp = docsOf(res.RunnerUp)
	o.Expanded = docsOf(res.Expanded)
	o.Rejected = docsOf(res.Rejected)

	e := s.Expect
	fail := func(format string, args ...any) { o.Failures = append(o.Failures, fmt.Sprintf(format, args...)) }
	// Primary then runner-up documents, each once (a runner-up may be a further
	// chunk of a primary document).
	ranked := docsOf(append(slices.Clone(res.Primary), res.RunnerUp...))
	rank := func(list []string, doc string) int { return slices.Index(list, doc) + 1 }
	for _, doc := range slices.Sorted(maps.Keys(e.Top)) {
		k := e.Top[doc]
		switch r := rank(o.Primary, doc); {
		case r == 0 && rank(ranked, doc) > 0:
			fail("top: %s should be in the top %d, it is a runner-up (rank %d)", doc, k, rank(ranked, doc))
		case r == 0:
			fail("top: %s should be in the top %d, it is not ranked", doc, k)
		case r > k:
			fail("top: %s should be in the top %d, it is at rank %d", doc, k, r)
		}
	}
	for _, pair := range e.Above {
		a, b := rank(ranked, pair[0]), rank(ranked, pair[1])
		switch {
		case a == 0:
			fail("above: %s should rank above %s, it is not ranked", pair[0], pair[1])
		case b > 0 && b < a:
			fail("above: %s (rank %d) should rank above %s (rank %d)", pair[0], a, pair[1], b)
		}
	}
	for _, doc := range e.Absent {
		if r := rank(o.Primary, doc); r > 0 {
			fail("absent: %s should not be a primary hit, it is at rank %d", doc, r)
		}
	}
	for _, doc := range e.Expanded {
		if !slices.Contains(o.Expanded, doc) {
			fail("expanded: %s should be in the expanded section (got %s)", doc, list(o.Expanded))
		}
	}
	for _, doc := range e.NotExpanded {
		if slices.Contains(o.Expanded, doc) {
			fail("not_expanded: %s should not be in the expanded section", doc)
		}
	}
	for _, doc := range e.Rejected {
		if !slices.Contains(o.Rejected, doc) {
			fail("rejected: %s should be in the rejected section (got %s)", doc, list(o.Rejected))
		}
	}
	for _, doc := range e.NotRejected {
		if slices.Contains(o.Rejected, doc) {
			fail("not_rejected: %s should not be in the rejected section", doc)
		}
	}
	if n := e.MaxExpanded; n != nil && len(o.Expanded) > *n {
		fail("max_expanded: want at most %d expanded documents, got %d (%s)", *n, len(o.Expanded), list(o.Expanded))
	}
	if n := e.MaxRejected; n != nil && len(o.Rejected) > *n {
		fail("max_rejected: want at most %d rejected approaches, got %d (%s)", *n, len(o.Rejected), list(o.Rejected))
	}
	if e.SearchMode != "" && e.SearchMode != o.SearchMode {
		why := ""
		if o.HierarchyReason != "" {
			why = " (" + o.HierarchyReason + ")"
		}
		fail("search_mode: want %s, got %s%s", e.SearchMode, o.SearchMode, why)
	}
	if e.HierarchyReason != "" && e.HierarchyReason != o.HierarchyReason {
		fail("hierarchy_reason: want %s, got %q", e.HierarchyReason, o.HierarchyReason)
	}
	if len(o.Primary) < e.MinPrimary {
		fail("min_primary: want at least %d primary documents, got %d", e.MinPrimary, len(o.Primary))
	}
	if len(e.Projects) > 0 {
		for _, h := range res.Primary {
			p := strings.TrimPrefix(h.ProjectKey, f.ProjectPrefix)
			if !slices.Contains(e.Projects, p) {
				fail("projects: %s comes from project %s, want %s", h.DocID, p, strings.Join(e.Projects, " or "))
				break
			}
		}
	}
	if c := e.Hits; c != nil {
		for _, h := range res.Primary {
			if why := c.violation(h); why != "" {
				fail("hits: %s %s", h.DocID, why)
				break
			}
		}
	}
	if len(s.Relevant) > 0 {
		n, m := NDCG(ranked, s.Relevant, 5), MRR(ranked, s.Relevant, 10)
		o.NDCG5, o.MRR = &n, &m
	}
	if f.CompareHierarchy {
		if o.Compare, err = compare(ctx, setup.Searcher, req, s, o.SearchMode, ranked); err != nil {
			return o, err
		}
	}
	if e.Refused != nil || e.Answer != nil {
		creq := &domain.ChatRequest{
			Question: s.Question, Filters: req.Filters,
			Options: domain.ChatOptions{Fusion: s.Fusion, Limit: s.Limit, Language: "en",
				Hierarchy: s.Options.Hierarchy},
		}
		ans, err := setup.Chat.Answer(ctx, creq, "", chat.Events{})
		if err != nil {
			return o, fmt.Errorf("chat: %w", err)
		}
		refused := ans.RefusalReason != ""
		o.Refused, o.RefusalReason = &refused, ans.RefusalReason
		o.BestSimilarity = ans.Meta.BestVectorSimilarity
		o.BestCoverage = ans.Meta.BestKeywordCoverage
		if e.Refused != nil && refused != *e.Refused {
			want := map[bool]string{true: "refused", false: "answered"}
			fail("refused: want %s, got %s (best cosine %.3f, best keyword coverage %.2f)",
				want[*e.Refused], want[refused], o.BestSimilarity, o.BestCoverage)
		}
		if e.Answer != nil {
			var failures []string
			o.Answer, failures = checkAnswer(e.Answer, ans)
			o.Failures = append(o.Failures, failures...)
		}
	}
	o.Passed = len(o.Failures) == 0
	return o, nil
}

func (c *HitConstraint) violation(h *domain.Hit) string {
	switch {
	case len(c.Statuses) > 0 && !slices.Contains(c.Statuses, h.Status):
		return fmt.Sprintf("has status %q, want one of %s", h.Status, list(c.Statuses))
	case len(c.CanonicalTypes) > 0 && !slices.Contains(c.CanonicalTypes, h.CanonicalType):
		return fmt.Sprintf("has canonical type %q, want one of %s", h.CanonicalType, list(c.CanonicalTypes))
	case len(c.TagsAny) > 0 && !slices.ContainsFunc(h.Tags, func(t string) bool { return slices.Contains(c.TagsAny, t) }):
		return fmt.Sprintf("has tags %s, want any of %s", list(h.Tags), list(c.TagsAny))
	case len(c.Docs) > 0 && !slices.Contains(c.Docs, h.DocID):
		return fmt.Sprintf("is not one of %s", list(c.Docs))
	case len(c.LinkingEntities) > 0 && !slices.Contains(c.LinkingEntities, h.LinkingEntity):
		return fmt.Sprintf("was linked by entity %q, want one of %s", h.LinkingEntity, list(c.LinkingEntities))
	}
	return ""
}

// score computes the suite metrics and checks the gate.
func (r *ScenarioReport) score(f *ScenarioFile) {
	m := &r.Metrics
	var ndcg, mrr float64
	var refusalOK, graphFound, rejectedFound int
	byID := map[string]Scenario{}
	for _, s := range f.Scenarios {
		byID[s.ID] = s
	}
	for _, o := range r.Outcomes {
		if o.Pending != "" {
			m.Pending++
			if o.Passed {
				r.NowPassing = append(r.NowPassing, o.ID)
			}
			continue
		}
		s := byID[o.ID]
		m.Scenarios++
		if o.Passed {
			m.Passed++
		}
		if o.NDCG5 != nil {
			m.Judged++
			ndcg += *o.NDCG5
			mrr += *o.MRR
		}
		if s.Expect.Refused != nil {
			m.RefusalChecks++
			if *o.Refused == *s.Expect.Refused {
				refusalOK++
			}
		}
		for _, d := range s.Expect.Expanded {
			m.GraphExpected++
			if slices.Contains(o.Expanded, d) {
				graphFound++
			}
		}
		for _, d := range s.Expect.Rejected {
			m.RejectedExpected++
			if slices.Contains(o.Rejected, d) {
				rejectedFound++
			}
		}
	}
	m.PassRate = ratio(float64(m.Passed), m.Scenarios)
	m.NDCG5 = ratio(ndcg, m.Judged)
	m.MRR = ratio(mrr, m.Judged)
	m.RefusalAccuracy = ratio(float64(refusalOK), m.RefusalChecks)
	m.GraphRecall = ratio(float64(graphFound), m.GraphExpected)
	m.RejectedRecall = ratio(float64(rejectedFound), m.RejectedExpected)
	m.AnswerMetrics = scoreAnswers(r.Outcomes)
	m.EntityMetrics = scoreEntities(r.Outcomes)

	for _, g := range r.gateRows() {
		switch {
		case g.min == nil:
		case g.value == nil:
			r.GateFail = append(r.GateFail, fmt.Sprintf("%s: no scenario measures it (threshold %.2f)", g.name, *g.min))
		case *g.value < *g.min-1e-9:
			r.GateFail = append(r.GateFail, fmt.Sprintf("%s %.3f is below the threshold %.2f", g.name, *g.value, *g.min))
		}
		switch {
		case g.max == nil:
		case g.value == nil:
			r.GateFail = append(r.GateFail, fmt.Sprintf("%s: no scenario measures it (maximum %.2f)", g.name, *g.max))
		case *g.value > *g.max+1e-9:
			r.GateFail = append(r.GateFail, fmt.Sprintf("%s %.3f is above the maximum %.2f", g.name, *g.value, *g.max))
		}
	}
}

// gateRow is one metric with its threshold: a minimum, or (defect rates) a maximum.
type gateRow struct {
	name            string
	value, min, max *float64
	detail          string
}

func (r *ScenarioReport) gateRows() []gateRow {
	m, g := r.Metrics, r.Gate
	return append([]gateRow{
		{name: "pass_rate", value: m.PassRate, min: g.PassRate, detail: fmt.Sprintf("%d of %d scenarios (%d pending)", m.Passed, m.Scenarios, m.Pending)},
		{name: "ndcg_at_5", value: m.NDCG5, min: g.NDCG5, detail: fmt.Sprintf("%d judged scenarios", m.Judged)},
		{name: "mrr", value: m.MRR, min: g.MRR, detail: fmt.Sprintf("%d judged scenarios (MRR@10)", m.Judged)},
		{name: "refusal_accuracy", value: m.RefusalAccuracy, min: g.RefusalAccuracy, detail: fmt.Sprintf("%d refusal checks", m.RefusalChecks)},
		{name: "graph_recall", value: m.GraphRecall, min: g.GraphRecall, detail: fmt.Sprintf("%d expected expanded documents", m.GraphExpected)},
		{name: "rejected_recall", value: m.RejectedRecall, min: g.RejectedRecall, detail: fmt.Sprintf("%d expected rejected approaches", m.RejectedExpected)},
	}, append(r.answerGateRows(), r.entityGateRows()...)...)
}

func ratio(num float64, n int) *float64 {
	if n == 0 {
		return nil
	}
	v := num / float64(n)
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

// docsOf lists the distinct documents of hits in order.
func docsOf(hits []*domain.Hit) []string {
	out := []string{}
	for _, h := range hits {
		if !slices.Contains(out, h.DocID) {
			out = append(out, h.DocID)
		}
	}
	return out
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
