package llm

import (
	"context"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var docPassages = []Passage{
	{N: 1, Text: "# Storage\n\nCanon stores document chunks in PostgreSQL. Each chunk keeps its embedding in a pgvector column. The HNSW index speeds up nearest-neighbour search."},
	{N: 2, Text: "## Deployment\n\n- Run `canon serve` behind a reverse proxy.\n- Set DATABASE_URL to the Postgres connection string.\n\nBackups are taken nightly with pg_dump."},
	{N: 3, Text: "Embeddings are computed by the hash embedder by default, e.g. for offline use. The OpenAI embedder stores 1536-dimensional vectors."},
	{N: 4, Text: "Chunks are stored in Postgres; vectors too."},
}

func TestSplitSentences(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"prose", "Canon stores chunks. It ranks them well! Does it cite? Yes it does cite.",
			[]string{"Canon stores chunks.", "It ranks them well!", "Does it cite?", "Yes it does cite."}},
		{"abbreviations and decimals stay whole", "Use a local embedder, e.g. the hash one. Version 0.8.0 fixed it for us.",
			[]string{"Use a local embedder, e.g. the hash one.", "Version 0.8.0 fixed it for us."}},
		{"markdown", "# Title\n\nFirst line of a paragraph\ncontinues here.\n\n- item one is here\n- item two is here\n\n```\ncode is skipped entirely\n```\n> quoted text is kept",
			[]string{"First line of a paragraph continues here.", "item one is here", "item two is here", "quoted text is kept"}},
		{"fragments dropped", "Ok. Fine. This one is long enough.", []string{"This one is long enough."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := splitSentences(tc.text); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

var markerRE = regexp.MustCompile(`\[(\d+)\]`)

func TestComposeAnswers(t *testing.T) {
	tests := []struct {
		name     string
		question string
		passages []Passage
		want     string
	}{
		{"best sentences, grouped by passage", "Where are chunks stored?", docPassages,
			"Canon stores document chunks in PostgreSQL [1]. Chunks are stored in Postgres; vectors too [4]."},
		{"plural question meets singular text", "backups", docPassages,
			"Backups are taken nightly with pg_dump [2]."},
		{"no overlap", "What is the capital of France?", docPassages, SelfRefusalSentinel},
		{"only stop words", "What is it?", docPassages, SelfRefusalSentinel},
		{"no passages", "Where are chunks stored?", nil, SelfRefusalSentinel},
		{"empty question", "", docPassages, SelfRefusalSentinel},
		{"sentence without final punctuation gets one", "reverse proxy", docPassages,
			"Run `canon serve` behind a reverse proxy [2]."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := compose(tc.question, tc.passages); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestComposeLimits(t *testing.T) {
	// Six passages that all answer equally: at most 4 sentences from at most 3 passages.
	var ps []Passage
	for i := 1; i <= 6; i++ {
		ps = append(ps, Passage{N: i * 10, Text: "The retention policy keeps audit logs for ninety days. The retention policy applies to every project and region."})
	}
	// The same sentence in two passages is said once.
	ps = append([]Passage{{N: 7, Text: "Retention policy: audit logs expire after ninety days here."}, {N: 8, Text: "Retention policy: audit logs expire after ninety days here."}}, ps...)
	got := compose("What is the retention policy for audit logs?", ps)
	markers := markerRE.FindAllStringSubmatch(got, -1)
	if len(markers) < 2 || len(markers) > 4 {
		t.Fatalf("%d sentences: %q", len(markers), got)
	}
	seen := map[string]bool{}
	for _, m := range markers {
		seen[m[1]] = true
	}
	if len(seen) > 3 {
		t.Errorf("%d passages cited, want at most 3: %q", len(seen), got)
	}
	if strings.Count(got, "expire after ninety days") > 1 {
		t.Errorf("duplicate sentence: %q", got)
	}
	// Every sentence ends with its marker before the full stop.
	for s := range strings.SplitSeq(got, ". ") {
		if !markerRE.MatchString(s) {
			t.Errorf("sentence without marker: %q in %q", s, got)
		}
	}
}

func TestComposeCaps(t *testing.T) {
	colors := []string{"red", "green", "blue", "amber", "violet", "black", "white", "grey", "pink", "teal"}
	cities := []string{"Oslo", "Lyon", "Porto", "Turin", "Ghent", "Brno", "Graz", "Split", "Cork", "Bern"}
	sentence := func(i int) string {
		return "The widget ships in " + colors[i] + " boxes from " + cities[i] + "."
	}
	tests := []struct {
		name          string
		perPassage    int
		wantSentences int
		wantPassages  int
	}{
		{"one equal sentence per passage: 3 passages at most", 1, 3, 3},
		{"two per passage: 4 sentences at most", 2, 4, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ps []Passage
			for p := range 5 {
				var text []string
				for s := range tc.perPassage {
					text = append(text, sentence(p*tc.perPassage+s))
				}
				ps = append(ps, Passage{N: p + 1, Text: strings.Join(text, " ")})
			}
			got := compose("Which boxes does the widget ship in?", ps)
			markers := markerRE.FindAllStringSubmatch(got, -1)
			cited := map[string]bool{}
			for _, m := range markers {
				cited[m[1]] = true
			}
			if len(markers) != tc.wantSentences || len(cited) != tc.wantPassages {
				t.Errorf("%d sentences from %d passages, want %d from %d: %q", len(markers), len(cited), tc.wantSentences, tc.wantPassages, got)
			}
			if !strings.HasPrefix(got, sentence(0)[:len(sentence(0))-1]+" [1].") {
				t.Errorf("ties should favour the first passage: %q", got)
			}
		})
	}
}

func TestComposeCitesTheRightPassage(t *testing.T) {
	ps := []Passage{
		{N: 3, Text: "Canon answers questions from your documents."},
		{N: 9, Text: "Rate limits are enforced per API key at 60 requests per minute."},
	}
	got := compose("What are the rate limits?", ps)
	if got != "Rate limits are enforced per API key at 60 requests per minute [9]." {
		t.Errorf("got %q", got)
	}
}

func TestExtractiveStreamIsDeterministic(t *testing.T) {
	req := Request{Question: "How are embeddings computed and stored?", Passages: docPassages}
	var first Response
	var firstDeltas []string
	for i := range 20 {
		var c collector
		resp, err := NewExtractive().Stream(context.Background(), req, c.add)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != c.joined() {
			t.Fatalf("deltas %q do not concatenate to Text %q", c.deltas, resp.Text)
		}
		if i == 0 {
			first, firstDeltas = resp, c.deltas
			continue
		}
		if !reflect.DeepEqual(resp, first) || !slices.Equal(c.deltas, firstDeltas) {
			t.Fatalf("run %d differs:\n%+v\n%+v", i, resp, first)
		}
	}
	if len(firstDeltas) < 5 {
		t.Errorf("answer not streamed in small pieces: %q", firstDeltas)
	}
	if !markerRE.MatchString(first.Text) {
		t.Errorf("no citation marker in %q", first.Text)
	}
	if first.Model != "extractive-v1" || first.Usage.CompletionTokens != len(strings.Fields(first.Text)) || first.Usage.PromptTokens == 0 {
		t.Errorf("Model %q, Usage %+v", first.Model, first.Usage)
	}
}

func TestExtractiveSentinelAndFallbacks(t *testing.T) {
	p := NewExtractive()
	if p.Name() != "extractive" || p.Model() != "extractive-v1" {
		t.Errorf("Name %q Model %q", p.Name(), p.Model())
	}
	var c collector
	resp, err := p.Stream(context.Background(), Request{Question: "Who won the 1998 World Cup?", Passages: docPassages}, c.add)
	if err != nil || resp.Text != SelfRefusalSentinel || c.joined() != SelfRefusalSentinel {
		t.Errorf("Text %q, deltas %q, err %v", resp.Text, c.deltas, err)
	}
	// Without a Question, the last user message is the question.
	resp, err = p.Stream(context.Background(), Request{
		Messages: []Message{{Role: "user", Content: "Tell me about France"}, {Role: "assistant", Content: "…"}, {Role: "user", Content: "When are backups taken?"}},
		Passages: docPassages,
	}, (&collector{}).add)
	if err != nil || !strings.Contains(resp.Text, "Backups are taken nightly") {
		t.Errorf("Text %q, err %v", resp.Text, err)
	}
}

func TestExtractiveStopsOnCancelAndCallbackError(t *testing.T) {
	req := Request{Question: "Where are chunks stored?", Passages: docPassages}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	resp, err := NewExtractive().Stream(ctx, req, func(string) error { n++; cancel(); return nil })
	if !errors.Is(err, context.Canceled) || n != 1 || resp.Text == "" {
		t.Errorf("err %v after %d deltas, Text %q", err, n, resp.Text)
	}
	boom := errors.New("boom")
	_, err = NewExtractive().Stream(context.Background(), req, func(string) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want the callback's", err)
	}
}

func TestWordPieces(t *testing.T) {
	for _, s := range []string{"", "one", "one two", "a  b\tc\n", " lead", "naïve café [1]."} {
		if got := strings.Join(wordPieces(s), ""); got != s {
			t.Errorf("wordPieces(%q) joins to %q", s, got)
		}
	}
}
