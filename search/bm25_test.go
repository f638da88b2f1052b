package search_test

import (
	"context"
	"math"
	"testing"
)

// canon_bm25 is the one definition of a term's BM25 weight (migrations 00007 and
// 00050); every branch of the ranking statement and the explain query call it.
// Its two extensions must be off at 0 (exactly the formula before them) and
// otherwise follow their published definitions: BM25+ adds idf × delta to every
// matched term, and k3 saturates a term the question repeats.
func TestBM25FunctionMatchesItsDefinition(t *testing.T) {
	handbook(t)
	ctx := context.Background()
	p := pool
	const k1, b, headingBoost, avgdl = 1.2, 0.75, 2.0, 100.0
	reference := func(tf, tfHeading, length int, idf, qtf, delta, k3 float64) float64 {
		w := float64(tf) + headingBoost*float64(tfHeading)
		if k3 > 0 {
			qtf = (k3 + 1) * qtf / (k3 + qtf)
		}
		return idf * qtf * (w*(k1+1)/(w+k1*(1-b+b*float64(length)/avgdl)) + delta)
	}
	for _, c := range []struct {
		name                  string
		tf, tfHeading, length int
		idf, qtf, delta, k3   float64
	}{
		{"plain BM25", 3, 0, 100, 2, 1, 0, 0},
		{"heading occurrences", 1, 1, 40, 1.5, 1, 0, 0},
		{"a repeated query term counts linearly at k3 0", 2, 0, 250, 3, 4, 0, 0},
		{"BM25+ lower bound", 1, 0, 1000, 2, 1, 1, 0},
		{"k3 saturates a repeated query term", 2, 0, 80, 2, 4, 0, 10},
		{"k3 leaves a single occurrence alone", 2, 0, 80, 2, 1, 0, 10},
		{"both", 5, 1, 300, 0.7, 3, 0.5, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got float64
			if err := p.QueryRow(ctx, `SELECT canon_bm25($1::integer, $2::integer, $3::integer, $4::float8, $5::float8,
				$6::float8, $7::float8, $8::float8, $9::float8, $10::float8, $11::float8)`,
				c.tf, c.tfHeading, c.length, c.idf, c.qtf, k1, b, headingBoost, avgdl, c.delta, c.k3).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if want := reference(c.tf, c.tfHeading, c.length, c.idf, c.qtf, c.delta, c.k3); math.Abs(got-want) > 1e-12 {
				t.Errorf("canon_bm25 = %v, want %v", got, want)
			}
		})
	}
	// BM25+'s point: a long chunk that contains the term never scores below the
	// bare presence bonus, however long it is.
	var long float64
	if err := p.QueryRow(ctx, `SELECT canon_bm25(1, 0, 1000000, 2, 1, 1.2, 0.75, 2, 100, 1, 0)`).Scan(&long); err != nil {
		t.Fatal(err)
	}
	if long < 2 {
		t.Errorf("a very long chunk with the term scores %v under BM25+ delta 1, want at least idf × delta = 2", long)
	}
}
