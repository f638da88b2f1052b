package search_test

import (
	"context"
	"testing"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/search"
)

// A how-question's context gets the steps (the first chunk with a numbered
// list) of each runbook on the page that lacks them, after the runbook's first
// hit; never for a document of another kind, never twice, never for a document
// the caller may not see.
func TestWithSteps(t *testing.T) {
	t.Parallel()
	p := dbtest.FreshPool(t)
	ctx := context.Background()
	runbook := "Restart it when it hangs.\n\n## When\n\n- It hangs.\n\n## Steps\n\n1. Drain it.\n2. Restart it.\n\n" +
		"## After\n\nTell the team."
	ingestFiles(t, p, "s", map[string]string{
		"rb-a.md":      doc("rb-a", "runbook", "active", runbook),
		"rb-two.md":    doc("rb-two", "runbook", "active", "## Abort\n\n1. Abort it.\n\n## Roll back\n\n1. Undo it.\n\n## After\n\nTell the team."),
		"adr-b.md":     doc("adr-b", "decision", "accepted", "## Decision\n\nWe restart.\n\n## Plan\n\n1. Build.\n2. Ship."),
		"rb-secret.md": doc("rb-secret", "runbook", "active", runbook, "access: [vault]"),
	})
	type key struct {
		slug    string
		heading string
	}
	chunk := map[key]int64{}
	text := map[int64]string{}
	rows, err := p.Query(ctx, `SELECT d.slug, c.heading_path[cardinality(c.heading_path)], c.id, c.text
		FROM chunks c JOIN documents d ON d.id = c.document_id WHERE NOT c.is_summary`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k key
		var id int64
		var body string
		if err := rows.Scan(&k.slug, &k.heading, &id, &body); err != nil {
			t.Fatal(err)
		}
		chunk[k], text[id] = id, body
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	hit := func(k key) *domain.Hit {
		id, ok := chunk[k]
		if !ok {
			t.Fatalf("no chunk %v in %v", k, chunk)
		}
		typ := map[string]string{"rb-a": "runbook", "rb-two": "runbook", "rb-secret": "runbook", "adr-b": "decision"}[k.slug]
		return &domain.Hit{DocID: k.slug, ChunkID: id, Text: text[id], ProjectKey: "s", Origin: domain.OriginPrimary,
			Score: 0.5, CanonicalType: typ}
	}
	runbookKind := func(k domain.DocumentKind) bool { return k.CanonicalType == "runbook" }
	reader := domain.Principal{KeyID: "k", Projects: []string{"s"}, Role: domain.RoleReader}
	s := graphSearcher(p, search.DefaultGraphConfig())
	when, steps := key{"rb-a", "When"}, key{"rb-a", "Steps"}
	for _, tc := range []struct {
		name   string
		caller domain.Principal
		page   []key
		want   []key
	}{
		{"the first steps after the runbook's first hit", domain.Operator(),
			[]key{{"adr-b", "Decision"}, when, {"rb-a", "After"}},
			[]key{{"adr-b", "Decision"}, when, steps, {"rb-a", "After"}}},
		{"a page that holds the runbook's steps already", domain.Operator(),
			[]key{when, steps}, []key{when, steps}},
		{"a runbook of several procedures", domain.Operator(),
			[]key{{"rb-two", "After"}}, []key{{"rb-two", "After"}}},
		{"steps of another kind of document are not added", domain.Operator(),
			[]key{{"adr-b", "Decision"}}, []key{{"adr-b", "Decision"}}},
		{"a document the caller may not see", reader,
			[]key{{"rb-secret", "When"}}, []key{{"rb-secret", "When"}}},
		{"the caller who may see it", domain.Operator(),
			[]key{{"rb-secret", "When"}}, []key{{"rb-secret", "When"}, {"rb-secret", "Steps"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var page []*domain.Hit
			for _, k := range tc.page {
				page = append(page, hit(k))
			}
			got, err := s.WithSteps(domain.WithPrincipal(ctx, tc.caller), page, runbookKind)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d hits, want %v", len(got), tc.want)
			}
			for i, k := range tc.want {
				if got[i].ChunkID != chunk[k] || got[i].DocID != k.slug || got[i].Score != 0.5 || got[i].CanonicalType == "" {
					t.Errorf("hit %d: %s chunk %d, want %v (chunk %d)", i, got[i].DocID, got[i].ChunkID, k, chunk[k])
				}
			}
		})
	}
}
