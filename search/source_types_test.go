package search_test

import (
	"context"
	"strings"
	"testing"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/search"
)

// A source_types value that is neither a format nor a source_type a document
// the caller may see declares is refused, naming the ones that are; a format is
// known though no document has it.
func TestSourceTypesAreChecked(t *testing.T) {
	t.Parallel()
	p := dbtest.FreshPool(t)
	ingestFiles(t, p, "st", map[string]string{
		"adr-a.md":    doc("adr-a", "decision", "accepted", "We cache.", "source_type: adr"),
		"note-b.md":   doc("note-b", "", "", "A note on caching."),
		"secret-c.md": doc("secret-c", "", "", "Vault caching.", "source_type: vault-memo", "access: [vault]"),
	})
	s := search.New(p, embed.NewHash(dim), search.Config{Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed),
		Profile: domain.ProfileHashKeywordLed})
	reader := domain.WithPrincipal(context.Background(), domain.Principal{Name: "r", AllProjects: true, Role: domain.RoleReader})
	operator := domain.WithPrincipal(context.Background(), domain.Operator())
	cases := []struct {
		name  string
		ctx   context.Context
		types []string
		want  string // "" when accepted
	}{
		{"declared", reader, []string{"adr"}, ""},
		{"a format no document has", reader, []string{"pdf", "markdown"}, ""},
		{"unknown", reader, []string{"markdown", "bogus"},
			`unknown value "bogus" in source_types: use a format (markdown, html, text, pdf, docx) or a source_type the documents of st declare (adr)`},
		// A reader is not told what the documents it may not see declare.
		{"hidden from the caller", reader, []string{"vault-memo"}, "declare (adr)"},
		{"seen by the operator", operator, []string{"vault-memo"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Search(c.ctx, req("caching", func(r *domain.SearchRequest) {
				r.Filters.ProjectKeys = []string{"st"}
				r.Filters.SourceTypes = c.types
			}))
			switch {
			case c.want == "" && err != nil:
				t.Errorf("got %v, want accepted", err)
			case c.want != "" && (!domain.IsInvalid(err) || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an InvalidError containing %q", err, c.want)
			}
		})
	}
}
