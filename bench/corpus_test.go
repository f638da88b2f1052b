package bench

import (
	"strings"
	"testing"

	"github.com/canonkb/canon/markdown"
)

func TestSlugRoundTrip(t *testing.T) {
	tests := []struct{ id, slug string }{
		{"31715818", "31715818"},
		{"test-environment-aeghhgwpe-pro02a", "test-environment-aeghhgwpe-pro02a"},
		{"Q1", "%511"},
		{"Doc B", "%44oc%20%42"},
		{"50%", "50%25"},
		{"tab\there", "tab%09here"},
		{"Ünïcode", "%c3%9cnïcode"},
		{"a/b.c_d", "a/b.c_d"},
	}
	for _, tt := range tests {
		got := EncodeSlug(tt.id)
		if got != tt.slug {
			t.Errorf("EncodeSlug(%q) = %q, want %q", tt.id, got, tt.slug)
		}
		if markdown.NormalizeSlug(got) != got {
			t.Errorf("EncodeSlug(%q) = %q is not a normalised slug", tt.id, got)
		}
		if back := DecodeSlug(got); back != tt.id {
			t.Errorf("DecodeSlug(%q) = %q, want %q", got, back, tt.id)
		}
	}
	if EncodeSlug("A") == EncodeSlug("a") {
		t.Error("ids differing in case share a slug")
	}
}

// TestFileParsesBack checks that a generated file parses to the same id, title and
// text: nothing in a document's text may turn into Markdown structure.
func TestFileParsesBack(t *testing.T) {
	texts := []string{
		"# not a heading", "1. not a list", "- not a list either", "+ nor this", "> not a quote",
		"*not emphasis* and _not_ __strong__", "[[not-a-wikilink]] and [not a link](http://example.com)",
		"<b>not html</b> <!-- nor a comment -->", "`not code` ```not a fence```", "a | b | c",
		"&amp; &lt; &#35; entities stay", "    not indented code", "---", "===", "foo_bar snake_case KB_RRF_K",
		`back\slash \* kept`, "~~not struck~~", "line one\nline two\r\n\nline three", "tab\tseparated", "x < y > z",
		"[^1] footnote-like ![not an image](x.png)", "100% of $5 @ 3pm; a=b? {c}",
		"résumé – “quotes” — naïve", "trailing space   ",
	}
	for i, text := range texts {
		d := Doc{ID: "Doc-" + string(rune('A'+i)), Title: "Title: with \"quotes\" #and: colons", Text: text}
		f, err := File(d)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := markdown.Parse(f.Path, f.Content, markdown.Options{ChunkTokens: 512, OverlapTokens: 64})
		if err != nil {
			t.Fatalf("%q: %v\n%s", text, err, f.Content)
		}
		if DecodeSlug(doc.Slug) != d.ID {
			t.Errorf("slug %q decodes to %q, want %q", doc.Slug, DecodeSlug(doc.Slug), d.ID)
		}
		if doc.Title != d.Title {
			t.Errorf("title %q, want %q", doc.Title, d.Title)
		}
		if len(doc.Links) != 0 {
			t.Errorf("%q: links %v", text, doc.Links)
		}
		var got []string
		for _, c := range doc.Chunks {
			got = append(got, c.Text)
		}
		if want := strings.Join(strings.Fields(text), " "); strings.Join(got, " ") != want {
			t.Errorf("text %q came back as %q", want, got)
		}
	}
}

func TestUntitledDocumentGetsNoTitleWords(t *testing.T) {
	f, err := File(Doc{ID: "test-environment-aeghhgwpe-pro02a", Text: "Being vegetarian helps the environment"})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := markdown.Parse(f.Path, f.Content, markdown.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// canon falls back to the file name; "-" has no lexemes, so the id's words
	// (environment, pro02a) do not become title terms.
	if doc.Title != "-" {
		t.Errorf("title %q, want -", doc.Title)
	}
}

func TestProjectKey(t *testing.T) {
	for in, want := range map[string]string{"scifact": "beir-scifact", "ArguAna": "beir-arguana", "cqa dupstack/Eng": "beir-cqa-dupstack-eng", "": "beir-dataset"} {
		if got := ProjectKey(in); got != want {
			t.Errorf("ProjectKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestQueryText(t *testing.T) {
	short := "what causes rain?"
	if got, cut := QueryText(short); got != short || cut {
		t.Errorf("QueryText(short) = %q, %v", got, cut)
	}
	long := strings.Repeat("word ", 1000) // 5,000 characters
	got, cut := QueryText(long)
	if !cut || len([]rune(got)) > 4000 || strings.HasSuffix(got, "wor") {
		t.Errorf("QueryText(long): %d runes, cut %v, ends %q", len([]rune(got)), cut, got[len(got)-8:])
	}
}

func TestParseVariant(t *testing.T) {
	v, err := ParseVariant("k1=0.9, b=0.4,heading_boost=2,hybrid=0.2:0.8,max_chunks_per_doc=2,normalize_scores=false")
	if err != nil {
		t.Fatal(err)
	}
	r := v.Ranking
	normalize, set := r["normalize_scores"]
	if r["bm25_k1"] != 0.9 || r["bm25_b"] != 0.4 || r["bm25_heading_boost"] != 2 || r["vector_weight"] != 0.2 ||
		r["semantic_weight"] != 0.2 || r["keyword_weight"] != 0.8 || r["fts_weight"] != 0.8 ||
		r["max_chunks_per_doc"] != 2 || !set || normalize != 0 {
		t.Errorf("ParseVariant: %v", r)
	}
	if _, set := r["rrf_k"]; set {
		t.Error("unset fields must stay unset")
	}
	for _, bad := range []string{"k1", "nope=1", "k1=x", "hybrid=0.3", "max_chunks_per_doc=1.5"} {
		if _, err := ParseVariant(bad); err == nil {
			t.Errorf("ParseVariant(%q) accepted", bad)
		}
	}
	if v, err := ParseVariant(""); err != nil || v.Name != "default" {
		t.Errorf("ParseVariant(\"\") = %v, %v", v, err)
	}
	if f, err := ParseFusions("all"); err != nil || len(f) != 4 {
		t.Errorf("ParseFusions(all) = %v, %v", f, err)
	}
	if _, err := ParseFusions("weighted,bogus"); err == nil {
		t.Error("ParseFusions accepted an unknown method")
	}
}
