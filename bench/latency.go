package bench

// `canon bench latency`: load a synthetic corpus of N chunks through the real
// ingest path, rebuild the HNSW index, then measure search latency and throughput
// per fusion method and concurrency, next to the bare HNSW and BM25 queries and
// two published single-statement hybrids (latency_peers.go) run in the same
// database over canon's tables, with EXPLAIN (ANALYZE) evidence of the indexes
// the statement uses and of its planning cost.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/hierarchy"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/postgres"
)

// StatementSearcher is a Searcher that can also print the statement a request
// runs (*search.Searcher).
type StatementSearcher interface {
	Searcher
	RankingStatement(ctx context.Context, req *domain.SearchRequest) (string, error)
}

// LatencySetup is the system under test. Pool must be a database of its own
// (EnsureLatencyDatabase): the bench drops and recreates an index and creates
// the peers' function there.
type LatencySetup struct {
	Pool     *pgxpool.Pool
	Ingester *ingest.Ingester
	Searcher StatementSearcher
	Embedder embed.Embedder
	Chunking markdown.Options
	Ranking  domain.Ranking // the searcher's defaults (ef_search, candidate multiplier, BM25)
	// HTTP, when set, is the same searcher behind canon's server on loopback.
	HTTP Searcher
	// Hierarchy, when set, is the two-pass search over Searcher; it adds the
	// hierarchy/* methods (latency_entity.go).
	Hierarchy *hierarchy.Searcher
	// Profile and Commit are recorded in the report.
	Profile, Commit string
}

// LatencyOptions configure a run.
type LatencyOptions struct {
	Chunks      int
	Seed        uint64
	Vocabulary  []string // HandbookVocabulary
	Concurrency []int
	Duration    time.Duration // per (method, concurrency) cell
	MaxRequests int           // per cell
	Queries     int           // distinct questions cycled through
	Limit       int           // primary hits per search (canon's default page)
	// Fresh reloads the corpus even when the database has it.
	Fresh bool
	// SkipIndexBuild keeps the HNSW index the load built instead of timing a rebuild.
	SkipIndexBuild bool
	// Methods restricts the measured methods (names as in the report); empty: all.
	Methods []string
	// VectorType, when set, stores the chunks' embeddings as vector or halfvec
	// first (converting a loaded corpus in place); empty: as the database has them.
	VectorType string
	// Projects splits Chunks over that many projects, each a corpus of its own
	// (seeds Seed, Seed+1, …); the searches measure the first. 0 or 1: one.
	Projects int
	// TableLayout, when set, lays chunks, postings and lexeme_stats out single
	// or partitioned by project first (converting a loaded database in place).
	TableLayout string
	// ReportName names the files WriteFiles writes (default "latency").
	ReportName string
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...any)
}

// LatencyReport is the result of a run.
type LatencyReport struct {
	Started     time.Time      `json:"started"`
	Commit      string         `json:"commit,omitempty"`
	Machine     LatencyMachine `json:"machine"`
	Embedder    string         `json:"embedder"`
	Profile     string         `json:"profile"`
	Project     string         `json:"project"`
	Load        LatencyLoad    `json:"load"`
	Concurrency []int          `json:"concurrency"`
	DurationS   float64        `json:"duration_per_cell_s"`
	MaxRequests int            `json:"max_requests_per_cell"`
	Queries     int            `json:"distinct_queries"`
	Limit       int            `json:"limit"`
	EFSearch    int            `json:"hnsw_ef_search"`
	Methods     []MethodInfo   `json:"methods"`
	Cells       []LatencyCell  `json:"cells"`
	Explain     []ExplainInfo  `json:"explain"`
	// Prepared reports what PostgreSQL's plan cache did with canon's statement on
	// the pool's connections (pgx prepares and caches it per connection).
	Prepared []PreparedInfo `json:"prepared_statements"`
	// Paired: canon/weighted and ref/hnsw measured interleaved (see runPaired);
	// PairedServed: canon/weighted+graph (search as served) and ref/hnsw.
	Paired       *LatencyPair    `json:"paired,omitempty"`
	PairedServed *LatencyPair    `json:"paired_served,omitempty"`
	Targets      []LatencyTarget `json:"targets"`
	Memory       LatencyMemory   `json:"memory"`
	Notes        []string        `json:"notes,omitempty"`
	// name is the files' base name (LatencyOptions.ReportName).
	name string
}

// LatencyMachine describes where the run happened.
type LatencyMachine struct {
	GOOS, GOARCH    string
	CPUs            int     `json:"cpus"`
	LoadAvgStart    string  `json:"loadavg_start"`
	LoadAvgEnd      string  `json:"loadavg_end"`
	Postgres        string  `json:"postgres"`
	PGVector        string  `json:"pgvector"`
	SharedBuffers   string  `json:"shared_buffers"`
	WorkMem         string  `json:"work_mem"`
	MaintenanceMem  string  `json:"maintenance_work_mem"`
	ParallelMaint   string  `json:"max_parallel_maintenance_workers"`
	PoolMaxConns    int32   `json:"pool_max_conns"`
	EmbedQueryMicro float64 `json:"embed_query_us"`
}

// LatencyLoad describes the corpus and what loading it cost.
type LatencyLoad struct {
	Chunks    int  `json:"chunks"`
	Documents int  `json:"documents"`
	Loaded    bool `json:"loaded_this_run"`
	// Ingest: through ingest.Ingester (parse, embed, one transaction per document,
	// triggers for tsvector, postings and statistics, HNSW insertion).
	IngestS          float64 `json:"ingest_s,omitempty"`
	IngestChunksPerS float64 `json:"ingest_chunks_per_s,omitempty"`
	GenerateS        float64 `json:"generate_s,omitempty"`
	// Bulk: the load built the vector index after its rows (in IngestS).
	Bulk     bool        `json:"bulk_load,omitempty"`
	Steps    IngestSteps `json:"ingest_steps_s"`
	AnalyzeS float64     `json:"vacuum_analyze_s"`
	// VectorType is chunks.embedding's type (vector or halfvec); VectorConvertS
	// the time this run took to convert it to that type (0: no conversion).
	VectorType     string  `json:"vector_type"`
	VectorConvertS float64 `json:"vector_convert_s,omitempty"`
	// Projects in the database, each of Chunks chunks; the searches name the first.
	Projects int `json:"projects"`
	// TableLayout is single or partitioned (by project); TableConvertS the time
	// this run took to convert to it (0: no conversion).
	TableLayout   string  `json:"table_layout"`
	TableConvertS float64 `json:"table_convert_s,omitempty"`
	// ResultDigest hashes the chunk ids canon/weighted returns for the first
	// questions, in order: two runs (two layouts) with the same digest ranked alike.
	ResultDigest string `json:"result_digest,omitempty"`
	// ExactRecall: the share of the chunks an exact search (index scans off, so
	// no HNSW) puts on those pages that the served search puts there too;
	// ExactSamePages the share of pages identical to the exact ones. The HNSW
	// index's approximation, comparable across layouts.
	ExactRecall    float64 `json:"exact_recall,omitempty"`
	ExactSamePages float64 `json:"exact_same_pages,omitempty"`
	// HNSW rebuild of chunks_embedding_hnsw on the loaded table.
	HNSWBuildS float64          `json:"hnsw_build_s,omitempty"`
	HNSWIndex  string           `json:"hnsw_index_def"`
	Sizes      map[string]int64 `json:"sizes_bytes"`
	Postings   int64            `json:"postings"`
	Lexemes    int64            `json:"distinct_lexemes"`
	Vocabulary int              `json:"generator_vocabulary"`
}

// MethodInfo names a measured method.
type MethodInfo struct {
	Name string `json:"name"`
	What string `json:"what"`
}

// LatencyCell is one (method, concurrency) measurement.
type LatencyCell struct {
	Method      string  `json:"method"`
	Concurrency int     `json:"concurrency"`
	Requests    int     `json:"requests"`
	Errors      int     `json:"errors"`
	FirstError  string  `json:"first_error,omitempty"`
	P50Ms       float64 `json:"p50_ms"`
	P95Ms       float64 `json:"p95_ms"`
	P99Ms       float64 `json:"p99_ms"`
	MeanMs      float64 `json:"mean_ms"`
	QPS         float64 `json:"qps"`
	ElapsedS    float64 `json:"elapsed_s"`
	AvgRows     float64 `json:"avg_rows"`
	// VsCanon is this p50 divided by canon/weighted's p50 at the same concurrency.
	VsCanon float64 `json:"p50_vs_canon_weighted,omitempty"`
}

// ExplainInfo is EXPLAIN (ANALYZE, BUFFERS, SUMMARY) evidence for one statement,
// medians over several questions.
type ExplainInfo struct {
	Statement  string  `json:"statement"`
	Runs       int     `json:"runs"`
	PlanningMs float64 `json:"planning_ms"`
	ExecMs     float64 `json:"execution_ms"`
	// JITMs is the JIT compilation time inside the execution time (0: no JIT).
	JITMs    float64  `json:"jit_ms"`
	Indexes  []string `json:"indexes"`
	SeqScans []string `json:"seq_scans,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// PreparedInfo counts plans of canon's ranking statement on one pool connection.
type PreparedInfo struct {
	GenericPlans int64 `json:"generic_plans"`
	CustomPlans  int64 `json:"custom_plans"`
}

// LatencyTarget is a checked goal.
type LatencyTarget struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	Passed bool    `json:"passed"`
	Detail string  `json:"detail"`
}

// LatencyMemory is the process's memory (Linux /proc/self/status; Go runtime).
type LatencyMemory struct {
	PeakRSSLoadMB    float64 `json:"peak_rss_load_mb"`
	PeakRSSQueriesMB float64 `json:"peak_rss_queries_mb"`
	GoTotalMB        float64 `json:"go_runtime_total_mb"`
	// BuildBackendPeakMB is the VmHWM of the PostgreSQL backend that rebuilt the
	// HNSW index (shared buffers it touched included; parallel workers apart); 0
	// when the server is not on this machine.
	BuildBackendPeakMB float64 `json:"hnsw_build_backend_peak_rss_mb,omitempty"`
	Note               string  `json:"note,omitempty"`
}

// perProject is the chunks of each project's corpus.
func (o *LatencyOptions) perProject() int { return o.Chunks / max(o.Projects, 1) }

// resultDigest runs canon/weighted's search (graph step off) for each question,
// hashes the chunk ids of the pages, in order, and compares each page with the
// exact search's: the same statement on a pool whose sessions have index scans
// off (no HNSW).
func resultDigest(ctx context.Context, s LatencySetup, rep *LatencyReport, queries []string) error {
	cfg := s.Pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["enable_indexscan"] = "off"
	cfg.MaxConns = 2
	exactPool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer exactPool.Close()
	page := func(ctx context.Context, q string) ([]int64, error) {
		opts := domain.SearchOptions{Limit: rep.Limit, Fusion: domain.FusionWeighted}
		opts.GraphExpansion, opts.RejectedInjection = new(false), new(false)
		res, err := s.Searcher.Search(ctx, &domain.SearchRequest{Query: q,
			Filters: domain.RawFilters{ProjectKeys: []string{rep.Project}}, Options: opts})
		if err != nil {
			return nil, fmt.Errorf("result digest: %w", err)
		}
		ids := make([]int64, len(res.Primary))
		for i, hit := range res.Primary {
			ids[i] = hit.ChunkID
		}
		return ids, nil
	}
	h := sha256.New()
	found, exactTotal, same := 0, 0, 0
	for _, q := range queries {
		served, err := page(ctx, q)
		if err != nil {
			return err
		}
		exact, err := page(postgres.WithReadPool(ctx, exactPool), q)
		if err != nil {
			return err
		}
		fmt.Fprintln(h, served)
		for _, id := range exact {
			if slices.Contains(served, id) {
				found++
			}
		}
		exactTotal += len(exact)
		if slices.Equal(served, exact) {
			same++
		}
	}
	rep.Load.ResultDigest = hex.EncodeToString(h.Sum(nil))[:16]
	if exactTotal > 0 {
		rep.Load.ExactRecall = float64(found) / float64(exactTotal)
	}
	if len(queries) > 0 {
		rep.Load.ExactSamePages = float64(same) / float64(len(queries))
	}
	return nil
}

func (o *LatencyOptions) defaults() {
	if o.Chunks == 0 {
		o.Chunks = 100000
	}
	if o.Projects < 1 {
		o.Projects = 1
	}
	if len(o.Concurrency) == 0 {
		o.Concurrency = []int{1, 4, 16}
	}
	if o.Duration == 0 {
		o.Duration = 10 * time.Second
	}
	if o.MaxRequests == 0 {
		o.MaxRequests = 20000
	}
	if o.Queries == 0 {
		o.Queries = 1000
	}
	if o.Limit == 0 {
		o.Limit = 8
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	if o.ReportName == "" {
		o.ReportName = "latency"
	}
}

// Latency runs the bench.
func Latency(ctx context.Context, s LatencySetup, o LatencyOptions) (*LatencyReport, error) {
	o.defaults()
	rep := &LatencyReport{
		Started: time.Now().UTC(), Commit: s.Commit, Profile: s.Profile,
		Embedder:    fmt.Sprintf("%s/%d", s.Embedder.Name(), s.Embedder.Dim()),
		Project:     LatencyProjectKey(o.perProject(), o.Seed),
		Concurrency: o.Concurrency, DurationS: o.Duration.Seconds(), MaxRequests: o.MaxRequests,
		Queries: o.Queries, Limit: o.Limit, name: o.ReportName,
	}
	rep.EFSearch = min(max(s.Ranking.EFSearch, o.Limit*s.Ranking.CandidateMultiplier), domain.MaxEFSearch)
	if err := machine(ctx, s.Pool, &rep.Machine); err != nil {
		return nil, err
	}
	resetPeakRSS()
	if err := load(ctx, s, o, rep); err != nil {
		return nil, err
	}
	rep.Memory.PeakRSSLoadMB = peakRSSMB()
	resetPeakRSS()

	g, err := NewSynth(SynthOptions{Chunks: o.perProject(), Seed: o.Seed, Words: o.Vocabulary, Chunking: s.Chunking})
	if err != nil {
		return nil, err
	}
	rep.Load.Vocabulary = len(g.Vocabulary())
	queries := g.QueriesOver(rep.Load.Documents, o.Queries)
	var projectID int64
	if err := s.Pool.QueryRow(ctx, "SELECT id FROM projects WHERE project_key = $1", rep.Project).Scan(&projectID); err != nil {
		return nil, err
	}
	start := time.Now()
	for _, q := range queries[:min(len(queries), 200)] {
		if _, err := s.Embedder.EmbedQuery(ctx, q); err != nil {
			return nil, err
		}
	}
	rep.Machine.EmbedQueryMicro = float64(time.Since(start).Microseconds()) / float64(min(len(queries), 200))
	if err := resultDigest(ctx, s, rep, queries[:min(len(queries), 100)]); err != nil {
		return nil, err
	}

	if err := createPeers(ctx, s.Pool, s.Embedder.Dim()); err != nil {
		return nil, err
	}
	methods := latencyMethods(s, o, rep, projectID)
	entity, err := entityMethods(ctx, s, o, rep, projectID, queries)
	if err != nil {
		return nil, err
	}
	methods = append(methods, entity...)
	for _, m := range methods {
		rep.Methods = append(rep.Methods, MethodInfo{Name: m.name, What: m.what})
	}
	o.Log("latency: warming up ...")
	warmUp(ctx, methods, queries)
	for _, c := range o.Concurrency {
		for _, m := range methods {
			o.Log("latency: %-26s concurrency %2d ...", m.name, c)
			cell := runCell(ctx, m, queries, c, o)
			o.Log("latency: %-26s concurrency %2d: p50 %.2f ms, p95 %.2f ms, %.0f QPS (%d requests, %d errors)",
				m.name, c, cell.P50Ms, cell.P95Ms, cell.QPS, cell.Requests, cell.Errors)
			rep.Cells = append(rep.Cells, cell)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	if a, b := findMethod(methods, "canon/weighted"), findMethod(methods, "ref/hnsw"); a != nil && b != nil {
		o.Log("latency: canon/weighted and ref/hnsw interleaved ...")
		p := runPaired(ctx, *a, *b, queries, o)
		rep.Paired = &p
		o.Log("latency: interleaved: canon/weighted p50 %.2f ms, ref/hnsw p50 %.2f ms (%d pairs)", p.A.P50Ms, p.B.P50Ms, p.Pairs)
	}
	if a, b := findMethod(methods, "canon/weighted+graph"), findMethod(methods, "ref/hnsw"); a != nil && b != nil {
		o.Log("latency: canon/weighted+graph and ref/hnsw interleaved ...")
		p := runPaired(ctx, *a, *b, queries, o)
		rep.PairedServed = &p
		o.Log("latency: interleaved: canon/weighted+graph p50 %.2f ms, ref/hnsw p50 %.2f ms (%d pairs)", p.A.P50Ms, p.B.P50Ms, p.Pairs)
	}
	rep.Prepared = preparedPlans(ctx, s.Pool)
	o.Log("latency: EXPLAIN (ANALYZE) ...")
	rep.Explain = explainAll(ctx, s, o, rep, projectID, queries)
	rep.Memory.PeakRSSQueriesMB = peakRSSMB()
	rep.Memory.GoTotalMB = goTotalMB()
	if rep.Memory.PeakRSSLoadMB == 0 {
		rep.Memory.Note = "peak RSS needs Linux /proc/self/status"
	}
	rep.Machine.LoadAvgEnd = loadAvg()
	rep.ratios()
	rep.checkTargets()
	rep.checkEntityTargets()
	return rep, nil
}
