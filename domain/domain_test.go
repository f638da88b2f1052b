package domain

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s changed; review and rerun with -update.\n--- got ---\n%s", name, got)
	}
}

func TestPromptGolden(t *testing.T) {
	t.Parallel()
	p, err := ParsePrompt(DefaultPromptTemplate())
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]PromptInput{
		"prompt_full.golden": {
			Rejected: []PromptChunk{{N: 1, DocID: "rej-memcached-2023", Title: "Rejected: Memcached as the shared cache tier",
				HeadingPath: []string{"Rejected: Memcached as the shared cache tier"}, Status: "accepted", EvidenceTier: "official",
				Text: "Memcached was rejected: no persistence, no replication."}},
			Related: []PromptChunk{{N: 2, DocID: "mod-session-store", Title: "Session store", Status: "active",
				Edge: "depends_on from dec-cache-v2", Text: "The session store keeps sessions in the shared cache."}},
			Context: []PromptChunk{
				{N: 3, DocID: "dec-cache-v2", Title: "Cache layer standard", HeadingPath: []string{"Cache layer standard", "Decision"},
					Status: "accepted", EvidenceTier: "official", Owners: []string{"Dana Okafor", "Lee Chen"},
					Text: "We standardised on Redis Cluster."},
				{N: 4, DocID: "note-cache-musings", Title: "Musings on the cache layer", EvidenceTier: "blog", Text: "Opinions are my own."},
			},
		},
		"prompt_context_only.golden": {
			Context: []PromptChunk{{N: 1, DocID: "rb-deploy-rollback", Title: "Runbook: deployment rollbacks", Status: "active",
				Text: "Run `deployctl rollback` with the previous release id."}},
		},
		"prompt_empty.golden": {},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := p.Render(in)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name, out)
		})
	}
}

func TestPromptBlockOrder(t *testing.T) {
	t.Parallel()
	p, _ := ParsePrompt(DefaultPromptTemplate())
	out, _ := p.Render(PromptInput{
		Rejected: []PromptChunk{{N: 1, DocID: "r", Text: "x"}},
		Related:  []PromptChunk{{N: 2, DocID: "e", Text: "y"}},
		Context:  []PromptChunk{{N: 3, DocID: "c", Text: "z"}},
	})
	r, e, c := strings.Index(out, "⚠ REJECTED APPROACHES"), strings.Index(out, "📎 RELATED CONTEXT"), strings.Index(out, "## Context")
	if r < 0 || e < 0 || c < 0 || r > e || e > c {
		t.Fatalf("blocks out of order (%d, %d, %d):\n%s", r, e, c, out)
	}
	if !strings.Contains(out, SelfRefusalSentinel) {
		t.Error("the prompt must carry the self-refusal sentinel")
	}
}

func TestParsePromptRejectsBrokenTemplates(t *testing.T) {
	t.Parallel()
	for _, tmpl := range []string{"{{.Nope}}", "{{range .Context}}", "{{template \"missing\" .}}"} {
		if _, err := ParsePrompt(tmpl); err == nil {
			t.Errorf("%q should not parse", tmpl)
		}
	}
}

func TestCheckMarkers(t *testing.T) {
	t.Parallel()
	valid := func(n int) bool { return n >= 1 && n <= 3 }
	cases := []struct {
		in, want       string
		cited, dropped []int
	}{
		{"Redis is standard [1].", "Redis is standard [1].", []int{1}, nil},
		{"A [2][1]. B [9].", "A [2][1]. B.", []int{2, 1}, []int{9}},
		{"Both [1, 7, 3].", "Both [1, 3].", []int{1, 3}, []int{7}},
		{"No markers.", "No markers.", nil, nil},
		{"Zero [0] and big [123].", "Zero and big.", nil, []int{0, 123}},
	}
	for _, c := range cases {
		got := CheckMarkers(c.in, valid)
		if got.Text != c.want || !slices.Equal(got.Cited, c.cited) || !slices.Equal(got.Dropped, c.dropped) {
			t.Errorf("CheckMarkers(%q) = %q %v %v; want %q %v %v", c.in, got.Text, got.Cited, got.Dropped, c.want, c.cited, c.dropped)
		}
	}
}

func TestCheckSupport(t *testing.T) {
	t.Parallel()
	chunks := map[int]string{
		1: "We standardised on Redis Cluster with client-side caching for all services.",
		2: "Memcached was rejected because it has no persistence and no replication.",
	}
	get := func(n int) (string, bool) { s, ok := chunks[n]; return s, ok }
	answer := "The team standardised on Redis Cluster [1]. Memcached lacks replication [2]. " +
		"Kafka powers billing [1]. This sentence cites nothing."
	got := CheckSupport(answer, get, 0.5)
	if len(got) != 3 {
		t.Fatalf("want 3 judged sentences, got %d: %+v", len(got), got)
	}
	want := []bool{true, true, false}
	for i, s := range got {
		if s.Supported != want[i] {
			t.Errorf("%q supported=%v (share %.2f), want %v", s.Sentence, s.Supported, s.Share, want[i])
		}
	}
}

// Claims and evidence meet on inflections of the same word; before the stemmer
// was shared, "service" and "services" (and every other word ending in e) did not.
func TestContentTerms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
	}{
		{"The service caches prices.", "Services cache the price"},
		{"Rollbacks were applied.", "apply the rollback"},
		{"We standardise on one shared cache.", "standardised shared caching"},
	}
	for _, tc := range tests {
		if a, b := ContentTerms(tc.a), ContentTerms(tc.b); !slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))) {
			t.Errorf("ContentTerms(%q) = %q, ContentTerms(%q) = %q: want the same terms", tc.a, a, tc.b, b)
		}
	}
	if got := ContentTerms("Could you also tell us why it is so?"); len(got) != 0 {
		t.Errorf("stop words and fillers gave content terms %q", got)
	}
}

func TestSentences(t *testing.T) {
	t.Parallel()
	got := Sentences("First claim [1]. Second one? Yes! v2.3.1 is fine [2].\n- a list item [3]\n- another")
	want := []string{"First claim [1].", "Second one?", "Yes!", "v2.3.1 is fine [2].", "a list item [3]", "another"}
	if !slices.Equal(got, want) {
		t.Errorf("Sentences = %q\nwant %q", got, want)
	}
}

func TestGate(t *testing.T) {
	t.Parallel()
	g := Gate{MinSimilarity: 0.3, MinKeywordCoverage: 0.6}
	cases := []struct {
		hits []Evidence
		ok   bool
	}{
		{nil, false},
		{[]Evidence{{0.1, 0.2}, {0.29, 0.59}}, false},
		{[]Evidence{{0.1, 0.2}, {0.31, 0.0}}, true},
		{[]Evidence{{0.05, 0.6}}, true},
	}
	for _, c := range cases {
		if ok, _, _ := g.Admit(c.hits); ok != c.ok {
			t.Errorf("Admit(%v) = %v", c.hits, ok)
		}
	}
}

// A question of one common word has keyword evidence in every chunk that
// holds the word ("who is on call?" reduces to "call"): the gate admits it by
// its cosine alone, unless the word is an identifier or the two-pass search
// chose the entity it names.
func TestGateForQuestion(t *testing.T) {
	t.Parallel()
	g := DefaultGate()
	covered := []Evidence{{VectorSimilarity: 0.22, KeywordCoverage: 1}}
	near := []Evidence{{VectorSimilarity: 0.30, KeywordCoverage: 1}}
	cases := []struct {
		name         string
		terms        []string
		entityChosen bool
		hits         []Evidence
		ok           bool
	}{
		{"one common word, low cosine", []string{"call"}, false, covered, false},
		{"one common word, close cosine", []string{"call"}, false, near, true},
		{"one identifier", []string{"e5032"}, false, covered, true},
		{"one identifier with an underscore", []string{"kb_rrf_k"}, false, covered, true},
		{"one word naming the chosen entity", []string{"dana"}, true, covered, true},
		{"two words", []string{"call", "payment"}, false, covered, true},
		{"no terms", nil, false, covered, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fg := g.ForQuestion(c.terms, c.entityChosen)
			if ok, _, bestCov := fg.Admit(c.hits); ok != c.ok || bestCov != 1 {
				t.Errorf("Admit = %v (best coverage %g), want %v", ok, bestCov, c.ok)
			}
			if fg.KeywordEvidence() == (len(c.terms) == 1 && !c.entityChosen && !IsIdentifier(c.terms[0])) {
				t.Errorf("KeywordEvidence = %v", fg.KeywordEvidence())
			}
		})
	}
	// The gate itself is unchanged.
	if ok, _, _ := g.Admit(covered); !ok {
		t.Error("ForQuestion changed the configured gate")
	}
}

func TestChooseLanguage(t *testing.T) {
	t.Parallel()
	cases := []struct{ explicit, header, question, want string }{
		{"", "", "", "en"},
		{"", "de-DE,de;q=0.9,en;q=0.8", "", "de"},
		{"", "fr-FR,fr;q=0.9", "", "fr"},
		{"", "es-ES,es;q=0.9", "", "en"},
		{"de", "en-US", "", "de"},
		{"en", "de", "", "en"},
		{"", "garbage;;;", "", "en"},
		// The question's language when the caller states none.
		{"", "", "fr", "fr"},
		{"", "", "de", "de"},
		{"", "", "es", "en"},
		{"", "en-US", "de", "en"},
		{"fr", "", "de", "fr"},
	}
	for _, c := range cases {
		if got := ChooseLanguage(c.explicit, c.header, c.question); got != c.want {
			t.Errorf("ChooseLanguage(%q, %q, %q) = %q, want %q", c.explicit, c.header, c.question, got, c.want)
		}
	}
	// Every reason has a message in every catalogue language, each its own.
	for _, reason := range []string{RefusalNoRelevantContext, RefusalLLMSelfRefusal} {
		seen := map[string]string{}
		for _, lang := range []string{"en", "de", "fr"} {
			msg := RefusalMessage(reason, lang, []string{"platform"})
			if _, ok := refusalMessages[reason][lang]; !ok || !strings.Contains(msg, "platform") {
				t.Errorf("%s in %s: %q", reason, lang, msg)
			}
			if other, dup := seen[msg]; dup {
				t.Errorf("%s: %s and %s share a message", reason, other, lang)
			}
			seen[msg] = lang
		}
	}
}

func TestNormalizeQuestion(t *testing.T) {
	t.Parallel()
	if a, b := NormalizeQuestion("How do I bake BREAD?"), NormalizeQuestion("  how do i bake bread "); a != b || a != "how do i bake bread" {
		t.Errorf("%q vs %q", a, b)
	}
}

func TestSnippet(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("filler words here ", 30) + "the E5032 error means replication lag " + strings.Repeat("more text after ", 30)
	s := Snippet(long, []string{"e5032"})
	if !strings.Contains(s, "E5032") || !strings.HasPrefix(s, "…") || !strings.HasSuffix(s, "…") {
		t.Errorf("snippet %q should centre on E5032 with ellipses", s)
	}
	if n := len([]rune(s)); n > SnippetLength+2 {
		t.Errorf("snippet is %d characters", n)
	}
	if got := Snippet("short text", []string{"x"}); got != "short text" {
		t.Errorf("short text should be whole, got %q", got)
	}
	head := Snippet(long, nil)
	if strings.HasPrefix(head, "…") || !strings.HasSuffix(head, "…") {
		t.Errorf("without a match the snippet starts at the beginning: %q", head)
	}
}

func TestMentions(t *testing.T) {
	t.Parallel()
	got := Mentions("compare @dec-cache-v2 with @Dec-Cache-V1, not email a@b.c; (@rb-x)")
	want := []string{"dec-cache-v2", "dec-cache-v1", "rb-x"}
	if !slices.Equal(got, want) {
		t.Errorf("Mentions = %v, want %v", got, want)
	}
}

func TestRankingValidate(t *testing.T) {
	t.Parallel()
	ok := DefaultRanking(ProfileSemanticModel)
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(*Ranking){
		func(r *Ranking) { r.VectorWeight = -0.1 },
		func(r *Ranking) { r.RRFK = 0 },
		func(r *Ranking) { r.EFSearch = 1000 },
		func(r *Ranking) { r.BM25B = 2 },
		func(r *Ranking) { r.KeywordWeight = math.NaN() },
		func(r *Ranking) { r.MaxChunksPerDoc = 0 },
		func(r *Ranking) { r.RRFTrustPositions = -1 },
	}
	for i, mutate := range bad {
		r := ok
		mutate(&r)
		if err := r.Validate(); err == nil {
			t.Errorf("case %d should be invalid", i)
		}
	}
	// Every number of the ranking is checked, whichever list it is in.
	fields := reflect.TypeOf(ok)
	for i := range fields.NumField() {
		if fields.Field(i).Type.Kind() != reflect.Float64 {
			continue
		}
		r := ok
		reflect.ValueOf(&r).Elem().Field(i).SetFloat(math.Inf(1))
		if err := r.Validate(); err == nil {
			t.Errorf("%s = +Inf should be invalid", fields.Field(i).Name)
		}
	}
	hash := DefaultRanking(ProfileHashKeywordLed)
	if hash.KeywordWeight <= hash.VectorWeight {
		t.Error("the hash profile is keyword-led")
	}
}

// One unit of the weighted-space adjustment is RRFTrustPositions gaps between
// rank 1 and rank 2 of every leg.
func TestRRFAdjustmentScale(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		k, ws, wf, positions float64
	}{
		{60, 0.3, 0.7, 18},
		{60, 0.7, 0.3, 1},
		{10, 1, 1, 5},
		{60, 0.3, 0.7, 0},
	} {
		r := Ranking{RRFK: tc.k, SemanticWeight: tc.ws, FTSWeight: tc.wf, RRFTrustPositions: tc.positions}
		gap := tc.ws/(tc.k+1) + tc.wf/(tc.k+1) - tc.ws/(tc.k+2) - tc.wf/(tc.k+2)
		if got, want := r.RRFAdjustmentScale(), tc.positions*gap; math.Abs(got-want) > 1e-15 {
			t.Errorf("%+v: scale %g, want %g", tc, got, want)
		}
	}
}

func TestFollowUps(t *testing.T) {
	t.Parallel()
	got := FollowUps([]FollowUpSource{
		{DocID: "rej-memcached-2023", Title: "Rejected: Memcached as the shared cache tier", CanonicalType: "rejected-approach"},
		{DocID: "rb-deploy-rollback", Title: "Runbook: deployment rollbacks", CanonicalType: "runbook"},
		{DocID: "dec-cache-v2", Title: "Cache layer standard", CanonicalType: "decision"},
		{DocID: "x", Title: "Extra"},
	}, map[string]bool{"dec-cache-v2": true}, 3)
	want := []string{
		"Why was Memcached as the shared cache tier rejected?",
		"What are the steps in Runbook: deployment rollbacks?",
		"What does Extra say about this?",
	}
	if !slices.Equal(got, want) {
		t.Errorf("FollowUps = %q", got)
	}
}

func TestParseFilters(t *testing.T) {
	t.Parallel()
	f, err := ParseFilters(RawFilters{ProjectKey: "platform", Tags: []string{" Redis "}, DocIDsMode: "filter", DocIDs: []string{"A"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.ProjectKeys, []string{"platform"}) || f.Tags[0] != "redis" || !f.DocIDsFilter || !f.IncludeSuperseded {
		t.Errorf("%+v", f)
	}
	if _, err := ParseFilters(RawFilters{DocIDsMode: "filter"}); err == nil {
		t.Error("filter mode without doc_ids should fail")
	}
	if _, err := ParseFilters(RawFilters{DocIDsMode: "pin"}); err == nil {
		t.Error("unknown doc_ids_mode should fail")
	}
	keys := make([]string, MaxProjectKeys+1)
	for i := range keys {
		keys[i] = "p" + strconv.Itoa(i)
	}
	if _, err := ParseFilters(RawFilters{ProjectKeys: keys[:MaxProjectKeys]}); err != nil {
		t.Errorf("%d project keys: %v", MaxProjectKeys, err)
	}
	if _, err := ParseFilters(RawFilters{ProjectKeys: keys}); !IsInvalid(err) || !strings.Contains(err.Error(), "the limit is 16") {
		t.Errorf("%d project keys: %v; want invalid", len(keys), err)
	}
}
