package hashfeat

import (
	"math"
	"testing"
)

// Every configuration the measurements compare must yield deterministic unit
// vectors, or the comparison measures a bug.
func TestConfigsYieldDeterministicUnitVectors(t *testing.T) {
	t.Parallel()
	configs := map[string]Config{
		"char 3-5":         {MinN: 3, MaxN: 5, StopWeight: 1},
		"words only":       {WordWeight: 1},
		"bigrams":          {MinN: 3, MaxN: 5, WordWeight: 1, BigramWeight: 0.5},
		"across words":     {MinN: 3, MaxN: 5, CrossWord: true},
		"n weights":        {MinN: 3, MaxN: 5, NWeights: []float64{0.5, 0.75, 1}},
		"probes and seed":  {MinN: 3, MaxN: 4, Probes: 4, Seed: 7},
		"stop weight, raw": {MinN: 2, MaxN: 5, StopWeight: 0.3, TF: TFRaw},
		"binary, sqrt":     {MinN: 3, MaxN: 3, TF: TFBinary},
		"word length":      {MinN: 3, MaxN: 5, WordLenWeight: 0.5, TF: TFSqrt},
	}
	text := "The quick brown fox jumps over the lazy dog; the dog sleeps. Straße, naïve café, 42!"
	for name, c := range configs {
		s := NewScratch()
		a, b := make([]float32, 97), make([]float32, 97)
		c.Embed(text, a, nil, s)
		c.Embed(text, b, nil, NewScratch())
		var n float64
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s: not deterministic at %d", name, i)
			}
			n += float64(a[i]) * float64(a[i])
		}
		if math.Abs(n-1) > 1e-5 {
			t.Errorf("%s: squared norm %v, want 1", name, n)
		}
	}
}

func TestStopWordsAreDroppedWhole(t *testing.T) {
	t.Parallel()
	c := Config{MinN: 3, MaxN: 5, WordWeight: 1}
	s := NewScratch()
	if n := len(c.Count("the and of to", s)); n != 0 {
		t.Errorf("stop words produced %d features", n)
	}
	// "theme" is not a stop word even though "the" is its prefix.
	if n := len(c.Count("theme", s)); n == 0 {
		t.Error(`"theme" produced no features`)
	}
}

func TestGroupsDoNotCollide(t *testing.T) {
	t.Parallel()
	// " ab " is both the word "ab" padded (a char 4-gram) and the word feature
	// "ab"; the group bits keep them apart.
	c := Config{MinN: 3, MaxN: 5, WordWeight: 1}
	counts := c.Count("ab", NewScratch())
	groups := map[uint64]int{}
	for h := range counts {
		groups[h>>62]++
	}
	if groups[groupWord] != 1 || groups[groupChar] != 3 {
		t.Errorf("features by group = %v, want 3 char n-grams and 1 word", groups)
	}
}
