package search_test

import (
	"context"
	"slices"
	"testing"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/search"
)

// A hit names its document's owners as their people's pages title them, as the
// reader may see those pages: an owner without a page as stored (lower case), one whose page
// the reader may not see left out (its slug would name a hidden page).
func TestOwnersReadAsNames(t *testing.T) {
	t.Parallel()
	p := dbtest.Pool(t)
	ctx := context.Background()
	const project = "owners"
	ingestFiles(t, p, project, map[string]string{
		"dec-vault.md": "---\nid: dec-vault\ntitle: Secrets in Vault\ntype: decision\nstatus: accepted\n" +
			"owners: [aoife, ingrid, Pat Doe]\n---\n# Secrets in Vault\n\nEvery secret lives in Vault.\n",
		"aoife.md":  "---\nid: aoife\ntitle: Aoife Brennan\ntype: person\n---\n# Aoife Brennan\n\nTech lead.\n",
		"ingrid.md": "---\nid: ingrid\ntitle: Ingrid Solberg\ntype: person\naccess: [hr]\n---\n# Ingrid Solberg\n\nManager.\n",
	})
	s := graphSearcher(p, search.DefaultGraphConfig())
	reader := domain.Principal{Name: "reader", Projects: []string{project}, Role: domain.RoleReader, Groups: []string{}}
	hr := reader
	hr.Groups = []string{"hr"}
	for _, tc := range []struct {
		name string
		who  domain.Principal
		want []string
	}{
		{"a reader", reader, []string{"Aoife Brennan", "pat doe"}},
		{"a reader of the hidden page", hr, []string{"Aoife Brennan", "Ingrid Solberg", "pat doe"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.Search(domain.WithPrincipal(ctx, tc.who), req("where do secrets live?", func(r *domain.SearchRequest) {
				r.Filters.ProjectKeys = []string{project}
			}))
			if err != nil {
				t.Fatal(err)
			}
			i := rankOf(res.Primary, "dec-vault")
			if i < 0 {
				t.Fatalf("dec-vault not found: %v", docIDs(res.Primary))
			}
			if got := res.Primary[i].Owners; !slices.Equal(got, tc.want) {
				t.Errorf("owners %q, want %q", got, tc.want)
			}
		})
	}
}
