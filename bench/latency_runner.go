package bench

// The latency bench's load runner: the methods it times, one cell per method and
// concurrency, and pairs timed interleaved.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"

	"github.com/canonkb/canon/domain"
)

// method is one measured way to answer a question.
type method struct {
	name, what string
	run        func(ctx context.Context, q string) (rows int, err error)
}

func latencyMethods(s LatencySetup, o LatencyOptions, rep *LatencyReport, projectID int64) []method {
	search := func(sr Searcher, fusion string, graph bool) func(context.Context, string) (int, error) {
		return func(ctx context.Context, q string) (int, error) {
			opts := domain.SearchOptions{Fusion: fusion, Limit: o.Limit}
			if !graph {
				opts.GraphExpansion, opts.RejectedInjection = new(false), new(false)
			}
			res, err := sr.Search(ctx, &domain.SearchRequest{Query: q, Options: opts,
				Filters: domain.RawFilters{ProjectKeys: []string{rep.Project}}})
			return len(res.Primary), err
		}
	}
	embedQ := func(ctx context.Context, q string) (*pgvector.Vector, error) {
		v, err := s.Embedder.EmbedQuery(ctx, q)
		if err != nil {
			return nil, err
		}
		vec := pgvector.NewVector(v)
		return &vec, nil
	}
	rk := s.Ranking
	// What canon serve answers SearchService.Search with: the two-pass searcher,
	// whose pass 1 runs beside the flat ranking of a question that names no entity.
	var servedBy Searcher = s.Searcher
	served := "Searcher.Search as served"
	if s.Hierarchy != nil {
		servedBy, served = s.Hierarchy, "hierarchy.Searcher.Search as canon serve answers it (pass 1 of the entity search beside the flat ranking)"
	}
	ms := []method{
		{"canon/weighted", "Searcher.Search, fusion weighted, graph step off: embed + project lookup + the ranking statement",
			search(s.Searcher, domain.FusionWeighted, false)},
		{"canon/rrf", "the same, fusion rrf", search(s.Searcher, domain.FusionRRF, false)},
		{"canon/semantic_only", "the same, fusion semantic_only (the statement with the keyword leg off)",
			search(s.Searcher, domain.FusionSemanticOnly, false)},
		{"canon/keyword_only", "the same, fusion keyword_only (the statement with the vector leg off)",
			search(s.Searcher, domain.FusionKeywordOnly, false)},
		{"canon/weighted+graph", served + ", weighted, graph step (expansion, rejected injection) on",
			search(servedBy, domain.FusionWeighted, true)},
		{"canon/key+graph", "the same as an API key's reader (not the operator: every leg probes documents' access lists; this corpus has none, so it sees everything)",
			func(ctx context.Context, q string) (int, error) {
				key := domain.Principal{KeyID: "bench", Name: "bench", Projects: []string{rep.Project}, Role: domain.RoleReader}
				return search(servedBy, domain.FusionWeighted, true)(domain.WithPrincipal(ctx, key), q)
			}},
	}
	if s.HTTP != nil {
		ms = append(ms, method{"http/weighted+graph", "the same through canon's server (Connect, protobuf) on 127.0.0.1",
			search(s.HTTP, domain.FusionWeighted, true)})
	}
	ms = append(ms,
		method{"ref/hnsw", fmt.Sprintf("bare HNSW top-%d: ORDER BY embedding <=> q LIMIT %d, ef_search %d, iterative scan as canon (one batch)", o.Limit, o.Limit, rep.EFSearch),
			func(ctx context.Context, q string) (int, error) {
				vec, err := embedQ(ctx, q)
				if err != nil {
					return 0, err
				}
				return batchRows(ctx, s.Pool, rep.EFSearch, refHNSW, vec, []int64{projectID}, o.Limit)
			}},
		method{"ref/bm25", fmt.Sprintf("bare BM25 top-%d over the postings (canon's keyword_scored alone)", o.Limit),
			func(ctx context.Context, q string) (int, error) {
				return queryRows(ctx, s.Pool, refBM25, q, []int64{projectID}, o.Limit, rk.BM25K1, rk.BM25B)
			}},
		method{"peer/supabase", "Supabase's hybrid_search SQL function as published (RRF, row_number over the whole table)",
			func(ctx context.Context, q string) (int, error) {
				vec, err := embedQ(ctx, q)
				if err != nil {
					return 0, err
				}
				return queryRows(ctx, s.Pool, supabaseCall, q, vec, o.Limit)
			}},
		method{"peer/pgvector-rrf", "pgvector examples' hybrid RRF: each leg ORDER BY ... LIMIT 20, one statement",
			func(ctx context.Context, q string) (int, error) {
				vec, err := embedQ(ctx, q)
				if err != nil {
					return 0, err
				}
				return queryRows(ctx, s.Pool, pgvectorRRF, q, vec, 60, o.Limit)
			}},
	)
	if len(o.Methods) == 0 {
		return ms
	}
	var out []method
	for _, m := range ms {
		if slices.Contains(o.Methods, m.name) {
			out = append(out, m)
		}
	}
	return out
}

func queryRows(ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) (int, error) {
	rows, err := pool.Query(ctx, sql, args...)
	if err != nil {
		return 0, err
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	return n, rows.Err()
}

// batchRows runs canon's HNSW session settings and a query in one batch (one
// round trip, one implicit transaction), as the searcher does.
func batchRows(ctx context.Context, pool *pgxpool.Pool, ef int, sql string, args ...any) (int, error) {
	b := &pgx.Batch{}
	b.Queue(hnswSettings, strconv.Itoa(ef))
	b.Queue(sql, args...)
	br := pool.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return 0, err
	}
	rows, err := br.Query()
	if err != nil {
		return 0, err
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	return n, rows.Err()
}

const hnswSettings = `SELECT set_config('hnsw.ef_search', $1::text, true),
       set_config('hnsw.iterative_scan', 'relaxed_order', true)`

// Bounds of warmUp, per method.
const (
	warmUpQueries = 200
	warmUpTime    = 2 * time.Second
)

// warmUp runs every method, unmeasured, over the first questions before any cell
// is measured: the first cell of a run otherwise reads pages the later ones find
// cached (canon/weighted measured 9.4 ms as the first cell and 6.1 ms
// interleaved later in the same run).
func warmUp(ctx context.Context, methods []method, queries []string) {
	for _, m := range methods {
		deadline := time.Now().Add(warmUpTime)
		for i := 0; i < warmUpQueries && i < len(queries) && time.Now().Before(deadline) && ctx.Err() == nil; i++ {
			m.run(ctx, queries[i]) //nolint:errcheck // unmeasured: the cells count errors
		}
	}
}

func runCell(ctx context.Context, m method, queries []string, conc int, o LatencyOptions) LatencyCell {
	cell := LatencyCell{Method: m.name, Concurrency: conc}
	// Warm-up, unmeasured: every connection prepares the statement.
	var wg sync.WaitGroup
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 3 {
				m.run(ctx, queries[len(queries)-1-(w*3+k)%len(queries)]) //nolint:errcheck // measured below
			}
		}()
	}
	wg.Wait()

	var (
		next     atomic.Int64
		mu       sync.Mutex
		all      []time.Duration
		rowsSum  int
		errCount int
		firstErr string
	)
	start := time.Now()
	deadline := start.Add(o.Duration)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			rows, errs, first := 0, 0, ""
			for time.Now().Before(deadline) && ctx.Err() == nil {
				n := next.Add(1)
				if n > int64(o.MaxRequests) {
					break
				}
				q := queries[int(n-1)%len(queries)]
				t0 := time.Now()
				got, err := m.run(ctx, q)
				d := time.Since(t0)
				if err != nil {
					errs++
					if first == "" {
						first = err.Error()
					}
					continue
				}
				rows += got
				mine = append(mine, d)
			}
			mu.Lock()
			all = append(all, mine...)
			rowsSum += rows
			errCount += errs
			if firstErr == "" {
				firstErr = first
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	cell.summarize(all, rowsSum, errCount, firstErr, time.Since(start))
	return cell
}

// summarize fills the cell's counts and statistics from its requests' durations.
func (cell *LatencyCell) summarize(ds []time.Duration, rows, errs int, firstErr string, elapsed time.Duration) {
	cell.Requests, cell.Errors, cell.FirstError = len(ds), errs, firstErr
	cell.ElapsedS = elapsed.Seconds()
	if len(ds) == 0 {
		return
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	cell.MeanMs = ms(sum / time.Duration(len(ds)))
	cell.P50Ms = ms(Percentile(ds, 50))
	cell.P95Ms = ms(Percentile(ds, 95))
	cell.P99Ms = ms(Percentile(ds, 99))
	cell.QPS = float64(len(ds)) / elapsed.Seconds()
	cell.AvgRows = float64(rows) / float64(len(ds))
}

func findMethod(ms []method, name string) *method {
	for i := range ms {
		if ms[i].name == name {
			return &ms[i]
		}
	}
	return nil
}

// LatencyPair is two methods measured interleaved, one request in flight: each
// question runs through A, then B (the order alternating from one question to
// the next), so a change in the machine's speed during the run (another
// process, the CPU's clock) slows both alike. The cells above run one method
// after another and are exposed to that drift; their ratios moved by up to a
// third between consecutive runs on a 2-core machine, this one's do not.
type LatencyPair struct {
	A     LatencyCell `json:"a"`
	B     LatencyCell `json:"b"`
	Pairs int         `json:"pairs"`
	// MedianRatio is the median over questions of A's time / B's time.
	MedianRatio float64 `json:"median_ratio"`
}

func runPaired(ctx context.Context, a, b method, queries []string, o LatencyOptions) LatencyPair {
	for k := range 3 { // warm-up, unmeasured
		q := queries[len(queries)-1-k]
		a.run(ctx, q) //nolint:errcheck // warm-up: errors are counted in the measured runs below
		b.run(ctx, q) //nolint:errcheck // warm-up: errors are counted in the measured runs below
	}
	var da, db, ratios []time.Duration
	var rowsA, rowsB, errsA, errsB int
	var firstA, firstB string
	timed := func(m method, q string, rows, errs *int, first *string) (time.Duration, bool) {
		t0 := time.Now()
		n, err := m.run(ctx, q)
		d := time.Since(t0)
		if err != nil {
			*errs++
			if *first == "" {
				*first = err.Error()
			}
			return 0, false
		}
		*rows += n
		return d, true
	}
	start := time.Now()
	deadline := start.Add(2 * o.Duration)
	for i := 0; time.Now().Before(deadline) && i < o.MaxRequests && ctx.Err() == nil; i++ {
		q := queries[i%len(queries)]
		var ta, tb time.Duration
		var okA, okB bool
		if i%2 == 0 {
			ta, okA = timed(a, q, &rowsA, &errsA, &firstA)
			tb, okB = timed(b, q, &rowsB, &errsB, &firstB)
		} else {
			tb, okB = timed(b, q, &rowsB, &errsB, &firstB)
			ta, okA = timed(a, q, &rowsA, &errsA, &firstA)
		}
		if okA && okB {
			da, db = append(da, ta), append(db, tb)
			// A ratio kept as a Duration of "nanoseconds per second" for Percentile.
			ratios = append(ratios, time.Duration(float64(time.Second)*float64(ta)/float64(max(tb, 1))))
		}
	}
	elapsed := time.Since(start)
	p := LatencyPair{A: LatencyCell{Method: a.name, Concurrency: 1}, B: LatencyCell{Method: b.name, Concurrency: 1}, Pairs: len(da)}
	p.A.summarize(da, rowsA, errsA, firstA, elapsed)
	p.B.summarize(db, rowsB, errsB, firstB, elapsed)
	if len(ratios) > 0 {
		p.MedianRatio = Percentile(ratios, 50).Seconds()
	}
	return p
}
