package document

import (
	"reflect"
	"testing"

	"github.com/canonkb/canon/markdown"
)

func TestChunkParts(t *testing.T) {
	t.Parallel()
	text := "See Search config and the [cache] decision or gone-doc."
	seen := markdown.ReadLink{Target: "std-search", Title: "Search config", Start: 4, End: 17}
	labelled := markdown.ReadLink{Target: "dec-cache", Title: "Cache standard", Start: 22, End: 42, Labelled: true}
	missing := markdown.ReadLink{Target: "gone-doc", Start: 46, End: 54}
	tests := []struct {
		name  string
		links []markdown.ReadLink
		want  []Part
	}{
		{"links to documents the reader sees", []markdown.ReadLink{seen, labelled, missing}, []Part{
			{Text: "See "}, {Text: "Search config", Target: "std-search"}, {Text: " and "},
			{Text: "the [cache] decision", Target: "dec-cache"}, {Text: " or gone-doc."}}},
		{"a link at the end", []markdown.ReadLink{{Target: "gone-doc", Title: "Gone", Start: 46, End: 54}}, []Part{
			{Text: "See Search config and the [cache] decision or "}, {Text: "gone-doc", Target: "gone-doc"}, {Text: "."}}},
		{"no link the reader may follow", []markdown.ReadLink{missing}, nil},
		{"no link", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := (Chunk{Text: text, Links: tt.links}).Parts(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parts %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLinkedBody(t *testing.T) {
	t.Parallel()
	d := &Document{Title: "Search", Chunks: []Chunk{
		{IsSummary: true, HeadingPath: []string{"Search"}, Text: "Summary."},
		{HeadingPath: []string{"Search"}, Text: "Defaults are in Search (config) and the [cache] decision.",
			Links: []markdown.ReadLink{
				{Target: "std-search", Title: "Search (config)", Start: 16, End: 31},
				{Target: "dec(x)", Title: "Cache", Start: 36, End: 56, Labelled: true},
			}},
	}}
	href := func(slug string) string { return "canon://p/" + slug }
	want := "# Search\n\nDefaults are in [Search (config)](canon://p/std-search) and [the \\[cache\\] decision](canon://p/dec%28x%29).\n"
	if got := d.LinkedBody(href); got != want {
		t.Errorf("linked body\n%q\nwant\n%q", got, want)
	}
	if got, want := d.Body(), "# Search\n\nDefaults are in Search (config) and the [cache] decision.\n"; got != want {
		t.Errorf("body %q, want %q", got, want)
	}
}
