package search_test

import (
	"context"
	"testing"

	"github.com/canonkb/canon/domain"
)

// BenchmarkSearchHandbook measures one search per iteration on the example
// handbook, per fusion method, on a warm pool (prepared statements cached per
// connection, as in `canon serve`). Corpus-scale latency lives in `canon bench latency`.
func BenchmarkSearchHandbook(b *testing.B) {
	s := handbookB(b)
	for _, fusion := range domain.Fusions() {
		b.Run(fusion, func(b *testing.B) {
			r := req("what cache layer did we standardise on?", func(r *domain.SearchRequest) { r.Options.Fusion = fusion })
			for b.Loop() {
				if _, err := s.Search(context.Background(), r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
