package search_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/canonkb/canon/document"
	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/search"
)

// A wikilink without a label reads as its target's title wherever a chunk is
// read (hits, summaries added to a page, a document read whole), as the target
// is titled when it is read and as the reader may see it: a target that
// arrives or is renamed later needs no re-ingest of the linking document, and a
// missing or hidden target keeps its slug.
func TestWikilinksReadAsTitles(t *testing.T) {
	t.Parallel()
	p := dbtest.Pool(t)
	ctx := context.Background()
	const project = "wikilinks"
	linking := "---\nid: mod-search\ntitle: Search service module\ntype: module-kb\nstatus: active\n---\n" +
		"# Search service module\n\nRanking defaults are in [[std-search-config]], secrets per [[dec-secrets|the secrets decision]].\n\n" +
		"## Operations\n\nRotation follows [[adr-rotation]]; paging follows [[rb-paging#Escalation]].\n"
	files := map[string]string{
		"mod-search.md":        linking,
		"std-search-config.md": "---\nid: std-search-config\ntitle: Search configuration standard\n---\nKnobs.\n",
		"dec-secrets.md":       "---\nid: dec-secrets\ntitle: Secrets in Vault\n---\nVault.\n",
		"rb-paging.md":         "---\nid: rb-paging\ntitle: Paging runbook\naccess: [ops]\n---\nPage.\n",
	}
	ingestFiles(t, p, project, files)
	s := graphSearcher(p, search.DefaultGraphConfig())
	reader := domain.Principal{Name: "reader", Projects: []string{project}, Role: domain.RoleReader, Groups: []string{}}
	ops := reader
	ops.Groups = []string{"ops"}

	// The texts of mod-search's chunks, by heading, as who reads them in a search.
	read := func(who domain.Principal) map[string]string {
		t.Helper()
		res, err := s.Search(domain.WithPrincipal(ctx, who), req("ranking defaults rotation paging", func(r *domain.SearchRequest) {
			r.Filters.ProjectKeys = []string{project}
			r.Filters.DocIDs, r.Filters.DocIDsMode = []string{"mod-search"}, "filter"
		}))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, h := range append(res.Primary, res.RunnerUp...) {
			key := strings.Join(h.HeadingPath, " > ")
			if h.IsSummary {
				key += " (summary)"
			}
			out[key] = h.Text
			for _, ref := range h.References {
				if !strings.Contains(h.Text, ref) {
					t.Errorf("reference %q is not in %q", ref, h.Text)
				}
			}
		}
		return out
	}
	const summary = "Ranking defaults are in Search configuration standard, secrets per the secrets decision."
	tests := []struct {
		name  string
		files map[string]string // ingested before reading
		who   domain.Principal
		want  map[string]string
	}{
		{"titles of the targets the reader sees", nil, reader, map[string]string{
			"Search service module (summary)":    summary,
			"Search service module":              summary,
			"Search service module > Operations": "Rotation follows adr-rotation; paging follows rb-paging#Escalation.",
		}},
		{"a hidden target keeps its slug but for its group", nil, ops, map[string]string{
			"Search service module (summary)":    summary,
			"Search service module":              summary,
			"Search service module > Operations": "Rotation follows adr-rotation; paging follows Paging runbook › Escalation.",
		}},
		{"a target that arrives later", map[string]string{
			"adr-rotation.md": "---\nid: adr-rotation\ntitle: Key rotation ADR\n---\nRotate.\n"}, reader, map[string]string{
			"Search service module (summary)":    summary,
			"Search service module":              summary,
			"Search service module > Operations": "Rotation follows Key rotation ADR; paging follows rb-paging#Escalation.",
		}},
		{"a target renamed later", map[string]string{
			"std-search-config.md": "---\nid: std-search-config\ntitle: Search knobs\n---\nKnobs.\n"}, reader, map[string]string{
			"Search service module (summary)":    "Ranking defaults are in Search knobs, secrets per the secrets decision.",
			"Search service module":              "Ranking defaults are in Search knobs, secrets per the secrets decision.",
			"Search service module > Operations": "Rotation follows Key rotation ADR; paging follows rb-paging#Escalation.",
		}},
	}
	for _, tt := range tests { // in order: each step ingests on top of the last
		if tt.files != nil {
			ingestFiles(t, p, project, tt.files)
		}
		got := read(tt.who)
		for k, want := range tt.want {
			if got[k] != want {
				t.Errorf("%s: %s reads %q, want %q", tt.name, k, got[k], want)
			}
		}
	}

	// The document read whole: its chunks, its summary, and where its links are.
	d, err := document.Read(domain.WithPrincipal(ctx, reader), p, project, "mod-search")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Ranking defaults are in Search knobs, secrets per the secrets decision."; d.Summary != want {
		t.Errorf("summary %q, want %q", d.Summary, want)
	}
	last := d.Chunks[len(d.Chunks)-1]
	var links []string
	for _, l := range last.Links {
		links = append(links, last.Text[l.Start:l.End]+" -> "+l.Target+" "+l.Title)
	}
	if want := []string{"Key rotation ADR -> adr-rotation Key rotation ADR", "rb-paging#Escalation -> rb-paging "}; !slices.Equal(links, want) {
		t.Errorf("links %q, want %q", links, want)
	}

	// A summary added to a page (WithSummaries) reads as the page does.
	res, err := s.Search(domain.WithPrincipal(ctx, reader), req("rotation paging", func(r *domain.SearchRequest) {
		r.Filters.ProjectKeys = []string{project}
		r.Filters.DocIDs, r.Filters.DocIDsMode = []string{"mod-search"}, "filter"
		r.Options.Limit = 1
	}))
	if err != nil {
		t.Fatal(err)
	}
	page, err := s.WithSummaries(domain.WithPrincipal(ctx, reader), res.Primary)
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 2 || !page[0].IsSummary || page[0].Text != "Ranking defaults are in Search knobs, secrets per the secrets decision." ||
		!slices.Equal(page[0].References, []string{"Search knobs"}) {
		t.Errorf("page with its summary: %+v", page)
	}
}
