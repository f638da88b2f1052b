package search

import (
	"testing"

	"github.com/canonkb/canon/domain"
)

// Unfiltered requests share one generic plan; a request's filters are planned for
// their own values. Pass 2 of a two-pass search (Prepared.Rank with documents)
// starts from the listed ids, so it keeps the generic plan even with filters
// (when it filtered by slugs, a generic plan scanned every document's slug: 2 s
// at 100,000 chunks).
func TestPlanCacheMode(t *testing.T) {
	t.Parallel()
	unfiltered := &plan{filters: domain.Filters{ProjectKeys: []string{"p"}}}
	filtered := &plan{filters: domain.Filters{ProjectKeys: []string{"p"}, Statuses: []string{"accepted"}}}
	filtered.params.Filtered = filtered.filters.RestrictsDocuments()
	for _, c := range []struct {
		name string
		p    *plan
		want string
	}{
		{"no filters", unfiltered, "force_generic_plan"},
		{"status filter", filtered, "force_custom_plan"},
		{"pass 2 over documents", unfiltered.listing([]int64{1, 2}), "force_generic_plan"},
		{"pass 2 with a status filter", filtered.listing([]int64{1, 2}), "force_generic_plan"},
	} {
		if got := planCacheMode(c.p); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	r := unfiltered.listing([]int64{7})
	if !r.params.Listed || !r.params.Bm25Exact || len(r.params.ListedDocumentIds) != 1 || unfiltered.params.Listed {
		t.Errorf("listing: %+v (and must not change the plan it copies)", r.params)
	}
}
