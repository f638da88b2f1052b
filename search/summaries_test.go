package search_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/search"
)

// An answer's context gets the summary of each document on the page that has
// one, once, before the document's first hit; never a document's title standing
// in for a missing summary, never for a page that is not canonical, never for a
// document the caller may not see.
func TestWithSummaries(t *testing.T) {
	t.Parallel()
	p := dbtest.FreshPool(t)
	ctx := context.Background()
	ingestFiles(t, p, "s", map[string]string{
		"adr-a.md": doc("adr-a", "decision", "accepted", "## Context\n\nAlpha context.\n\n## Decision\n\nAlpha decision.",
			`summary: "Alpha is decided."`),
		"adr-b.md":      doc("adr-b", "decision", "accepted", "## Context\n\nBeta context."),
		"adr-c.md":      doc("adr-c", "decision", "accepted", "## Context\n\nGamma context.\n\n## Decision\n\nGamma decision."),
		"note.md":       doc("note", "", "", "A note about alpha."),
		"adr-secret.md": doc("adr-secret", "decision", "accepted", "## Context\n\nSecret context.", `summary: "Secret is decided."`, "access: [vault]"),
	})
	chunk := map[string]int64{} // "slug/ordinal" -> chunk id
	text := map[string]string{}
	rows, err := p.Query(ctx, `SELECT d.slug, c.ordinal, c.id, c.text FROM chunks c JOIN documents d ON d.id = c.document_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var slug string
		var ordinal int
		var id int64
		var body string
		if err := rows.Scan(&slug, &ordinal, &id, &body); err != nil {
			t.Fatal(err)
		}
		chunk[fmt.Sprintf("%s/%d", slug, ordinal)] = id
		text[fmt.Sprintf("%s/%d", slug, ordinal)] = body
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	hit := func(key string) *domain.Hit {
		id, ok := chunk[key]
		if !ok {
			t.Fatalf("no chunk %s in %v", key, chunk)
		}
		slug := key[:len(key)-2]
		return &domain.Hit{DocID: slug, ChunkID: id, Text: text[key], ProjectKey: "s", Origin: domain.OriginPrimary, Score: 0.5,
			LinkingEntity: "dana", IsSummary: key == "adr-a/0"}
	}
	reader := domain.Principal{KeyID: "k", Projects: []string{"s"}, Role: domain.RoleReader}
	vault := reader
	vault.Groups = []string{"vault"}
	s := graphSearcher(p, search.DefaultGraphConfig())
	for _, tc := range []struct {
		name   string
		caller domain.Principal
		page   []string
		want   []string
	}{
		{"each document's summary before its first hit", domain.Operator(),
			[]string{"adr-a/2", "note/0", "adr-a/1", "adr-b/1", "adr-secret/1"},
			[]string{"adr-a/0", "adr-a/2", "note/0", "adr-a/1", "adr-b/1", "adr-secret/0", "adr-secret/1"}},
		{"a summary taken from the first paragraph, whose chunk is not on the page", domain.Operator(),
			[]string{"adr-c/2"},
			[]string{"adr-c/0", "adr-c/2"}},
		{"a summary already on the page", domain.Operator(),
			[]string{"adr-a/1", "adr-a/0"},
			[]string{"adr-a/1", "adr-a/0"}},
		{"a document the caller may not see", reader,
			[]string{"adr-secret/1", "adr-a/1"},
			[]string{"adr-secret/1", "adr-a/0", "adr-a/1"}},
		{"a caller of the document's group", vault,
			[]string{"adr-secret/1"},
			[]string{"adr-secret/0", "adr-secret/1"}},
		{"an empty page", domain.Operator(), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var page []*domain.Hit
			for _, k := range tc.page {
				page = append(page, hit(k))
			}
			before := slices.Clone(page)
			got, err := s.WithSummaries(domain.WithPrincipal(ctx, tc.caller), page)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, h := range got {
				key := ""
				for k, id := range chunk {
					if id == h.ChunkID {
						key = k
					}
				}
				keys = append(keys, key)
				summary := strings.HasPrefix(key, "adr-") && strings.HasSuffix(key, "/0")
				if h.IsSummary != summary || h.LinkingEntity != "dana" || h.Score != 0.5 || h.Origin != domain.OriginPrimary {
					t.Errorf("%s: summary %v, entity %q, score %v, origin %s", key, h.IsSummary, h.LinkingEntity, h.Score, h.Origin)
				}
				if h.IsSummary && key != "adr-a/0" && !strings.HasSuffix(h.Text, "is decided.") && h.Text != "Gamma context." {
					t.Errorf("%s: text %q, want the summary", key, h.Text)
				}
			}
			if !slices.Equal(keys, tc.want) {
				t.Errorf("got %v, want %v", keys, tc.want)
			}
			if !slices.Equal(page, before) {
				t.Error("the page given was modified")
			}
		})
	}
}
