package hierarchy

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
)

// Pass 1 sees only the entities whose page the caller may see: a hidden person
// is never scored, and a first name is a person's own when no other person the
// caller sees goes by it.
func TestPass1SeesOnlyVisibleEntities(t *testing.T) {
	t.Parallel()
	p := dbtest.FreshPool(t)
	ctx := context.Background()
	person := func(slug, name, access string) ingest.File {
		return ingest.File{Path: "atlas/people/" + slug + ".md", Content: fmt.Appendf(nil,
			"---\nid: %s\ntitle: %s\ntype: person\nrole: Engineer\nproject: atlas\naccess: %s\n---\n\n# %s\n\n%s works on the scheduler.\n",
			slug, name, access, name, name)}
	}
	files := []ingest.File{
		person("robin-achebe", "Robin Achebe", "[hr]"),
		person("robin-tanaka", "Robin Tanaka", "[]"),
	}
	for _, who := range []string{"robin-achebe", "robin-tanaka"} {
		files = append(files, ingest.File{Path: "atlas/notes/" + who + "-notes.md", Content: fmt.Appendf(nil,
			"---\nid: %s-notes\ntitle: Scheduler notes\nproject: atlas\nentities: [%s]\n---\n\n# Scheduler notes\n\nQueue depth and retries.\n",
			who, who)})
	}
	res, err := newIngester(p).Ingest(ctx, files, ingest.Options{Project: "atlas"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("invalid files: %v", res.Errors)
	}
	h := New(p, flatSearcher(p), DefaultConfig())
	reader := domain.Principal{Name: "reader", Projects: []string{"atlas"}, Role: domain.RoleReader, Groups: []string{}}
	hr := reader
	hr.Groups = []string{"hr"}
	tests := []struct {
		name     string
		who      domain.Principal
		question string
		chosen   string // "" when the search stays flat
		never    string // an entity that must not be scored
	}{
		{"operator: the full name", domain.Operator(), "what has Robin Achebe been working on?", "robin-achebe", ""},
		{"operator: a first name two people share", domain.Operator(), "what has Robin been working on?", "", ""},
		// "Robin" is then the one person the reader sees who goes by it.
		{"reader: the hidden person's full name", reader, "what has Robin Achebe been working on?", "robin-tanaka", "robin-achebe"},
		{"reader: the first name is the one visible person's", reader, "what has Robin been working on?", "robin-tanaka", "robin-achebe"},
		{"group member: the full name", hr, "what has Robin Achebe been working on?", "robin-achebe", ""},
		{"group member: a first name two people share", hr, "what has Robin been working on?", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := req(tt.question, func(r *domain.SearchRequest) { r.Filters.ProjectKeys = []string{"atlas"} })
			res, err := h.Search(domain.WithPrincipal(ctx, tt.who), r)
			if err != nil {
				t.Fatal(err)
			}
			var chosen, scored []string
			for _, e := range res.Meta.Pass1Entities {
				scored = append(scored, e.EntityID)
				if e.Chosen {
					chosen = append(chosen, e.EntityID)
				}
			}
			if tt.chosen == "" {
				if res.Meta.SearchMode != ModeFlat || len(chosen) > 0 {
					t.Errorf("mode %s, chosen %v; want flat", res.Meta.SearchMode, chosen)
				}
			} else if res.Meta.SearchMode != ModeTwoPass || !slices.Equal(chosen, []string{tt.chosen}) {
				t.Errorf("mode %s, chosen %v; want two_pass with %s", res.Meta.SearchMode, chosen, tt.chosen)
			}
			if tt.never != "" && slices.Contains(scored, tt.never) {
				t.Errorf("pass 1 scored %s, whose page the caller may not see (entities %v)", tt.never, scored)
			}
			for _, hit := range res.Primary {
				if hit.DocID == "robin-achebe" && !tt.who.AllDocuments && !slices.Contains(tt.who.Groups, "hr") {
					t.Errorf("hidden page %s in the results", hit.DocID)
				}
			}
		})
	}
}
