package hierarchy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/canonkb/canon/ingest"
)

// namedByEntityRank is the spec the gate must never contradict: EntityRank gives
// some entity of the projects a name signal (a form in the question as written,
// or a word close to a name by pg_trgm's <%), over every entity.
const namedByEntityRank = `
SELECT EXISTS (
    SELECT FROM entities e
    WHERE e.project_id = ANY ($2::bigint[])
      AND (EXISTS (SELECT FROM unnest(array_append(e.aliases, e.name)) AS n (form)
                   WHERE n.form <> '' AND strpos(lower($1), lower(n.form)) > 0)
           OR EXISTS (SELECT FROM unnest(e.name_parts) AS p (part) WHERE strpos(lower($1), p.part) > 0)
           OR EXISTS (SELECT FROM regexp_split_to_table(lower($1), $3) AS w (word)
                      WHERE length(w.word) >= 3 AND w.word <% lower(e.name))))`

func TestNameGateNeverHidesANamedEntity(t *testing.T) {
	t.Parallel()
	h := newSearcher(t)
	ctx := context.Background()
	ids, err := h.ProjectIDs(ctx, []string{"platform", "payments"})
	if err != nil || len(ids) != 2 {
		t.Fatalf("project ids %v: %v", ids, err)
	}
	questions := gateQuestions(t, h)
	var skipped, unnamed int
	for _, q := range questions {
		none, err := h.gate.namesNone(ctx, q, ids)
		if err != nil {
			t.Fatal(err)
		}
		var named bool
		if err := h.pool.QueryRow(ctx, namedByEntityRank, q, ids, WordSeparators).Scan(&named); err != nil {
			t.Fatal(err)
		}
		if none && named {
			t.Errorf("the gate skips pass 1 for %q, which names an entity", q)
		}
		if !named {
			unnamed++
			if none {
				skipped++
			}
		}
	}
	t.Logf("%d questions; %d name no entity, and the gate skipped pass 1 for %d of them", len(questions), unnamed, skipped)
	// Only non-ASCII questions and near misses of the trigram bound may run pass 1
	// without a name: the gate must skip most of the rest.
	if unnamed < 50 || float64(skipped) < 0.8*float64(unnamed) {
		t.Errorf("the gate skipped pass 1 for %d of %d questions naming nobody", skipped, unnamed)
	}
}

// gateQuestions are questions around the handbook's entity names: the names,
// aliases and name parts as written, inside other words, with each kind of typo,
// and among the handbook's own words; plus non-ASCII and punctuated ones.
func gateQuestions(t *testing.T, h *Searcher) []string {
	t.Helper()
	rows, err := h.pool.Query(context.Background(),
		`SELECT lower(name), aliases, name_parts FROM entities ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var forms []string
	for rows.Next() {
		var name string
		var aliases, parts []string
		if err := rows.Scan(&name, &aliases, &parts); err != nil {
			t.Fatal(err)
		}
		forms = append(forms, name)
		forms = append(forms, aliases...)
		forms = append(forms, parts...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	vocabulary := strings.Fields(`how do we roll back a deployment what is the cache layer who owns the failover
		runbook which queue did we choose why was kafka rejected error E5032 retries payments refunds
		postgres migration incident review standard latency budget on call rotation access keys audit
		teams platforms dashboards alerts owners decided meeting notes relay atlas projects`)
	rng := rand.New(rand.NewPCG(7, 11))
	typo := func(s string) string {
		b := []rune(s)
		if len(b) < 2 {
			return s
		}
		i := rng.IntN(len(b) - 1)
		switch rng.IntN(4) {
		case 0: // swap
			b[i], b[i+1] = b[i+1], b[i]
		case 1: // drop
			b = append(b[:i], b[i+1:]...)
		case 2: // double
			b = append(b[:i+1], b[i:]...)
		default: // replace
			b[i] = rune('a' + rng.IntN(26))
		}
		return string(b)
	}
	var qs []string
	for _, f := range forms {
		qs = append(qs,
			"what has "+f+" been working on?",
			"WHO IS "+strings.ToUpper(f)+"?",
			"notes from "+typo(f)+" about the cache",
			"notes from "+typo(typo(f))+" about the cache",
			"x"+f+"x rollout",
		)
	}
	for range 300 {
		words := make([]string, 3+rng.IntN(6))
		for i := range words {
			words[i] = vocabulary[rng.IntN(len(vocabulary))]
		}
		qs = append(qs, strings.Join(words, " ")+"?")
	}
	qs = append(qs,
		"how do deployment rollbacks work?", "error E5032", "what did the team decide on queues?",
		"was hat Dana über Postgres gesagt?", "José's notes", "Dana_Okafor", "dana-okafor", "d.okafor",
		"platform", "k8s!!", "", "   ", "a", "why?",
		"What’s Dana working on?", "“platform team” — who?", "rollbacks… again–why?",
	)
	return qs
}

func TestNameGateDecides(t *testing.T) {
	t.Parallel()
	h := newSearcher(t)
	tests := []struct {
		question string
		reason   string
	}{
		{"how do deployment rollbacks work?", ReasonNoEntityNamed},
		{"error E5032", ReasonNoEntityNamed},
		{"What has Dana been working on?", ReasonConfident},
		// Misspelt: pg_trgm finds the name close to a word, pass 1 runs.
		{"What does Prya Raman own?", ReasonConfident},
		{"What did the platfrm team agree on?", ReasonNoConfidentEntity},
		// "fleet" holds "lee": pass 1 runs and finds no name as a phrase.
		{"how does the fleet roll out?", ReasonNoConfidentEntity},
		// Not ASCII: left to pass 1.
		{"wie läuft ein Rollback?", ReasonNoConfidentEntity},
		// Typographic quotes and dashes are decided like ASCII.
		{"What’s the rollback procedure — step by step?", ReasonNoEntityNamed},
		{"What’s Dana working on?", ReasonConfident},
	}
	for _, tt := range tests {
		t.Run(tt.question, func(t *testing.T) {
			m := mustSearch(t, h, req(tt.question)).Meta
			if m.HierarchyReason != tt.reason {
				t.Fatalf("reason %q, want %q (entities %v)", m.HierarchyReason, tt.reason, m.Pass1Entities)
			}
			if ran := len(m.Pass1Entities) > 0; ran == (tt.reason == ReasonNoEntityNamed) {
				t.Errorf("pass1_entities %v for reason %s", m.Pass1Entities, tt.reason)
			}
		})
	}
	off := newSearcher(t, func(c *Config) { c.NameGate = false })
	if m := mustSearch(t, off, req("how do deployment rollbacks work?")).Meta; m.HierarchyReason != ReasonNoConfidentEntity {
		t.Errorf("without the gate: reason %q, want %q", m.HierarchyReason, ReasonNoConfidentEntity)
	}
}

// TestNameGateSeesNewEntities: a person added after the gate read the names is
// named as soon as the ingest's invalidation reaches the searcher.
func TestNameGateSeesNewEntities(t *testing.T) {
	t.Parallel()
	p := freshHandbook(t)
	h := New(p, flatSearcher(p), DefaultConfig())
	question := "what has Zebulon Quartermaine been working on?"
	if m := mustSearch(t, h, req(question)).Meta; m.HierarchyReason != ReasonNoEntityNamed {
		t.Fatalf("before: reason %q, want %q", m.HierarchyReason, ReasonNoEntityNamed)
	}
	in := newIngester(p)
	in.AfterChange = h.Invalidate
	page := ingest.File{Path: "people/zebulon.md", Content: []byte("---\nid: zebulon\ntitle: Zebulon Quartermaine\n" +
		"type: person\nrole: Engineer, platform\n---\n# Zebulon Quartermaine\n\nWorks on the deployment pipeline.\n")}
	res, err := in.Ingest(context.Background(), []ingest.File{page}, ingest.Options{Project: "platform"})
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("ingest: %v %v", err, res.Errors)
	}
	if m := mustSearch(t, h, req(question)).Meta; m.HierarchyReason != ReasonConfident {
		t.Fatalf("after: reason %q, want %q (entities %v)", m.HierarchyReason, ReasonConfident, m.Pass1Entities)
	}
}

// TestTrigramsArePgTrgms compares the gate's trigrams of ASCII words with show_trgm's.
func TestTrigramsArePgTrgms(t *testing.T) {
	t.Parallel()
	h := newSearcher(t)
	for _, w := range []string{"dana", "a", "ab", "k8s", "o'brien", "x-ray_2", "e5032", "aaa", "banana", "a\x01b", "??"} {
		var want []string
		if err := h.pool.QueryRow(context.Background(), `SELECT show_trgm($1)`, w).Scan(&want); err != nil {
			t.Fatal(err)
		}
		got := trigrams(w)
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("trigrams(%q) = %q, show_trgm %q", w, got, want)
		}
	}
}

func TestCanSkip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		w         Weights
		threshold float64
		want      bool
	}{
		{DefaultWeights(), 0.5, true},
		// Role, facts and vector can reach the threshold without a name.
		{DefaultWeights(), 0.35, false},
		{Weights{Role: 1}, 0.5, false},
		{Weights{NameExact: 1, Vector: 1}, 0.5, false},
		{Weights{NameExact: 1, Vector: 1}, 0.6, true},
		{Weights{}, 0.5, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%+v/%g", tt.w, tt.threshold), func(t *testing.T) {
			if got := canSkip(Pass1Params{Weights: tt.w, Threshold: tt.threshold}); got != tt.want {
				t.Errorf("canSkip = %v, want %v", got, tt.want)
			}
		})
	}
}

// BenchmarkNameGate is what the gate costs a question once the names are cached
// (against a pass 1 it spares: BenchmarkPass1).
func BenchmarkNameGate(b *testing.B) {
	h := newSearcher(b)
	ctx := context.Background()
	ids := []int64{projectID(b, h.pool, "platform")}
	for _, tt := range benchQuestions {
		b.Run(tt.name, func(b *testing.B) {
			if _, err := h.gate.namesNone(ctx, tt.q, ids); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := h.gate.namesNone(ctx, tt.q, ids); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestGateReadsQuestionsAsTheDatabase(t *testing.T) {
	t.Parallel()
	set := &gateSettings{typographic: map[rune]bool{'\u2019': true}}
	for _, c := range " ?!.,'-" {
		set.separators[c] = true
	}
	tests := []struct {
		q     string
		ok    bool
		words []string
	}{
		{"What's Dana's plan?", true, []string{"what", "s", "dana", "s", "plan"}},
		{"What\u2019s new", true, []string{"what", "s", "new"}},
		// A quote the database did not confirm, and a letter outside ASCII.
		{"\u201cnew\u201d", false, nil},
		{"Jürgen", false, nil},
		{"  --  ", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.q, func(t *testing.T) {
			lowered, ok := set.lower(tt.q)
			if ok != tt.ok {
				t.Fatalf("lower(%q) ok = %v", tt.q, ok)
			}
			if !ok {
				return
			}
			if got := set.splitWords(lowered); !slices.Equal(got, tt.words) {
				t.Errorf("words %q, want %q", got, tt.words)
			}
		})
	}
}

// TestForgetQuestionsKeepsTheNames: what a question nobody asked recently meets.
func TestForgetQuestionsKeepsTheNames(t *testing.T) {
	t.Parallel()
	h := newSearcher(t)
	mustSearch(t, h, req("What has Dana been working on?"))
	h.ForgetQuestions()
	if h.pass1.Len() != 0 || h.links.Len() != 0 || h.gate.names.Len() == 0 {
		t.Errorf("after ForgetQuestions: %d pass-1 results, %d link lists, %d projects' names",
			h.pass1.Len(), h.links.Len(), h.gate.names.Len())
	}
	h.Invalidate([]string{"platform"})
	if h.gate.names.Len() != 0 {
		t.Errorf("Invalidate kept %d projects' names", h.gate.names.Len())
	}
}
