package search

import (
	"testing"

	"github.com/canonkb/canon/domain"
)

// Unfiltered requests share one generic plan; anything that restricts documents,
// a request's filters or pass 2 of a two-pass search (Prepared.Rank with
// documents), is planned for its own values. Pass 2 once ran on the generic plan
// and took 2 s at 100,000 chunks (the plan scanned every document's slug).
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
		{"pass 2 over documents", unfiltered.restrictedTo([]string{"a", "b"}), "force_custom_plan"},
	} {
		if got := planCacheMode(c.p); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	r := unfiltered.restrictedTo([]string{"a"})
	if !r.params.DocIdsFilter || !r.params.Bm25Exact || len(r.params.DocIds) != 1 || unfiltered.params.Filtered {
		t.Errorf("restrictedTo: %+v (and must not change the plan it copies)", r.params)
	}
}
