package project_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/project"
)

// TestListScopesToThePrincipal: the operator sees every project and every
// document; a key sees its projects only, and counts only the documents its
// groups may read.
func TestListScopesToThePrincipal(t *testing.T) {
	pool := dbtest.FreshPool(t)
	in := ingest.New(pool, embed.NewHash(0), markdown.Options{})
	files := map[string][]ingest.File{
		"alpha": {
			{Path: "open.md", Content: []byte("---\ntitle: Open\n---\nAnyone may read about the cache layer.\n")},
			{Path: "secret.md", Content: []byte("---\ntitle: Secret\naccess: [finance]\n---\nOnly finance reads the budget.\n")},
		},
		"beta": {{Path: "beta.md", Content: []byte("---\ntitle: Beta\n---\nThe beta project's page.\n")}},
	}
	for key, fs := range files {
		if _, err := in.Ingest(context.Background(), fs, ingest.Options{Project: key}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name      string
		principal domain.Principal
		want      map[string]int64 // project key -> documents it sees
	}{
		{"operator", domain.Operator(), map[string]int64{"alpha": 2, "beta": 1}},
		{"a key for alpha without the group", domain.Principal{KeyID: "k1", Projects: []string{"alpha"}, Role: domain.RoleReader},
			map[string]int64{"alpha": 1}},
		{"a key for alpha in finance", domain.Principal{KeyID: "k2", Projects: []string{"alpha"}, Role: domain.RoleReader,
			Groups: []string{"finance"}}, map[string]int64{"alpha": 2}},
		{"anonymous", domain.Anonymous(), map[string]int64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			list, err := project.List(domain.WithPrincipal(context.Background(), tc.principal), pool)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, p := range list {
				got[p.Key] = p.Documents
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if !slices.IsSortedFunc(list, func(a, b project.Summary) int { return strings.Compare(a.Key, b.Key) }) {
				t.Errorf("not in key order: %v", list)
			}
		})
	}
}
