package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/canonkb/canon/domain"
)

// Depth is how many documents are scored per query: Recall@100 needs 100, which
// is also the most one search returns as primary hits.
const Depth = 100

// Searcher is the search path under test (*search.Searcher).
type Searcher interface {
	Search(ctx context.Context, req *domain.SearchRequest) (*domain.SearchResult, error)
}

// Variant is a set of ranking overrides to measure, named by its spec.
type Variant struct {
	Name    string
	Ranking domain.RankingOverride
}

// rankingAliases are short names for the Ranking fields a sweep varies most.
var rankingAliases = map[string]string{
	"k1": "bm25_k1", "b": "bm25_b", "heading_boost": "bm25_heading_boost", "hb": "bm25_heading_boost",
	"vector": "vector_weight", "keyword": "keyword_weight", "semantic": "semantic_weight", "fts": "fts_weight",
}

// ParseVariant reads "key=value,key=value" into ranking overrides. Keys are the
// canon.v1.Ranking field names (bm25_k1, vector_weight, max_chunks_per_doc, ...) or
// the aliases k1, b, heading_boost (hb), vector, keyword, semantic, fts; the key
// hybrid=V:K sets both fusions' weights at once (vector_weight and semantic_weight
// to V, keyword_weight and fts_weight to K). "" and "default" mean no overrides.
func ParseVariant(spec string) (Variant, error) {
	spec = strings.TrimSpace(spec)
	v := Variant{Name: spec, Ranking: domain.RankingOverride{}}
	if spec == "" || spec == "default" {
		v.Name = "default"
		return v, nil
	}
	set := func(name, value string) error {
		kind, ok := domain.RankingKnobKind(name)
		if !ok {
			return fmt.Errorf("unknown ranking key %q (use %s, or k1, b, heading_boost, hybrid=V:K)", name,
				strings.Join(domain.RankingKnobNames(), ", "))
		}
		switch kind {
		case domain.KnobNumber:
			x, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return fmt.Errorf("%s: %q is not a number", name, value)
			}
			v.Ranking[name] = x
		case domain.KnobInteger:
			x, err := strconv.ParseInt(value, 10, 32)
			if err != nil {
				return fmt.Errorf("%s: %q is not an integer", name, value)
			}
			v.Ranking[name] = float64(x)
		case domain.KnobSwitch:
			x, err := strconv.ParseBool(value)
			if err != nil {
				return fmt.Errorf("%s: %q is not true or false", name, value)
			}
			v.Ranking[name] = 0
			if x {
				v.Ranking[name] = 1
			}
		}
		return nil
	}
	for _, part := range strings.Split(spec, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || key == "" || value == "" {
			return v, fmt.Errorf("ranking %q: %q is not key=value", spec, part)
		}
		if key == "hybrid" {
			vec, kw, ok := strings.Cut(value, ":")
			if !ok {
				return v, fmt.Errorf("ranking %q: hybrid takes vector:keyword, e.g. hybrid=0.3:0.7", spec)
			}
			for _, kv := range [][2]string{{"vector_weight", vec}, {"semantic_weight", vec}, {"keyword_weight", kw}, {"fts_weight", kw}} {
				if err := set(kv[0], kv[1]); err != nil {
					return v, fmt.Errorf("ranking %q: %w", spec, err)
				}
			}
			continue
		}
		if alias, ok := rankingAliases[key]; ok {
			key = alias
		}
		if err := set(key, value); err != nil {
			return v, fmt.Errorf("ranking %q: %w", spec, err)
		}
	}
	return v, nil
}

// ParseFusions reads "all" or a comma-separated list of fusion methods.
func ParseFusions(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" || strings.TrimSpace(s) == "all" {
		return slices.Clone(evalOrder), nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(domain.Fusions(), f) {
			return nil, fmt.Errorf("unknown fusion %q: use all or any of %s", f, strings.Join(domain.Fusions(), ", "))
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// evalOrder runs the single legs first, then the fusions built on them.
var evalOrder = []string{domain.FusionKeywordOnly, domain.FusionSemanticOnly, domain.FusionRRF, domain.FusionWeighted}

// Options of one evaluation.
type Options struct {
	Fusions  []string  // default: all four
	Variants []Variant // default: one, without overrides
	// LimitQueries runs only the first n judged queries (qrels order); 0 runs all.
	LimitQueries int
	// Parallel queries in flight (default 1: latencies are those of one client).
	Parallel int
	// Progress receives searches done and the total.
	Progress func(done, total int)
}

// Result is one (variant, fusion) row: mean metrics over the queries and latency.
type Result struct {
	Variant   string  `json:"variant"`
	Fusion    string  `json:"fusion"`
	Queries   int     `json:"queries"`
	NDCG10    float64 `json:"ndcg_at_10"`
	Recall10  float64 `json:"recall_at_10"`
	Recall100 float64 `json:"recall_at_100"`
	MRR10     float64 `json:"mrr_at_10"`
	P50Ms     float64 `json:"latency_p50_ms"`
	P95Ms     float64 `json:"latency_p95_ms"`
	// Rejected counts queries the search refused (scored as empty rankings).
	Rejected int `json:"rejected,omitempty"`
}

// QueryText is the text sent for a query: queries longer than the search's limit
// (ArguAna has a few whole arguments over 4,000 characters) are cut at the last
// word boundary within it. The second result says whether it was cut.
func QueryText(q string) (string, bool) {
	if utf8.RuneCountInString(q) <= domain.MaxQueryLength {
		return q, false
	}
	cut, n := 0, 0
	for i := range q {
		if n == domain.MaxQueryLength {
			cut = i
			break
		}
		n++
	}
	s := q[:cut]
	if j := strings.LastIndexFunc(s, unicode.IsSpace); j > len(s)/2 {
		s = s[:j]
	}
	return s, true
}

// Queries returns the judged query ids that an evaluation with limit runs.
func (ds *Dataset) queryIDs(limit int) []string {
	ids := ds.TestQueries
	if limit > 0 && limit < len(ids) {
		ids = ids[:limit]
	}
	return ids
}

// TruncatedQueries counts the judged queries QueryText cuts.
func (ds *Dataset) TruncatedQueries(limit int) int {
	n := 0
	for _, id := range ds.queryIDs(limit) {
		if _, cut := QueryText(ds.Queries[id]); cut {
			n++
		}
	}
	return n
}

type job struct{ variant, fusion, query int }

type outcome struct {
	ranking  []string
	elapsed  time.Duration
	rejected bool
}

// Evaluate runs every judged query of ds against project for each variant and
// fusion, and returns one Result per (variant, fusion), in that order.
func Evaluate(ctx context.Context, s Searcher, ds *Dataset, project string, opts Options) ([]Result, error) {
	fusions := opts.Fusions
	if len(fusions) == 0 {
		fusions = evalOrder
	}
	variants := opts.Variants
	if len(variants) == 0 {
		variants = []Variant{{Name: "default"}}
	}
	parallel := max(opts.Parallel, 1)
	qids := ds.queryIDs(opts.LimitQueries)
	texts := make([]string, len(qids))
	for i, id := range qids {
		texts[i], _ = QueryText(ds.Queries[id])
	}

	outcomes := make([][][]outcome, len(variants))
	for v := range variants {
		outcomes[v] = make([][]outcome, len(fusions))
		for f := range fusions {
			outcomes[v][f] = make([]outcome, len(qids))
		}
	}
	total := len(variants) * len(fusions) * len(qids)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan job)
	var (
		mu       sync.Mutex
		firstErr error
		done     int
		wg       sync.WaitGroup
	)
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				o, err := runOne(ctx, s, project, variants[j.variant], fusions[j.fusion], qids[j.query], texts[j.query])
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				outcomes[j.variant][j.fusion][j.query] = o
				done++
				if opts.Progress != nil {
					opts.Progress(done, total)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for v := range variants {
		for f := range fusions {
			for q := range qids {
				select {
				case jobs <- job{v, f, q}:
				case <-ctx.Done():
					break feed
				}
			}
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	var results []Result
	for v, variant := range variants {
		for f, fusion := range fusions {
			r := Result{Variant: variant.Name, Fusion: fusion, Queries: len(qids)}
			lat := make([]time.Duration, 0, len(qids))
			for q, o := range outcomes[v][f] {
				rels := ds.Qrels[qids[q]]
				r.NDCG10 += NDCG(o.ranking, rels, 10)
				r.Recall10 += Recall(o.ranking, rels, 10)
				r.Recall100 += Recall(o.ranking, rels, 100)
				r.MRR10 += MRR(o.ranking, rels, 10)
				if o.rejected {
					r.Rejected++
				} else {
					lat = append(lat, o.elapsed)
				}
			}
			if n := float64(len(qids)); n > 0 {
				r.NDCG10 /= n
				r.Recall10 /= n
				r.Recall100 /= n
				r.MRR10 /= n
			}
			r.P50Ms = ms(Percentile(lat, 50))
			r.P95Ms = ms(Percentile(lat, 95))
			results = append(results, r)
		}
	}
	return results, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// runOne searches one query and turns the hits into a document ranking.
func runOne(ctx context.Context, s Searcher, project string, v Variant, fusion, qid, text string) (outcome, error) {
	ranking := maps.Clone(v.Ranking)
	if ranking == nil {
		ranking = domain.RankingOverride{}
	}
	// One chunk per document, so 100 hits are 100 distinct documents.
	ranking["max_chunks_per_doc"] = 1
	off := false
	req := &domain.SearchRequest{
		Query:   text,
		Filters: domain.RawFilters{ProjectKeys: []string{project}},
		Options: domain.SearchOptions{
			Fusion: fusion, Limit: Depth, Ranking: ranking,
			GraphExpansion: &off, RejectedInjection: &off,
		},
	}
	// A query the search cannot take (empty text) scores as an empty ranking, as
	// a system that returns nothing would; any other refusal (a bad override) ends
	// the run.
	if domain.ValidateQuery(text) != nil {
		return outcome{rejected: true}, nil //nolint:nilerr // the rejection is the outcome, not a failure
	}
	start := time.Now()
	res, err := s.Search(ctx, req)
	elapsed := time.Since(start)
	if err != nil {
		return outcome{}, fmt.Errorf("query %s (%s, ranking %s): %w", qid, fusion, v.Name, err)
	}
	hits := make([]string, 0, len(res.Primary)+len(res.RunnerUp))
	for _, list := range [][]*domain.Hit{res.Primary, res.RunnerUp} {
		for _, h := range list {
			hits = append(hits, DecodeSlug(h.DocID))
		}
	}
	return outcome{ranking: docRanking(hits, qid, Depth), elapsed: elapsed}, nil
}
