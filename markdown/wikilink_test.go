package markdown

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// span is a wikilink as a test states it: what the text reads there.
type span struct {
	text, target string
	labelled     bool
}

func spansOf(text string, links []Wikilink) []span {
	var out []span
	for _, l := range links {
		out = append(out, span{text[l.Start:l.End], l.Target, l.Labelled})
	}
	return out
}

func TestWikilinkSpans(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		text       string // the first chunk's
		links      []span
	}{
		{"no label reads as the target", "Defaults are in [[std-search-config]].",
			"Defaults are in std-search-config.", []span{{"std-search-config", "std-search-config", false}}},
		{"a label reads as the label", "See [[dec-cache-v2|the cache decision]] first.",
			"See the cache decision first.", []span{{"the cache decision", "dec-cache-v2", true}}},
		{"the target is normalised, the text is as written", "Per [[Dec-Cache-V2#Why]] today.",
			"Per Dec-Cache-V2#Why today.", []span{{"Dec-Cache-V2#Why", "dec-cache-v2", false}}},
		{"several, with a self-link", "[[notes/x]] links [[a-b]] and [[c-d|C]].",
			"notes/x links a-b and C.", []span{{"notes/x", "notes/x", false}, {"a-b", "a-b", false}, {"C", "c-d", true}}},
		{"in a list and a table", "- item [[a-b]]\n\n| k | v |\n|---|---|\n| [[c-d\\|cell]] | x |\n",
			"- item a-b\n\nk | v\ncell | x", []span{{"a-b", "a-b", false}, {"cell", "c-d", true}}},
		{"no target, no link", "Local [[#section]] and [[ ]] here.", "Local #section and  here.", nil},
		{"code is not a link", "Run `[[ -f x ]]` or [[real-one]].", "Run `[[ -f x ]]` or real-one.",
			[]span{{"real-one", "real-one", false}}},
		{"a label ending a sentence ends it", "Read [[a-b|the doc.]] Then [[c-d]] next.",
			"Read the doc. Then c-d next.", []span{{"the doc.", "a-b", true}, {"c-d", "c-d", false}}},
		{"a file's own noncharacters are text", "Odd \uFDD0x\uFDD2y\uFDD3 text [[a-b]].",
			"Odd \uFFFDx\uFFFDy\uFFFD text a-b.", []span{{"a-b", "a-b", false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := mustParse(t, "notes/x.md", []byte(tt.body), Options{})
			c := doc.Chunks[0]
			if c.Text != tt.text {
				t.Errorf("text %q, want %q", c.Text, tt.text)
			}
			if got := spansOf(c.Text, c.Wikilinks); !reflect.DeepEqual(got, tt.links) {
				t.Errorf("links %+v, want %+v", got, tt.links)
			}
		})
	}
}

// A heading shows its link as written; the summary keeps its links, in the
// summary chunk and on the document.
func TestWikilinksInHeadingAndSummary(t *testing.T) {
	t.Parallel()
	src := "---\ntype: standard\n---\n# Search\n\nDefaults are in [[std-search-config]].\n\n## See [[dec-x]]\n\nText.\n"
	doc := mustParse(t, "std/search.md", []byte(src), Options{})
	want := []span{{"std-search-config", "std-search-config", false}}
	if got := spansOf(doc.Summary, doc.SummaryWikilinks); !reflect.DeepEqual(got, want) {
		t.Errorf("summary links %+v, want %+v", got, want)
	}
	for _, c := range doc.Chunks[:2] {
		if got := spansOf(c.Text, c.Wikilinks); !reflect.DeepEqual(got, want) {
			t.Errorf("chunk %d links %+v, want %+v", c.Ordinal, got, want)
		}
	}
	last := doc.Chunks[len(doc.Chunks)-1]
	if !reflect.DeepEqual(last.HeadingPath, []string{"Search", "See dec-x"}) || last.Wikilinks != nil {
		t.Errorf("heading chunk %+v", last)
	}
}

// However a long text is cut into chunks (between sentences, words, inside
// words, with overlap), each chunk reads exactly as without marks, and each
// link a chunk holds whole is where its text is.
func TestWikilinksSurviveChunking(t *testing.T) {
	t.Parallel()
	links := []string{"[[dec-cache-v2]]", "[[dec-x|the cache decision]]", "[[rb-y#Steps]]", "[[dec-y|see it.]]",
		"[[a-b|\"quoted.\"]]", "[[設計。]]", "[[c-d|完了。次]]"}
	words := strings.Fields("the cache layer moved to redis cluster after review and rollbacks need canaries")
	var b strings.Builder
	for i := range 400 {
		if i%7 == 3 {
			b.WriteString(links[i%len(links)])
		} else {
			b.WriteString(words[i%len(words)])
		}
		switch {
		case i%11 == 10:
			b.WriteString(". ")
		case i%37 == 36:
			b.WriteString("\n\n")
		default:
			b.WriteString(" ")
		}
	}
	b.WriteString("glued" + strings.Repeat("x", 300) + "[[dec-glued]]" + strings.Repeat("y", 300) + ".")
	body := b.String()
	// The same text with each link replaced as the parser did before it marked them.
	plain := wikiRe.ReplaceAllStringFunc(body, func(m string) string {
		target, label, ok := strings.Cut(m[2:len(m)-2], "|")
		if ok {
			return label
		}
		return target
	})
	for _, opts := range []Options{{}, {ChunkTokens: 40, OverlapTokens: 10}, {ChunkTokens: 32, OverlapTokens: 16}} {
		t.Run(fmt.Sprint(opts.ChunkTokens), func(t *testing.T) {
			t.Parallel()
			marked := mustParse(t, "x.md", []byte(body), opts)
			unmarked := mustParse(t, "x.md", []byte(plain), opts)
			if len(marked.Chunks) != len(unmarked.Chunks) {
				t.Fatalf("%d chunks, %d without links", len(marked.Chunks), len(unmarked.Chunks))
			}
			n := 0
			for i, c := range marked.Chunks {
				if c.Text != unmarked.Chunks[i].Text || c.TokenCount != unmarked.Chunks[i].TokenCount {
					t.Fatalf("chunk %d:\n%q\nwithout links:\n%q", i, c.Text, unmarked.Chunks[i].Text)
				}
				for _, l := range c.Wikilinks {
					n++
					if text := c.Text[l.Start:l.End]; !l.Labelled && NormalizeSlug(strings.Split(text, "#")[0]) != l.Target {
						t.Errorf("chunk %d: %q read as a link to %s", i, text, l.Target)
					}
				}
			}
			if n < 50 {
				t.Errorf("only %d links kept", n)
			}
		})
	}
}

func TestRenderWikilinks(t *testing.T) {
	t.Parallel()
	text := "Defaults are in std-search-config; see the cache decision and rb-x#Steps or gone-doc."
	links := []Wikilink{
		{Target: "std-search-config", Start: 16, End: 33},
		{Target: "dec-cache-v2", Start: 39, End: 57, Labelled: true},
		{Target: "rb-x", Start: 62, End: 72},
		{Target: "gone-doc", Start: 76, End: 84},
	}
	stored := EncodeWikilinks(links)
	tests := []struct {
		name   string
		stored []byte
		titles []string
		want   string
		read   []ReadLink
	}{
		{"titles read for links without a label", stored,
			[]string{"Search configuration", "Cache layer standard", "Rollback runbook", ""},
			"Defaults are in Search configuration; see the cache decision and Rollback runbook › Steps or gone-doc.",
			[]ReadLink{{"std-search-config", "Search configuration", 16, 36, false}, {"dec-cache-v2", "Cache layer standard", 42, 60, true},
				{"rb-x", "Rollback runbook", 65, 91, false}, {"gone-doc", "", 95, 103, false}}},
		{"no title, as stored", stored, nil, text,
			[]ReadLink{{"std-search-config", "", 16, 33, false}, {"dec-cache-v2", "", 39, 57, true}, {"rb-x", "", 62, 72, false}, {"gone-doc", "", 76, 84, false}}},
		{"no links", []byte("[]"), nil, text, nil},
		{"unreadable links", []byte("{"), []string{"X"}, text, nil},
		{"links that do not fit are ignored",
			EncodeWikilinks([]Wikilink{{Target: "a", Start: 80, End: 200}, {Target: "b", Start: 5, End: 3}, {Target: "std-search-config", Start: 16, End: 33}}),
			[]string{"A", "B", "Search configuration"},
			"Defaults are in Search configuration; see the cache decision and rb-x#Steps or gone-doc.",
			[]ReadLink{{"std-search-config", "Search configuration", 16, 36, false}}},
		{"offsets inside a character are ignored",
			EncodeWikilinks([]Wikilink{{Target: "a", Start: 1, End: 2}}), []string{"A"}, "é!", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := text
			if tt.name == "offsets inside a character are ignored" {
				in = "é!"
			}
			got, read := RenderWikilinks(in, tt.stored, tt.titles)
			if got != tt.want {
				t.Errorf("text %q, want %q", got, tt.want)
			}
			if !reflect.DeepEqual(read, tt.read) {
				t.Errorf("links %+v, want %+v", read, tt.read)
			}
		})
	}
}

func TestEncodeWikilinks(t *testing.T) {
	t.Parallel()
	if got := string(EncodeWikilinks(nil)); got != "[]" {
		t.Errorf("no links: %s", got)
	}
	links := []Wikilink{{Target: "a-b", Start: 1, End: 4}, {Target: "c", Start: 5, End: 9, Labelled: true}}
	b := EncodeWikilinks(links)
	if want := `[{"to":"a-b","start":1,"end":4},{"to":"c","start":5,"end":9,"label":true}]`; string(b) != want {
		t.Errorf("%s, want %s", b, want)
	}
	if got := DecodeWikilinks(b); !reflect.DeepEqual(got, links) {
		t.Errorf("decoded %+v", got)
	}
}
