package hierarchy

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/proto"

	"github.com/canonkb/canon/domain"
)

type labelledQuery struct {
	Query    string   `yaml:"query"`
	Relevant []string `yaml:"relevant"`
}

func loadQueries(t testing.TB) []labelledQuery {
	t.Helper()
	b, err := os.ReadFile("testdata/entity_queries.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Queries []labelledQuery `yaml:"queries"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Queries) == 0 {
		t.Fatal("no labelled queries")
	}
	return f.Queries
}

// precisionAt5 is the share of relevant documents among the first five distinct
// documents of the primary page then the runners-up.
func precisionAt5(res *domain.SearchResult, relevant []string) float64 {
	docs := distinctDocs(append(slices.Clone(res.Primary), res.RunnerUp...))
	n := 0
	for _, d := range docs[:min(5, len(docs))] {
		for _, r := range relevant {
			if d == r {
				n++
				break
			}
		}
	}
	return float64(n) / 5
}

type variant struct {
	name   string
	mutate func(*Config)
	off    bool // flat search (options.hierarchy = false)
}

// meanPrecision runs every labelled query through a variant and returns the mean
// precision@5 and the per-query values.
func meanPrecision(t *testing.T, qs []labelledQuery, v variant) (float64, []float64) {
	t.Helper()
	var mutate []func(*Config)
	if v.mutate != nil {
		mutate = append(mutate, v.mutate)
	}
	h := newSearcher(t, mutate...)
	var sum float64
	var per []float64
	for _, q := range qs {
		r := req(q.Query, func(r *domain.SearchRequest) {
			r.Options.Limit = 8
			if v.off {
				r.Options.Hierarchy = proto.Bool(false)
			}
		})
		p := precisionAt5(mustSearch(t, h, r), q.Relevant)
		per = append(per, p)
		sum += p
	}
	return sum / float64(len(qs)), per
}

// TestPrecisionAt5 measures precision@5 of the labelled entity-centric questions
// (testdata/entity_queries.yaml) flat and two-pass, and the variants behind the
// defaults (link strength, team discount, name stripping). Run with -v for the table.
func TestPrecisionAt5(t *testing.T) {
	t.Parallel()
	qs := loadQueries(t)
	variants := []variant{
		{name: "flat (hierarchy off)", off: true},
		{name: "two-pass, defaults"},
		{name: "link strength off", mutate: func(c *Config) { c.LinkStrength = false }},
		{name: "text half 0.5", mutate: func(c *Config) { c.TextHalf = 0.5 }},
		{name: "text half 2", mutate: func(c *Config) { c.TextHalf = 2 }},
		{name: "names kept in pass 2", mutate: func(c *Config) { c.StripNames = false }},
		{name: "team discount 0.5", mutate: func(c *Config) { c.Pass1.TeamDiscount = 0.5 }},
		{name: "team discount 0.6", mutate: func(c *Config) { c.Pass1.TeamDiscount = 0.6 }},
		{name: "team discount 0.7", mutate: func(c *Config) { c.Pass1.TeamDiscount = 0.7 }},
		{name: "team discount 0.9", mutate: func(c *Config) { c.Pass1.TeamDiscount = 0.9 }},
		{name: "team discount 1.0", mutate: func(c *Config) { c.Pass1.TeamDiscount = 1.0 }},
		{name: "alpha 0.3", mutate: func(c *Config) { c.Alpha = 0.3 }},
		{name: "alpha 0.7", mutate: func(c *Config) { c.Alpha = 0.7 }},
		{name: "alpha 1.0 (candidates only)", mutate: func(c *Config) { c.Alpha = 1 }},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-34s %s  per query\n", "variant", "P@5")
	means := map[string]float64{}
	for _, v := range variants {
		mean, per := meanPrecision(t, qs, v)
		means[v.name] = mean
		fmt.Fprintf(&b, "%-34s %.3f  %v\n", v.name, mean, per)
	}
	t.Log("\n" + b.String())
	flat, two := means["flat (hierarchy off)"], means["two-pass, defaults"]
	if two < flat+0.1 {
		t.Errorf("two-pass precision@5 %.3f, flat %.3f: expected a clear gain on entity questions", two, flat)
	}
}
