package bench

import (
	"math"
	"slices"
	"time"
)

// The metric functions take a ranking (document ids, best first, already
// deduplicated and with the query's own id removed) and the query's judgments
// (document id -> graded score; a score <= 0 is "not relevant"). They match
// pytrec_eval / trec_eval, which BEIR and Pyserini report.

// NDCG is nDCG@k with the judgment scores as linear gains and the log2 discount:
// DCG = Σ_{i=1..k} rel_i / log2(i+1), divided by the DCG of the ideal ranking of
// the judged documents. A query without a relevant document scores 0.
func NDCG(ranking []string, qrels map[string]int, k int) float64 {
	var dcg float64
	for i, id := range ranking[:min(k, len(ranking))] {
		if rel := qrels[id]; rel > 0 {
			dcg += float64(rel) / math.Log2(float64(i+2))
		}
	}
	gains := make([]int, 0, len(qrels))
	for _, rel := range qrels {
		if rel > 0 {
			gains = append(gains, rel)
		}
	}
	slices.SortFunc(gains, func(a, b int) int { return b - a })
	var ideal float64
	for i, rel := range gains[:min(k, len(gains))] {
		ideal += float64(rel) / math.Log2(float64(i+2))
	}
	if ideal == 0 {
		return 0
	}
	return dcg / ideal
}

// Recall is the share of the relevant documents found in the first k.
func Recall(ranking []string, qrels map[string]int, k int) float64 {
	relevant := 0
	for _, rel := range qrels {
		if rel > 0 {
			relevant++
		}
	}
	if relevant == 0 {
		return 0
	}
	found := 0
	for _, id := range ranking[:min(k, len(ranking))] {
		if qrels[id] > 0 {
			found++
		}
	}
	return float64(found) / float64(relevant)
}

// Precision is the share of the first k ranks that hold a relevant document (a
// ranking shorter than k counts its missing ranks as not relevant).
func Precision(ranking []string, qrels map[string]int, k int) float64 {
	if k <= 0 {
		return 0
	}
	found := 0
	for _, id := range ranking[:min(k, len(ranking))] {
		if qrels[id] > 0 {
			found++
		}
	}
	return float64(found) / float64(k)
}

// MRR is the reciprocal rank of the first relevant document within the first k,
// 0 when there is none.
func MRR(ranking []string, qrels map[string]int, k int) float64 {
	for i, id := range ranking[:min(k, len(ranking))] {
		if qrels[id] > 0 {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of ds; 0 for none.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// docRanking turns chunk hits (best first) into a document ranking: the first hit of
// a document is its best chunk, the query's own document is dropped (BEIR
// ignore_identical_ids), and the list is cut to depth.
func docRanking(hitIDs []string, queryID string, depth int) []string {
	seen := make(map[string]bool, len(hitIDs))
	out := make([]string, 0, min(depth, len(hitIDs)))
	for _, id := range hitIDs {
		if len(out) == depth {
			break
		}
		if id == queryID || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, id)
	}
	return out
}
