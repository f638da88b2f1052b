package bench

// `canon bench latency`: load a synthetic corpus of N chunks through the real
// ingest path, rebuild the HNSW index, then measure search latency and throughput
// per fusion method and concurrency, next to the bare HNSW and BM25 queries and
// two published single-statement hybrids (latency_peers.go) run in the same
// database over canon's tables, with EXPLAIN (ANALYZE) evidence of the indexes
// the statement uses and of its planning cost.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"

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
	// Paired: canon/weighted and ref/hnsw measured interleaved (see runPaired).
	Paired  *LatencyPair    `json:"paired,omitempty"`
	Targets []LatencyTarget `json:"targets"`
	Memory  LatencyMemory   `json:"memory"`
	Notes   []string        `json:"notes,omitempty"`
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
	AnalyzeS         float64 `json:"vacuum_analyze_s"`
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
	Note             string  `json:"note,omitempty"`
}

// EnsureLatencyDatabase returns the URL of database name on the server of
// adminURL, creating and migrating it when missing (dropping it first when
// fresh). maxConns sets the pool size so no request waits for a connection.
func EnsureLatencyDatabase(ctx context.Context, adminURL, name string, fresh bool, maxConns int) (string, error) {
	if !regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`).MatchString(name) {
		return "", fmt.Errorf("database name %q: use lowercase letters, digits and _", name)
	}
	cfg, err := pgx.ParseConfig(adminURL)
	if err != nil {
		return "", errors.New("DATABASE_URL is not a valid PostgreSQL connection string")
	}
	if cfg.Database == name {
		return "", fmt.Errorf("the latency bench needs a database of its own, not %s (the one DATABASE_URL names)", name)
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", postgres.Redact(adminURL), err)
	}
	defer conn.Close(ctx)
	if fresh {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			return "", err
		}
	}
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			return "", fmt.Errorf("create database %s (or pass the URL of an existing one): %w", name, err)
		}
	}
	plain, err := withDatabaseName(adminURL, name, 0)
	if err != nil {
		return "", err
	}
	if err := postgres.Migrate(ctx, plain, "up", postgres.MigrateOptions{}); err != nil {
		return "", fmt.Errorf("migrate %s: %w", name, err)
	}
	// pool_max_conns is read by pgxpool only (a plain connection would send it
	// to the server as a setting).
	return withDatabaseName(adminURL, name, maxConns)
}

func withDatabaseName(url, name string, maxConns int) (string, error) {
	// Keyword/value strings and URLs both take a trailing "key=value" in pgx:
	// rewrite URLs properly, append to keyword/value strings.
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		u, q, _ := strings.Cut(url, "?")
		scheme, rest, _ := strings.Cut(u, "://")
		host, _, _ := strings.Cut(rest, "/")
		params := []string{}
		for _, p := range strings.Split(q, "&") {
			if p != "" && !strings.HasPrefix(p, "pool_max_conns=") {
				params = append(params, p)
			}
		}
		if maxConns > 0 {
			params = append(params, fmt.Sprintf("pool_max_conns=%d", maxConns))
		}
		out := scheme + "://" + host + "/" + name
		if len(params) > 0 {
			out += "?" + strings.Join(params, "&")
		}
		return out, nil
	}
	out := url + " dbname=" + name
	if maxConns > 0 {
		out += fmt.Sprintf(" pool_max_conns=%d", maxConns)
	}
	return out, nil
}

// LatencyProjectKey is the project a corpus of these parameters is loaded into.
func LatencyProjectKey(chunks int, seed uint64) string {
	return fmt.Sprintf("latency-%d-s%d-g%d", chunks, seed, synthVersion)
}

func (o *LatencyOptions) defaults() {
	if o.Chunks == 0 {
		o.Chunks = 100000
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
}

// Latency runs the bench.
func Latency(ctx context.Context, s LatencySetup, o LatencyOptions) (*LatencyReport, error) {
	o.defaults()
	rep := &LatencyReport{
		Started: time.Now().UTC(), Commit: s.Commit, Profile: s.Profile,
		Embedder:    fmt.Sprintf("%s/%d", s.Embedder.Name(), s.Embedder.Dim()),
		Project:     LatencyProjectKey(o.Chunks, o.Seed),
		Concurrency: o.Concurrency, DurationS: o.Duration.Seconds(), MaxRequests: o.MaxRequests,
		Queries: o.Queries, Limit: o.Limit,
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

	g, err := NewSynth(SynthOptions{Chunks: o.Chunks, Seed: o.Seed, Words: o.Vocabulary, Chunking: s.Chunking})
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

func machine(ctx context.Context, pool *pgxpool.Pool, m *LatencyMachine) error {
	m.GOOS, m.GOARCH, m.CPUs = runtime.GOOS, runtime.GOARCH, runtime.NumCPU()
	m.LoadAvgStart = loadAvg()
	m.PoolMaxConns = pool.Config().MaxConns
	return pool.QueryRow(ctx, `SELECT current_setting('server_version'),
		coalesce((SELECT extversion FROM pg_extension WHERE extname = 'vector'), ''),
		current_setting('shared_buffers'), current_setting('work_mem'), current_setting('maintenance_work_mem'),
		current_setting('max_parallel_maintenance_workers')`).
		Scan(&m.Postgres, &m.PGVector, &m.SharedBuffers, &m.WorkMem, &m.MaintenanceMem, &m.ParallelMaint)
}

// load puts the corpus in the database unless it is there, times the ingest and
// the HNSW build, and records sizes.
func load(ctx context.Context, s LatencySetup, o LatencyOptions, rep *LatencyReport) error {
	// The database must hold nothing but latency corpora: the peers read every row
	// of chunks.
	var others []string
	rows, err := s.Pool.Query(ctx, "SELECT project_key FROM projects WHERE project_key <> $1 ORDER BY 1", rep.Project)
	if err != nil {
		return err
	}
	others, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, p := range others {
		if !strings.HasPrefix(p, "latency-") {
			return fmt.Errorf("database holds project %q: the latency bench needs a database of its own (see --database)", p)
		}
	}
	if len(others) > 0 {
		o.Log("latency: dropping other corpora %s", strings.Join(others, ", "))
		if _, err := s.Pool.Exec(ctx, "DELETE FROM projects WHERE project_key = ANY ($1)", others); err != nil {
			return err
		}
	}
	have := int64(0)
	err = s.Pool.QueryRow(ctx, `SELECT coalesce((SELECT chunk_count FROM project_stats s JOIN projects p ON p.id = s.project_id
		WHERE p.project_key = $1), 0)`, rep.Project).Scan(&have)
	if err != nil {
		return err
	}
	if o.Fresh && have > 0 {
		if _, err := s.Pool.Exec(ctx, "DELETE FROM projects WHERE project_key = $1", rep.Project); err != nil {
			return err
		}
		have = 0
	}
	if have != int64(o.Chunks) {
		if err := ingestSynth(ctx, s, o, rep); err != nil {
			return err
		}
	} else {
		o.Log("latency: corpus %s already loaded (%d chunks); --fresh reloads and times the ingest", rep.Project, have)
	}
	start := time.Now()
	if _, err := s.Pool.Exec(ctx, "VACUUM ANALYZE chunks, postings, documents, lexeme_stats, project_stats, kb_edges"); err != nil {
		return err
	}
	rep.Load.AnalyzeS = time.Since(start).Seconds()
	if err := s.Pool.QueryRow(ctx, "SELECT indexdef FROM pg_indexes WHERE indexname = 'chunks_embedding_hnsw'").Scan(&rep.Load.HNSWIndex); err != nil {
		return fmt.Errorf("find the HNSW index: %w", err)
	}
	if !o.SkipIndexBuild {
		o.Log("latency: rebuilding chunks_embedding_hnsw ...")
		// One transaction: an interrupted or failed build leaves the index as it was.
		start := time.Now()
		err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "DROP INDEX chunks_embedding_hnsw"); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, rep.Load.HNSWIndex)
			return err
		})
		if err != nil {
			return fmt.Errorf("rebuild the HNSW index: %w", err)
		}
		rep.Load.HNSWBuildS = time.Since(start).Seconds()
		o.Log("latency: HNSW build %.1f s", rep.Load.HNSWBuildS)
	}
	err = s.Pool.QueryRow(ctx, `SELECT
		(SELECT chunk_count FROM project_stats s JOIN projects p ON p.id = s.project_id WHERE p.project_key = $1),
		(SELECT count(*) FROM documents d JOIN projects p ON p.id = d.project_id WHERE p.project_key = $1),
		(SELECT count(*) FROM postings), (SELECT count(*) FROM lexeme_stats)`, rep.Project).
		Scan(&rep.Load.Chunks, &rep.Load.Documents, &rep.Load.Postings, &rep.Load.Lexemes)
	if err != nil {
		return err
	}
	rep.Load.Sizes = map[string]int64{}
	sizes := []struct{ name, sql string }{
		{"database", "SELECT pg_database_size(current_database())"},
		{"chunks_table", "SELECT pg_table_size('chunks')"},
		{"chunks_embedding_hnsw", "SELECT pg_relation_size('chunks_embedding_hnsw')"},
		{"chunks_tsv_gin", "SELECT pg_relation_size('chunks_tsv_gin')"},
		{"postings_table", "SELECT pg_table_size('postings')"},
		{"postings_lexeme_impact", "SELECT pg_relation_size('postings_lexeme_impact')"},
		{"postings_chunk_lexeme", "SELECT pg_relation_size('postings_chunk_lexeme')"},
	}
	for _, sz := range sizes {
		var n int64
		if err := s.Pool.QueryRow(ctx, sz.sql).Scan(&n); err != nil {
			return fmt.Errorf("size of %s: %w", sz.name, err)
		}
		rep.Load.Sizes[sz.name] = n
	}
	return nil
}

// ingestBatchChunks bounds the files handed to one Ingest call (memory stays flat).
const ingestBatchChunks = 4000

func ingestSynth(ctx context.Context, s LatencySetup, o LatencyOptions, rep *LatencyReport) error {
	g, err := NewSynth(SynthOptions{Chunks: o.Chunks, Seed: o.Seed, Project: rep.Project, Words: o.Vocabulary, Chunking: s.Chunking})
	if err != nil {
		return err
	}
	var ingestTime, genTime time.Duration
	stored := 0
	lastLog := time.Now()
	for {
		start := time.Now()
		var batch []ingest.File
		n := 0
		for n < ingestBatchChunks {
			f, c, ok, err := g.Next()
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			batch = append(batch, f)
			n += c
		}
		genTime += time.Since(start)
		if len(batch) == 0 {
			break
		}
		start = time.Now()
		res, err := s.Ingester.Ingest(ctx, batch, ingest.Options{Project: rep.Project})
		ingestTime += time.Since(start)
		if err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		if len(res.Errors) > 0 {
			return fmt.Errorf("ingest: %d synthetic files rejected, first: %s", len(res.Errors), res.Errors[0].Error())
		}
		stored += res.Chunks
		if time.Since(lastLog) > 10*time.Second || g.Chunks() == o.Chunks {
			o.Log("latency: ingested %d/%d chunks (%.0f chunks/s)", g.Chunks(), o.Chunks, float64(stored)/max(ingestTime.Seconds(), 1e-9))
			lastLog = time.Now()
		}
	}
	rep.Load.Loaded = true
	rep.Load.IngestS = ingestTime.Seconds()
	rep.Load.GenerateS = genTime.Seconds()
	if stored > 0 {
		rep.Load.IngestChunksPerS = float64(stored) / ingestTime.Seconds()
	}
	return nil
}

// QueriesOver is Queries for a corpus of docs documents (no need to generate it).
func (g *Synth) QueriesOver(docs, n int) []string {
	saved := g.docs
	g.docs = make([]synthDoc, docs)
	defer func() { g.docs = saved }()
	return g.Queries(n)
}

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
	ms := []method{
		{"canon/weighted", "Searcher.Search, fusion weighted, graph step off: embed + project lookup + the ranking statement",
			search(s.Searcher, domain.FusionWeighted, false)},
		{"canon/rrf", "the same, fusion rrf", search(s.Searcher, domain.FusionRRF, false)},
		{"canon/semantic_only", "the same, fusion semantic_only (the statement with the keyword leg off)",
			search(s.Searcher, domain.FusionSemanticOnly, false)},
		{"canon/keyword_only", "the same, fusion keyword_only (the statement with the vector leg off)",
			search(s.Searcher, domain.FusionKeywordOnly, false)},
		{"canon/weighted+graph", "Searcher.Search as served by default: weighted plus the graph step (expansion, rejected injection)",
			search(s.Searcher, domain.FusionWeighted, true)},
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
		a.run(ctx, q) //nolint:errcheck // measured below
		b.run(ctx, q) //nolint:errcheck
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

// preparedPlans reads pg_prepared_statements on the pool's idle connections for
// canon's ranking statement.
func preparedPlans(ctx context.Context, pool *pgxpool.Pool) []PreparedInfo {
	var out []PreparedInfo
	for _, c := range pool.AcquireAllIdle(ctx) {
		var p PreparedInfo
		err := c.QueryRow(ctx, `SELECT coalesce(sum(generic_plans), 0)::bigint, coalesce(sum(custom_plans), 0)::bigint
			FROM pg_prepared_statements WHERE statement LIKE '%-- name: SearchRank :many%'`).Scan(&p.GenericPlans, &p.CustomPlans)
		c.Release()
		if err == nil && p.GenericPlans+p.CustomPlans > 0 {
			out = append(out, p)
		}
	}
	return out
}

// explainAll collects EXPLAIN (ANALYZE, BUFFERS, SUMMARY) of canon's statement
// (as Searcher.Statement prints it, and as pgx's cached prepared statement runs
// it) and of the references and peers, over a few questions.
func explainAll(ctx context.Context, s LatencySetup, o LatencyOptions, rep *LatencyReport, projectID int64, queries []string) []ExplainInfo {
	const runs = 7
	qs := queries[:min(runs, len(queries))]
	var out []ExplainInfo
	for _, fusion := range []string{domain.FusionWeighted, domain.FusionRRF} {
		literal := newExplain("canon/" + fusion + " (search.sql, parameters bound as literals: a custom plan)")
		prepared := newExplain("canon/" + fusion + " (EXECUTE of pgx's prepared statement, as the searcher plans it)")
		for _, q := range qs {
			script, err := s.Searcher.RankingStatement(ctx, &domain.SearchRequest{Query: q,
				Filters: domain.RawFilters{ProjectKeys: []string{rep.Project}},
				Options: domain.SearchOptions{Fusion: fusion, Limit: o.Limit}})
			if err != nil {
				literal.Error = err.Error()
				break
			}
			literal.add(explainScript(ctx, s.Pool, script, literal.idx, literal.seq))
			if fusion == domain.FusionWeighted {
				prepared.add(explainPrepared(ctx, s.Pool, script, prepared.idx, prepared.seq))
			}
		}
		out = append(out, literal.done())
		if fusion == domain.FusionWeighted {
			out = append(out, prepared.done())
		}
	}
	type stmt struct {
		name, sql string
		ef        int
		args      func(q string, vec *pgvector.Vector) []any
	}
	for _, st := range []stmt{
		{"ref/hnsw", refHNSW, rep.EFSearch, func(_ string, v *pgvector.Vector) []any { return []any{v, []int64{projectID}, o.Limit} }},
		{"ref/bm25", refBM25, 0, func(q string, _ *pgvector.Vector) []any {
			return []any{q, []int64{projectID}, o.Limit, s.Ranking.BM25K1, s.Ranking.BM25B}
		}},
		{"peer/supabase (the function's body, parameters as placeholders)", supabaseBody, 0, func(q string, v *pgvector.Vector) []any {
			return []any{q, v, o.Limit, 1.0, 1.0, 50}
		}},
		{"peer/pgvector-rrf", pgvectorRRF, 0, func(q string, v *pgvector.Vector) []any { return []any{q, v, 60, o.Limit} }},
	} {
		e := newExplain(st.name)
		for _, q := range qs {
			v, err := s.Embedder.EmbedQuery(ctx, q)
			if err != nil {
				e.Error = err.Error()
				break
			}
			vec := pgvector.NewVector(v)
			e.add(explainQuery(ctx, s.Pool, st.ef, st.sql, st.args(q, &vec), e.idx, e.seq))
		}
		out = append(out, e.done())
	}
	return out
}

type explainRuns struct {
	ExplainInfo
	plans, execs, jits []float64
	idx, seq           map[string]bool
}

func newExplain(name string) *explainRuns {
	return &explainRuns{ExplainInfo: ExplainInfo{Statement: name}, idx: map[string]bool{}, seq: map[string]bool{}}
}

func (e *explainRuns) add(t planTimes, err error) {
	if err != nil {
		if e.Error == "" {
			e.Error = err.Error()
		}
		return
	}
	e.plans, e.execs, e.jits = append(e.plans, t.planning), append(e.execs, t.execution), append(e.jits, t.jit)
}

func (e *explainRuns) done() ExplainInfo {
	info := e.ExplainInfo
	info.Runs = len(e.plans)
	info.PlanningMs, info.ExecMs, info.JITMs = median(e.plans), median(e.execs), median(e.jits)
	info.Indexes = slices.Sorted(maps.Keys(e.idx))
	info.SeqScans = slices.Sorted(maps.Keys(e.seq))
	return info
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

const explainPrefix = "EXPLAIN (ANALYZE, BUFFERS, SUMMARY, FORMAT JSON) "

// splitScript takes apart the script Searcher.Statement prints: BEGIN; SET
// LOCAL lines; the statement; COMMIT.
func splitScript(script string) (sets []string, body string, err error) {
	rest, ok := strings.CutPrefix(script, "BEGIN;\n")
	if !ok {
		return nil, "", fmt.Errorf("unexpected statement script: %.40q", script)
	}
	for strings.HasPrefix(rest, "SET LOCAL ") {
		line, tail, _ := strings.Cut(rest, "\n")
		sets = append(sets, line)
		rest = tail
	}
	body, ok = strings.CutSuffix(strings.TrimSpace(rest), ";\nCOMMIT;")
	if !ok {
		return nil, "", errors.New("unexpected statement script: no COMMIT at the end")
	}
	return sets, body, nil
}

// explainScript runs the script with EXPLAIN in front of the statement.
func explainScript(ctx context.Context, pool *pgxpool.Pool, script string, idx, seq map[string]bool) (planTimes, error) {
	sets, body, err := splitScript(script)
	if err != nil {
		return planTimes{}, err
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return planTimes{}, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	for _, s := range sets {
		if _, err := tx.Exec(ctx, s); err != nil {
			return planTimes{}, err
		}
	}
	var plan []byte
	// The simple protocol: no prepared statement is left behind for a one-off text.
	if err := tx.QueryRow(ctx, explainPrefix+body, pgx.QueryExecModeSimpleProtocol).Scan(&plan); err != nil {
		return planTimes{}, err
	}
	return readPlan(plan, idx, seq)
}

// explainPrepared explains EXECUTE of the statement pgx prepared on a pool
// connection (found in pg_prepared_statements), with the script's parameter
// values: the plan PostgreSQL's plan cache actually runs (generic or custom).
func explainPrepared(ctx context.Context, pool *pgxpool.Pool, script string, idx, seq map[string]bool) (planTimes, error) {
	sets, body, err := splitScript(script)
	if err != nil {
		return planTimes{}, err
	}
	conns := pool.AcquireAllIdle(ctx)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for _, c := range conns {
		var name, template string
		var generic, custom int64
		// A prefix match: this lookup is a prepared statement too, and its own text
		// contains the pattern.
		err := c.QueryRow(ctx, `SELECT name, statement, generic_plans, custom_plans FROM pg_prepared_statements
			WHERE statement LIKE '-- name: SearchRank :many%' ORDER BY name LIMIT 1`).Scan(&name, &template, &generic, &custom)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return planTimes{}, err
		}
		values, err := boundValues(template, body)
		if err != nil {
			return planTimes{}, err
		}
		tx, err := c.Begin(ctx)
		if err != nil {
			return planTimes{}, err
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		// Plan the way the searcher's requests mostly were (it may set
		// plan_cache_mode per request), not the way this session would by default.
		if generic > custom {
			sets = append(sets, "SET LOCAL plan_cache_mode = force_generic_plan")
		} else {
			sets = append(sets, "SET LOCAL plan_cache_mode = force_custom_plan")
		}
		for _, s := range sets {
			if _, err := tx.Exec(ctx, s); err != nil {
				return planTimes{}, err
			}
		}
		var plan []byte
		q := explainPrefix + "EXECUTE " + pgx.Identifier{name}.Sanitize() + "(" + strings.Join(values, ", ") + ")"
		if err := tx.QueryRow(ctx, q, pgx.QueryExecModeSimpleProtocol).Scan(&plan); err != nil {
			return planTimes{}, err
		}
		return readPlan(plan, idx, seq)
	}
	return planTimes{}, errors.New("no pool connection has the ranking statement prepared")
}

var placeholderPattern = regexp.MustCompile(`\$(\d+)`)

// boundValues recovers the literal of each $n of template from bound, the same
// text with every placeholder replaced by a SQL literal (Searcher.Statement).
func boundValues(template, bound string) ([]string, error) {
	template = strings.TrimRight(strings.TrimSpace(template), ";")
	bound = strings.TrimRight(strings.TrimSpace(bound), ";")
	locs := placeholderPattern.FindAllStringSubmatchIndex(template, -1)
	values := map[int]string{}
	hi, tpos, bpos := 0, 0, 0
	for _, l := range locs {
		lit := template[tpos:l[0]]
		if !strings.HasPrefix(bound[bpos:], lit) {
			return nil, fmt.Errorf("statement text differs from the prepared statement near %.40q", lit)
		}
		bpos += len(lit)
		v := sqlLiteralAt(bound[bpos:])
		if v == "" {
			return nil, fmt.Errorf("no literal at %.40q", bound[bpos:])
		}
		n, _ := strconv.Atoi(template[l[2]:l[3]])
		values[n] = v
		hi = max(hi, n)
		bpos += len(v)
		tpos = l[1]
	}
	if template[tpos:] != bound[bpos:] {
		return nil, errors.New("statement text differs from the prepared statement at the end")
	}
	out := make([]string, hi)
	for i := range out {
		v, ok := values[i+1]
		if !ok {
			return nil, fmt.Errorf("parameter $%d is not used", i+1)
		}
		out[i] = v
	}
	return out, nil
}

// sqlLiteralAt returns the SQL literal s starts with: a quoted string (a doubled
// quote inside it is one quote) or a bare number, boolean or NULL.
func sqlLiteralAt(s string) string {
	if strings.HasPrefix(s, "'") {
		for i := 1; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					i++
					continue
				}
				return s[:i+1]
			}
		}
		return ""
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' ||
		s[i] == '.' || s[i] == '-' || s[i] == '+' || s[i] == '_') {
		i++
	}
	return s[:i]
}

func explainQuery(ctx context.Context, pool *pgxpool.Pool, ef int, sql string, args []any, idx, seq map[string]bool) (planTimes, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return planTimes{}, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if ef > 0 {
		if _, err := tx.Exec(ctx, hnswSettings, strconv.Itoa(ef)); err != nil {
			return planTimes{}, err
		}
	}
	var plan []byte
	if err := tx.QueryRow(ctx, explainPrefix+sql, args...).Scan(&plan); err != nil {
		return planTimes{}, err
	}
	return readPlan(plan, idx, seq)
}

type planTimes struct{ planning, execution, jit float64 }

// readPlan returns planning, execution and JIT time and notes the indexes and
// the sequentially scanned relations of a JSON plan.
func readPlan(b []byte, idx, seq map[string]bool) (planTimes, error) {
	var doc []struct {
		Plan          map[string]any `json:"Plan"`
		PlanningTime  float64        `json:"Planning Time"`
		ExecutionTime float64        `json:"Execution Time"`
		JIT           struct {
			Timing struct {
				Total float64 `json:"Total"`
			} `json:"Timing"`
		} `json:"JIT"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc) == 0 {
		return planTimes{}, fmt.Errorf("read plan: %v", err)
	}
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if name, ok := n["Index Name"].(string); ok {
			idx[name] = true
		}
		if n["Node Type"] == "Seq Scan" {
			if rel, ok := n["Relation Name"].(string); ok {
				seq[rel] = true
			}
		}
		if kids, ok := n["Plans"].([]any); ok {
			for _, k := range kids {
				if m, ok := k.(map[string]any); ok {
					walk(m)
				}
			}
		}
	}
	walk(doc[0].Plan)
	return planTimes{doc[0].PlanningTime, doc[0].ExecutionTime, doc[0].JIT.Timing.Total}, nil
}

// ratios fills each cell's p50 relative to canon/weighted at its concurrency.
func (r *LatencyReport) ratios() {
	base := map[int]float64{}
	for _, c := range r.Cells {
		if c.Method == "canon/weighted" {
			base[c.Concurrency] = c.P50Ms
		}
	}
	for i, c := range r.Cells {
		if b := base[c.Concurrency]; b > 0 && c.P50Ms > 0 {
			r.Cells[i].VsCanon = c.P50Ms / b
		}
	}
}

// Cell returns the measurement of method at concurrency, if any.
func (r *LatencyReport) Cell(method string, conc int) (LatencyCell, bool) {
	for _, c := range r.Cells {
		if c.Method == method && c.Concurrency == conc {
			return c, true
		}
	}
	return LatencyCell{}, false
}

func (r *LatencyReport) checkTargets() {
	for _, conc := range r.Concurrency {
		w, ok1 := r.Cell("canon/weighted", conc)
		h, ok2 := r.Cell("ref/hnsw", conc)
		if !ok1 || !ok2 || h.P50Ms == 0 {
			continue
		}
		ratio := w.P50Ms / h.P50Ms
		r.Targets = append(r.Targets, LatencyTarget{
			Name: fmt.Sprintf("canon/weighted p50 <= 2x ref/hnsw p50 (concurrency %d)", conc), Value: ratio, Limit: 2,
			Passed: ratio <= 2, Detail: fmt.Sprintf("%.2f ms vs %.2f ms", w.P50Ms, h.P50Ms),
		})
	}
	if p := r.Paired; p != nil && p.B.P50Ms > 0 {
		ratio := p.A.P50Ms / p.B.P50Ms
		r.Targets = append(r.Targets, LatencyTarget{
			Name:  "canon/weighted p50 <= 2x ref/hnsw p50 (interleaved, concurrency 1)",
			Value: ratio, Limit: 2, Passed: ratio <= 2,
			Detail: fmt.Sprintf("%.2f ms vs %.2f ms over %d pairs; median per-question ratio %.2f",
				p.A.P50Ms, p.B.P50Ms, p.Pairs, p.MedianRatio),
		})
	}
	for _, e := range r.Explain {
		if !strings.HasPrefix(e.Statement, "canon/") || e.Error != "" {
			continue
		}
		hnsw := slices.Contains(e.Indexes, "chunks_embedding_hnsw")
		post := slices.Contains(e.Indexes, "postings_lexeme_impact")
		r.Targets = append(r.Targets, LatencyTarget{
			Name: e.Statement + " uses both indexes", Passed: hnsw && post,
			Detail: fmt.Sprintf("indexes in the plan: %s", strings.Join(e.Indexes, ", ")),
		})
		if e.PlanningMs > e.ExecMs {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: planning (%.2f ms) exceeds execution (%.2f ms) with parameters bound as literals; "+
				"pgx prepares the statement once per connection, see prepared_statements for the plans PostgreSQL reused",
				e.Statement, e.PlanningMs, e.ExecMs))
		}
	}
}

// Linux memory accounting: VmHWM is the peak resident set; writing 5 to
// clear_refs resets it so phases can be measured apart.
func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) } //nolint:errcheck

func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

func goTotalMB() float64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return float64(s[0].Value.Uint64()) / (1 << 20)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
