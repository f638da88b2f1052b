package bench_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/canonkb/canon/bench"
	"github.com/canonkb/canon/chat"
	"github.com/canonkb/canon/domain"
)

// answerChat answers each question with a fixed response.
type answerChat map[string]*domain.ChatResponse

func (a answerChat) Answer(_ context.Context, req *domain.ChatRequest, _ string, _ chat.Events) (*domain.ChatResponse, error) {
	return a[req.Question], nil
}

func citations(docs ...string) []domain.Citation {
	var out []domain.Citation
	for i, d := range docs {
		out = append(out, domain.Citation{N: i + 1, DocID: d})
	}
	return out
}

func TestAnswerExpectations(t *testing.T) {
	dir := t.TempDir()
	writeScenarioFile(t, filepath.Join(dir, "kb", "a.md"), "---\nid: a\n---\n# A\n\ntext\n")
	writeScenarioFile(t, filepath.Join(dir, "s.yaml"), `corpus: kb
project: platform
gate: {fact_recall: 0.9, citation_precision: 0.5, citation_recall: 0.5, max_fragment_rate: 0, max_duplicate_rate: 0}
scenarios:
  - id: good
    question: what cache layer?
    expect:
      answer:
        facts: [Redis Cluster, [client-side caching, RESP3]]
        cite: [[dec-cache-v2, dec-cache]]
        may_cite: [mod-session-store]
  - id: steps
    question: how do I roll back?
    expect:
      answer: {facts: [shipctl rollback], cite: [rb-deploy-rollback]}
  - id: bad
    question: what error code?
    expect:
      answer:
        facts: ["402", PAY-1002]
        cite: [api-error-codes]
  - id: refused
    question: banana bread?
    expect:
      answer: {facts: [flour]}
`)
	f, err := bench.LoadScenarios(filepath.Join(dir, "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	asker := answerChat{
		// Renumbered markers map through the citations.
		"what cache layer?": {Answer: "We standardised on **Redis Cluster** with `RESP3` tracking [2]. Sessions live there too [1].",
			Citations: citations("mod-session-store", "dec-cache-v2"), Meta: domain.ChatMeta{}},
		// Steps under a lead-in, whose items share words, are neither fragments nor
		// repeats; nor is a sentence whose code holds shell pipes.
		"how do I roll back?": {Answer: "To roll back [1]:\n\n1. `shipctl rollback <service> --to <v>` [1]\n2. `shipctl rollback <service> --to <v> --dry-run` [1]\n\n| step | command |\n|---|---|\n| 1 | `shipctl rollback` [1] |\n\n" +
			"Verify it: `curl -s https://x/jwks.json | jq '.keys | length'` returns 2 [1].",
			Citations: citations("rb-deploy-rollback"), Meta: domain.ChatMeta{}},
		"what error code?": {Answer: "code | HTTP | meaning PAY-1001 | 400 | missing PAY-1002 | 402 | declined [1]. We return errors as follows: [2]. the card was declined by the issuer [1]. The card was declined by the issuer [1]. See [7].",
			Citations: citations("api-error-codes", "blog-errors"), Meta: domain.ChatMeta{}},
		"banana bread?": {Answer: "I cannot answer.", RefusalReason: "no_relevant_context", Meta: domain.ChatMeta{}},
	}
	rep, err := bench.RunScenarios(context.Background(), f, bench.ScenarioSetup{
		Searcher: scenarioSearch{&domain.SearchResult{Meta: domain.SearchMeta{}}}, Chat: asker})
	if err != nil {
		t.Fatal(err)
	}
	good, steps, bad, refused := rep.Outcomes[0], rep.Outcomes[1], rep.Outcomes[2], rep.Outcomes[3]
	if !good.Passed || !steps.Passed {
		t.Errorf("good: %v; steps: %v", good.Failures, steps.Failures)
	}
	if got := strings.Join(good.Answer.Cited, ","); got != "dec-cache-v2,mod-session-store" {
		t.Errorf("good cites %s, want dec-cache-v2,mod-session-store (through the citations, not the numbers)", got)
	}
	wantBad := []string{
		`answer: marker [7] points at no citation`,
		`answer: cites blog-errors, which is not expected`,
		`answer: fragment (a table flattened into a line): "code | HTTP | meaning PAY-1001 | 400 | missing PAY-1002 | 402 | declined [1]."`,
		`answer: fragment (a lead-in without its items): "We return errors as follows: [2]."`,
		`answer: fragment (starts mid-sentence): "the card was declined by the issuer [1]."`,
		`answer: repeats an earlier sentence: "The card was declined by the issuer [1]."`,
		`answer: fragment (too short to be a sentence): "See [7]."`,
	}
	if got := strings.Join(bad.Failures, "\n"); got != strings.Join(wantBad, "\n") {
		t.Errorf("bad failures:\n%s\nwant:\n%s", got, strings.Join(wantBad, "\n"))
	}
	if strings.Join(refused.Failures, "") != "answer: refused (no_relevant_context)" {
		t.Errorf("refused: %v", refused.Failures)
	}

	m := rep.Metrics
	// Facts: good 2/2, steps 1/1, bad 2/2, refused 0/1. Cited documents: good 2
	// (both expected), steps 1, bad 2 + one unmapped marker (1 expected);
	// required: all 3. Units: good 2 sentences, steps a lead-in, 2 items, a row
	// and a sentence, bad 5 sentences of which 4 fragments and 1 repeat.
	want := map[string]float64{"fact_recall": 5.0 / 6, "citation_precision": 4.0 / 6, "citation_recall": 1,
		"fragment_rate": 4.0 / 12, "duplicate_rate": 1.0 / 12}
	got := map[string]float64{"fact_recall": *m.FactRecall, "citation_precision": *m.CitationPrecision,
		"citation_recall": *m.CitationRecall, "fragment_rate": *m.FragmentRate, "duplicate_rate": *m.DuplicateRate}
	for k, v := range want {
		if d := got[k] - v; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s = %.4f, want %.4f", k, got[k], v)
		}
	}
	if m.AnswerChecks != 4 || m.Units != 12 {
		t.Errorf("answer checks %d, units %d", m.AnswerChecks, m.Units)
	}
	gate := strings.Join(rep.GateFail, "\n")
	for _, want := range []string{"fact_recall 0.833 is below the threshold 0.90", "fragment_rate 0.333 is above the maximum 0.00",
		"duplicate_rate 0.083 is above the maximum 0.00"} {
		if !strings.Contains(gate, want) {
			t.Errorf("gate failures %q lack %q", gate, want)
		}
	}
	if strings.Contains(gate, "citation_precision") || strings.Contains(gate, "citation_recall") {
		t.Errorf("precision and recall meet their thresholds: %q", gate)
	}
	var text strings.Builder
	rep.WriteText(&text, true)
	for _, want := range []string{"fragment_rate        0.333   <= 0.00", "answer:   We standardised on **Redis Cluster**"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

func TestAnswerExpectationValidation(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"empty answer": {`corpus: c
project: p
scenarios:
  - {id: a, question: q, expect: {answer: {}}}`, "expect.answer: list facts or cite"},
		"empty alternative": {`corpus: c
project: p
scenarios:
  - {id: a, question: q, expect: {answer: {facts: [[a, ""]]}}}`, "expect.answer: item 0 is empty"},
		"misspelt key": {`corpus: c
project: p
scenarios:
  - {id: a, question: q, expect: {answer: {fact: [a]}}}`, "field fact not found"},
		"a map as a fact": {`corpus: c
project: p
scenarios:
  - {id: a, question: q, expect: {answer: {facts: [{a: b}]}}}`, "want a string or a list of strings"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := bench.ParseScenarios([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestShippedAnswerFileIsValid(t *testing.T) {
	f, err := bench.LoadScenarios("scenarios/answers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range f.Scenarios {
		if s.Expect.Answer != nil && len(s.Expect.Answer.Facts) > 0 && len(s.Expect.Answer.Cite) > 0 {
			n++
		}
	}
	if n < 30 {
		t.Errorf("answers.yaml has %d questions with facts and documents to cite, want 30 or more", n)
	}
}
