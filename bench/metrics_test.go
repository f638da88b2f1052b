package bench

import (
	"math"
	"slices"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestMetrics(t *testing.T) {
	log2of3 := math.Log2(3) // discount of rank 2
	tests := []struct {
		name              string
		ranking           []string
		qrels             map[string]int
		k                 int
		ndcg, recall, mrr float64
	}{
		{
			name: "one relevant at rank 2", ranking: []string{"a", "b", "c"}, qrels: map[string]int{"b": 1}, k: 10,
			ndcg: 1 / log2of3, recall: 1, mrr: 0.5, // 0.630930
		},
		{
			name: "relevant first", ranking: []string{"b", "a"}, qrels: map[string]int{"b": 1}, k: 10,
			ndcg: 1, recall: 1, mrr: 1,
		},
		{
			// DCG = 2/1 + 1/log2(4) = 2.5; ideal = 3/1 + 2/log2(3) + 1/log2(4) = 4.761860
			name: "graded, one relevant never retrieved", ranking: []string{"a", "b", "c", "d"},
			qrels: map[string]int{"a": 2, "c": 1, "e": 3}, k: 10,
			ndcg: 2.5 / (3 + 2/log2of3 + 0.5), recall: 2.0 / 3, mrr: 1, // 0.525005
		},
		{
			name: "cut-off excludes the hit", ranking: []string{"x", "y", "r"}, qrels: map[string]int{"r": 1}, k: 2,
			ndcg: 0, recall: 0, mrr: 0,
		},
		{
			name: "graded order inverted", ranking: []string{"d2", "db"}, qrels: map[string]int{"d2": 1, "db": 2}, k: 10,
			ndcg: (1 + 2/log2of3) / (2 + 1/log2of3), recall: 1, mrr: 1, // 0.859719
		},
		{
			name: "zero scores are not relevant", ranking: []string{"a", "b"}, qrels: map[string]int{"a": 0, "b": 1}, k: 10,
			ndcg: 1 / log2of3, recall: 1, mrr: 0.5,
		},
		{
			name: "no relevant document", ranking: []string{"a"}, qrels: map[string]int{"a": 0}, k: 10,
			ndcg: 0, recall: 0, mrr: 0,
		},
		{
			name: "empty ranking", ranking: nil, qrels: map[string]int{"a": 1}, k: 10,
			ndcg: 0, recall: 0, mrr: 0,
		},
		{
			// ideal = 1 + 1/log2(3) = 1.630930: the missing document still counts
			name: "relevant document missing from the corpus", ranking: []string{"a"}, qrels: map[string]int{"a": 1, "z": 1}, k: 10,
			ndcg: 1 / (1 + 1/log2of3), recall: 0.5, mrr: 1, // 0.613147
		},
		{
			name: "recall at 1 of 3", ranking: []string{"a", "c"}, qrels: map[string]int{"a": 1, "c": 1, "e": 1}, k: 1,
			ndcg: 1, recall: 1.0 / 3, mrr: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NDCG(tt.ranking, tt.qrels, tt.k); !near(got, tt.ndcg) {
				t.Errorf("NDCG@%d = %.6f, want %.6f", tt.k, got, tt.ndcg)
			}
			if got := Recall(tt.ranking, tt.qrels, tt.k); !near(got, tt.recall) {
				t.Errorf("Recall@%d = %.6f, want %.6f", tt.k, got, tt.recall)
			}
			if got := MRR(tt.ranking, tt.qrels, tt.k); !near(got, tt.mrr) {
				t.Errorf("MRR@%d = %.6f, want %.6f", tt.k, got, tt.mrr)
			}
		})
	}
	// Hand-computed decimals, so a formula change cannot move both sides at once.
	if got := NDCG([]string{"a", "b", "c", "d"}, map[string]int{"a": 2, "c": 1, "e": 3}, 10); math.Abs(got-0.525005) > 1e-6 {
		t.Errorf("graded nDCG = %.6f, want 0.525005", got)
	}
	if got := NDCG([]string{"a", "b"}, map[string]int{"b": 1}, 10); math.Abs(got-0.630930) > 1e-6 {
		t.Errorf("rank-2 nDCG = %.6f, want 0.630930", got)
	}
}

func TestDocRanking(t *testing.T) {
	tests := []struct {
		hits  []string
		query string
		depth int
		want  []string
	}{
		{[]string{"q1", "a", "a", "b", "q1", "c"}, "q1", 2, []string{"a", "b"}},
		{[]string{"q1", "a", "a", "b", "q1", "c"}, "q1", 10, []string{"a", "b", "c"}},
		{[]string{"a", "b"}, "zz", 1, []string{"a"}},
		{nil, "q", 100, []string{}},
	}
	for _, tt := range tests {
		if got := docRanking(tt.hits, tt.query, tt.depth); !slices.Equal(got, tt.want) {
			t.Errorf("docRanking(%v, %q, %d) = %v, want %v", tt.hits, tt.query, tt.depth, got, tt.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{ms(5, 1, 3, 2, 4), 50, 3 * time.Millisecond},
		{ms(5, 1, 3, 2, 4), 95, 5 * time.Millisecond},
		{ms(5, 1, 3, 2, 4), 20, 1 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20), 95, 19 * time.Millisecond},
		{ms(7), 50, 7 * time.Millisecond},
		{nil, 50, 0},
	}
	for _, tt := range tests {
		if got := Percentile(tt.in, tt.p); got != tt.want {
			t.Errorf("Percentile(%v, %g) = %v, want %v", tt.in, tt.p, got, tt.want)
		}
	}
}
