package bench

// The latency bench's database: its own database on the server, and the synthetic
// corpus loaded through the real ingest path.

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/postgres"
)

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

// load puts the corpus in the database unless it is there, times the ingest and
// the HNSW build, and records sizes.
func load(ctx context.Context, s LatencySetup, o LatencyOptions, rep *LatencyReport) error {
	// The database must hold nothing but latency corpora: the peers read every row
	// of chunks.
	corpora := latencyCorpora(o)
	keys := make([]string, len(corpora))
	for i, c := range corpora {
		keys[i] = c.key
	}
	var others []string
	rows, err := s.Pool.Query(ctx, "SELECT project_key FROM projects WHERE project_key <> ALL ($1) ORDER BY 1", keys)
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
	if err := convertTableLayout(ctx, s, o, rep); err != nil {
		return err
	}
	if err := convertVectorType(ctx, s, o, rep); err != nil {
		return err
	}
	rep.Load.Projects = len(corpora)
	for i, c := range corpora {
		have := int64(0)
		err = s.Pool.QueryRow(ctx, `SELECT coalesce((SELECT chunk_count FROM project_stats s JOIN projects p ON p.id = s.project_id
			WHERE p.project_key = $1), 0)`, c.key).Scan(&have)
		if err != nil {
			return err
		}
		if o.Fresh && have > 0 {
			if _, err := s.Pool.Exec(ctx, "DELETE FROM projects WHERE project_key = $1", c.key); err != nil {
				return err
			}
			have = 0
		}
		if have == int64(o.perProject()) {
			o.Log("latency: corpus %s already loaded (%d chunks); --fresh reloads and times the ingest", c.key, have)
			continue
		}
		run, err := ingestSynth(ctx, s, o, c)
		if err != nil {
			return err
		}
		// The searched project's load is the one reported.
		if i == 0 {
			rep.Load.Loaded = true
			rep.Load.IngestS = run.Seconds
			rep.Load.GenerateS = run.GenerateS
			rep.Load.IngestChunksPerS = run.ChunksPerS
			rep.Load.Bulk = run.Bulk
			rep.Load.Steps = run.Steps
		}
	}
	var projectID int64
	if err := s.Pool.QueryRow(ctx, "SELECT id FROM projects WHERE project_key = $1", rep.Project).Scan(&projectID); err != nil {
		return err
	}
	// The searched project's HNSW index: the table's, or its partition's.
	hnsw := "chunks_embedding_hnsw"
	if rep.Load.TableLayout == "partitioned" {
		hnsw = fmt.Sprintf("chunks_p%d_embedding_hnsw", projectID)
	}
	start := time.Now()
	if _, err := s.Pool.Exec(ctx, "VACUUM ANALYZE chunks, postings, documents, lexeme_stats, project_stats, kb_edges"); err != nil {
		return err
	}
	rep.Load.AnalyzeS = time.Since(start).Seconds()
	if err := s.Pool.QueryRow(ctx, "SELECT indexdef FROM pg_indexes WHERE indexname = $1", hnsw).Scan(&rep.Load.HNSWIndex); err != nil {
		return fmt.Errorf("find the HNSW index %s: %w", hnsw, err)
	}
	if !o.SkipIndexBuild {
		if err := rebuildHNSW(ctx, s, o, rep, hnsw); err != nil {
			return err
		}
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
	var n int64
	if err := s.Pool.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&n); err != nil {
		return fmt.Errorf("size of the database: %w", err)
	}
	rep.Load.Sizes["database"] = n
	// Every project's: partitioned, the sum over the partitions and their own indexes.
	for _, sz := range []struct{ name, table, suffix string }{
		{"chunks_table", "chunks", ""},
		{"chunks_embedding_hnsw", "chunks", "_embedding_hnsw"},
		{"chunks_rejected_hnsw", "chunks", "_rejected_hnsw"},
		{"chunks_tsv_gin", "chunks", "_tsv_gin"},
		{"postings_table", "postings", ""},
		{"postings_lexeme_impact", "postings", "_lexeme_impact"},
		{"postings_chunk_lexeme", "postings", "_chunk_lexeme"},
	} {
		relkind, size := "i", "pg_relation_size"
		if sz.suffix == "" {
			relkind, size = "r", "pg_table_size"
		}
		err := s.Pool.QueryRow(ctx, `SELECT coalesce(sum(`+size+`(c.oid)), 0)::bigint FROM pg_class c
			WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = $1 AND c.relname ~ $2`,
			relkind, "^"+sz.table+"(_p[0-9]+)?"+sz.suffix+"$").Scan(&n)
		if err != nil {
			return fmt.Errorf("size of %s: %w", sz.name, err)
		}
		rep.Load.Sizes[sz.name] = n
	}
	return nil
}

// latencyCorpus is one project's synthetic corpus.
type latencyCorpus struct {
	key  string
	seed uint64
}

// latencyCorpora lists the projects of a run, the searched one first.
func latencyCorpora(o LatencyOptions) []latencyCorpus {
	out := make([]latencyCorpus, max(o.Projects, 1))
	for i := range out {
		seed := o.Seed + uint64(i)
		out[i] = latencyCorpus{key: LatencyProjectKey(o.perProject(), seed), seed: seed}
	}
	return out
}

// convertTableLayout lays the tables out as o.TableLayout when set (before a
// load, empty tables; after one, the conversion is timed) and records the
// layout the run measures.
func convertTableLayout(ctx context.Context, s LatencySetup, o LatencyOptions, rep *LatencyReport) error {
	if o.TableLayout != "" {
		// The Supabase peer returns setof chunks; createPeers makes it again after.
		if _, err := s.Pool.Exec(ctx, "DROP FUNCTION IF EXISTS hybrid_search"); err != nil {
			return err
		}
		changed, took, err := ingest.SetTableLayout(ctx, s.Pool, o.TableLayout, s.Ingester.Bulk)
		if err != nil {
			return err
		}
		if changed {
			rep.Load.TableConvertS = took.Seconds()
			o.Log("latency: tables converted to the %s layout in %.1f s", o.TableLayout, took.Seconds())
		}
	}
	layout, err := postgres.TableLayout(ctx, s.Pool)
	if err != nil {
		return err
	}
	rep.Load.TableLayout = layout
	return nil
}

// convertVectorType stores the chunks' embeddings as o.VectorType when set
// (before a load, an empty table; after one, the conversion is timed) and
// records the type the run measures.
func convertVectorType(ctx context.Context, s LatencySetup, o LatencyOptions, rep *LatencyReport) error {
	if o.VectorType != "" {
		changed, took, err := ingest.SetVectorType(ctx, s.Pool, o.VectorType, s.Ingester.Bulk)
		if err != nil {
			return err
		}
		if changed {
			rep.Load.VectorConvertS = took.Seconds()
			o.Log("latency: chunks.embedding converted to %s in %.1f s", o.VectorType, took.Seconds())
		}
	}
	typ, err := postgres.EmbeddingType(ctx, s.Pool)
	if err != nil {
		return err
	}
	rep.Load.VectorType = typ
	return nil
}

// rebuildHNSW drops and builds the searched project's HNSW index (name) again
// on one connection, timing the build and reading that backend's peak resident
// memory.
func rebuildHNSW(ctx context.Context, s LatencySetup, o LatencyOptions, rep *LatencyReport, name string) error {
	conn, err := s.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var pid int32
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		return err
	}
	proc := backendProc(pid)
	o.Log("latency: rebuilding %s ...", name)
	// One transaction: an interrupted or failed build leaves the index as it was.
	start := time.Now()
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "DROP INDEX "+pgx.Identifier{name}.Sanitize()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, rep.Load.HNSWIndex)
		return err
	})
	if err != nil {
		return fmt.Errorf("rebuild the HNSW index: %w", err)
	}
	rep.Load.HNSWBuildS = time.Since(start).Seconds()
	if proc != "" {
		rep.Memory.BuildBackendPeakMB = peakRSSOfMB(proc)
	}
	o.Log("latency: HNSW build %.1f s (backend peak RSS %.0f MB)", rep.Load.HNSWBuildS, rep.Memory.BuildBackendPeakMB)
	return nil
}

// ingestBatchChunks bounds the files handed to one Ingest call (memory stays flat).
const ingestBatchChunks = 4000

// ingestSynth loads one project's corpus as one bulk load (ingest.BulkPolicy
// decides whether the vector index is built after the rows); the ingest time
// includes that build.
func ingestSynth(ctx context.Context, s LatencySetup, o LatencyOptions, c latencyCorpus) (IngestRun, error) {
	g, err := NewSynth(SynthOptions{Chunks: o.perProject(), Seed: c.seed, Project: c.key, Words: o.Vocabulary, Chunking: s.Chunking})
	if err != nil {
		return IngestRun{}, err
	}
	return ingestGenerated(ctx, s.Ingester, g, c.key, o.perProject(), nil, o.Log)
}

// IngestRun is one timed ingest of a generated corpus.
type IngestRun struct {
	// Chunks stored (changed or new), documents seen and documents stored.
	Chunks    int  `json:"chunks"`
	Documents int  `json:"documents"`
	Stored    int  `json:"documents_stored"`
	Bulk      bool `json:"bulk_load"`
	// Seconds of ingest, index build included; generating the files is apart.
	Seconds    float64     `json:"seconds"`
	ChunksPerS float64     `json:"chunks_per_s"`
	GenerateS  float64     `json:"generate_s"`
	Steps      IngestSteps `json:"steps_s"`
	// IndexBuilds: seconds of each index the bulk load built at its end.
	IndexBuilds map[string]float64 `json:"index_builds_s,omitempty"`
}

// IngestSteps is ingest.Steps in seconds (Embed and Store add up every
// worker's time).
type IngestSteps struct {
	Convert    float64 `json:"convert"`
	Embed      float64 `json:"embed_workers"`
	Store      float64 `json:"store_workers"`
	IndexBuild float64 `json:"index_build"`
	Mentions   float64 `json:"mentions"`
}

func (st *IngestSteps) add(s ingest.Steps) {
	st.Convert += s.Convert.Seconds()
	st.Embed += s.Embed.Seconds()
	st.Store += s.Store.Seconds()
	st.IndexBuild += s.IndexBuild.Seconds()
	st.Mentions += s.Mentions.Seconds()
}

// ingestGenerated ingests g's files in calls of about ingestBatchChunks chunks,
// inside one ingest.Ingester.BulkLoad of expect chunks; edit, when set, rewrites
// files before they are ingested.
func ingestGenerated(ctx context.Context, in *ingest.Ingester, g *Synth, project string, expect int,
	edit func(i int, f ingest.File) ingest.File, logf func(string, ...any)) (IngestRun, error) {
	var run IngestRun
	var ingestTime, genTime time.Duration
	lastLog := time.Now()
	began := time.Now()
	bulk, err := in.BulkLoad(ctx, expect, func(ctx context.Context) error {
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
				if edit != nil {
					f = edit(run.Documents+len(batch), f)
				}
				batch = append(batch, f)
				n += c
			}
			genTime += time.Since(start)
			if len(batch) == 0 {
				return nil
			}
			start = time.Now()
			res, err := in.Ingest(ctx, batch, ingest.Options{Project: project, Language: SynthLanguage})
			ingestTime += time.Since(start)
			if err != nil {
				return fmt.Errorf("ingest: %w", err)
			}
			if len(res.Errors) > 0 {
				return fmt.Errorf("ingest: %d synthetic files rejected, first: %s", len(res.Errors), res.Errors[0].Error())
			}
			run.Documents += len(batch)
			run.Stored += res.Created + res.Updated
			run.Chunks += res.Chunks
			run.Steps.add(res.Steps)
			if time.Since(lastLog) > 10*time.Second {
				logf("ingest: %d chunks generated, %d stored (%.0f chunks/s)", g.Chunks(), run.Chunks, float64(run.Chunks)/max(ingestTime.Seconds(), 1e-9))
				lastLog = time.Now()
			}
		}
	})
	if err != nil {
		return run, err
	}
	// The index build and the mention rebuild at the end of the bulk load are
	// part of the ingest.
	ingestTime += bulk.IndexBuild + bulk.Mentions
	run.Bulk = bulk.Deferred
	run.Steps.IndexBuild += bulk.IndexBuild.Seconds()
	run.Steps.Mentions += bulk.Mentions.Seconds()
	for _, b := range bulk.Built {
		if run.IndexBuilds == nil {
			run.IndexBuilds = map[string]float64{}
		}
		run.IndexBuilds[b.Name] = b.Took.Seconds()
	}
	run.Seconds = ingestTime.Seconds()
	run.GenerateS = genTime.Seconds()
	if run.Chunks > 0 {
		run.ChunksPerS = float64(run.Chunks) / run.Seconds
	}
	logf("ingest: %d chunks of %d documents stored in %.1f s (%.0f chunks/s; bulk load %v, index build %.1f s); all %d chunks took %.1f s",
		run.Chunks, run.Stored, run.Seconds, run.ChunksPerS, run.Bulk, bulk.IndexBuild.Seconds(), g.Chunks(), time.Since(began).Seconds())
	return run, nil
}

// QueriesOver is Queries for a corpus of docs documents (no need to generate it).
func (g *Synth) QueriesOver(docs, n int) []string {
	saved := g.docs
	g.docs = make([]synthDoc, docs)
	defer func() { g.docs = saved }()
	return g.Queries(n)
}

// EnsureCorpus loads the synthetic corpus of o.Chunks chunks into its project
// (LatencyProjectKey, shared with the latency bench) unless it is there whole,
// and returns the project and o.Queries questions about it (`canon bench load`).
// Other projects in the database are left alone. Without load, a corpus that
// is not there whole is an error.
func EnsureCorpus(ctx context.Context, s LatencySetup, o LatencyOptions, load bool) (string, []string, error) {
	o.defaults()
	project := LatencyProjectKey(o.Chunks, o.Seed)
	var have, docs int64
	err := s.Pool.QueryRow(ctx, `SELECT coalesce(s.chunk_count, 0), (SELECT count(*) FROM documents d WHERE d.project_id = p.id)
		FROM projects p LEFT JOIN project_stats s ON s.project_id = p.id WHERE p.project_key = $1`, project).Scan(&have, &docs)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", nil, err
	}
	if (have != int64(o.Chunks) || o.Fresh) && !load {
		return "", nil, fmt.Errorf("project %s holds %d chunks, not the %d of the corpus: load it first (canon bench load without --url)",
			project, have, o.Chunks)
	}
	if have != int64(o.Chunks) || o.Fresh {
		if have > 0 {
			// An interrupted or different load: start over.
			if _, err := s.Pool.Exec(ctx, "DELETE FROM projects WHERE project_key = $1", project); err != nil {
				return "", nil, err
			}
		}
		run, err := ingestSynth(ctx, s, o, latencyCorpus{key: project, seed: o.Seed})
		if err != nil {
			return "", nil, err
		}
		o.Log("corpus: %d chunks loaded into %s in %.0f s", o.Chunks, project, run.Seconds)
		if err := s.Pool.QueryRow(ctx, `SELECT count(*) FROM documents d JOIN projects p ON p.id = d.project_id
			WHERE p.project_key = $1`, project).Scan(&docs); err != nil {
			return "", nil, err
		}
		if _, err := s.Pool.Exec(ctx, "VACUUM ANALYZE chunks, postings, documents, lexeme_stats, project_stats, kb_edges"); err != nil {
			return "", nil, err
		}
	} else {
		o.Log("corpus: %s already loaded (%d chunks)", project, have)
	}
	g, err := NewSynth(SynthOptions{Chunks: o.Chunks, Seed: o.Seed, Words: o.Vocabulary, Chunking: s.Chunking})
	if err != nil {
		return "", nil, err
	}
	return project, g.QueriesOver(int(docs), o.Queries), nil
}
