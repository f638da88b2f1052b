// Package doctor checks a canon installation: the database, its schema and
// indexes, and the configured embedding and language-model providers.
package doctor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/postgres"
)

// Status is a check's verdict.
type Status string

// The verdicts, from good to bad.
const (
	OK   Status = "OK"
	Warn Status = "WARN"
	Fail Status = "FAIL"
)

// Check is one line of the report: what was checked, what was found, and what
// to do when it is not OK.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Action string `json:"action,omitempty"`
}

// Probe calls a provider once; nil means it answered.
type Probe func(ctx context.Context) error

// Options are what the checks look at.
type Options struct {
	Pool *pgxpool.Pool
	// EmbeddingDim is the embedder's dimension; FollowsSchema is true for an
	// embedder that adopts the schema's dimension (hash).
	EmbeddingDim  int
	FollowsSchema bool
	// Embedder and LLM probe the configured providers; nil means none is
	// configured (hash embedder, extractive answers).
	Embedder, LLM Probe
	// ProbeTimeout bounds each provider probe.
	ProbeTimeout time.Duration
}

// Thresholds of the sanity checks.
const (
	minPostgres       = 150000  // canon is built and tested on PostgreSQL 15
	recommendedVector = "0.8.4" // HNSW vacuum fixes
	minEfSearch       = 40      // pgvector's default; lower truncates the vector leg
	minWorkMemKB      = 4096    // PostgreSQL's default; lower spills the ranking sorts to disk
	maxWorkMemKB      = 1 << 20 // 1 GB per sort node risks memory exhaustion under load
)

// Run performs every check in order.
func Run(ctx context.Context, o Options) []Check {
	checks := []Check{postgresVersion(ctx, o.Pool), vectorVersion(ctx, o.Pool), migrations(ctx, o.Pool),
		indexes(ctx, o.Pool), dimension(ctx, o), efSearch(ctx, o.Pool), workMem(ctx, o.Pool)}
	checks = append(checks, probe(ctx, "embedder reachable", o.Embedder, o.ProbeTimeout,
		"check KB_EMBEDDING_BASE_URL, KB_EMBEDDING_API_KEY and KB_EMBEDDING_MODEL"))
	checks = append(checks, probe(ctx, "LLM provider reachable", o.LLM, o.ProbeTimeout,
		"check KB_LLM_BASE_URL, KB_LLM_API_KEY and KB_LLM_MODEL, or set KB_LLM_PROVIDER=extractive"))
	return checks
}

// Failed reports whether any check failed.
func Failed(checks []Check) bool {
	for _, c := range checks {
		if c.Status == Fail {
			return true
		}
	}
	return false
}

func dbFailure(name string, err error) Check {
	return Check{Name: name, Status: Fail, Detail: err.Error(), Action: "check DATABASE_URL and that the server is up"}
}

func postgresVersion(ctx context.Context, pool *pgxpool.Pool) Check {
	const name = "PostgreSQL version"
	var num int
	var version string
	if err := pool.QueryRow(ctx, `SELECT current_setting('server_version_num')::int, current_setting('server_version')`).Scan(&num, &version); err != nil {
		return dbFailure(name, err)
	}
	if num < minPostgres {
		return Check{Name: name, Status: Fail, Detail: version, Action: "upgrade to PostgreSQL 15 or newer"}
	}
	return Check{Name: name, Status: OK, Detail: version}
}

func vectorVersion(ctx context.Context, pool *pgxpool.Pool) Check {
	const name = "pgvector version"
	var version string
	err := pool.QueryRow(ctx, `SELECT coalesce((SELECT extversion FROM pg_extension WHERE extname = 'vector'), '')`).Scan(&version)
	switch {
	case err != nil:
		return dbFailure(name, err)
	case version == "":
		return Check{Name: name, Status: Fail, Detail: "the vector extension is not installed",
			Action: "install pgvector and run `canon migrate up`"}
	case VersionLess(version, recommendedVector):
		return Check{Name: name, Status: Warn, Detail: version,
			Action: "upgrade pgvector to " + recommendedVector + " or newer (HNSW vacuum fixes), then ALTER EXTENSION vector UPDATE"}
	}
	return Check{Name: name, Status: OK, Detail: version}
}

// VersionLess compares dotted numeric versions ("0.8.0" < "0.8.4").
func VersionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

func migrations(ctx context.Context, pool *pgxpool.Pool) Check {
	const name = "migrations current"
	applied, embedded, err := postgres.MigrationVersions(ctx, pool)
	switch {
	case err != nil:
		return Check{Name: name, Status: Fail, Detail: err.Error(), Action: "run `canon migrate up`"}
	case applied < embedded:
		return Check{Name: name, Status: Fail, Detail: fmt.Sprintf("schema at %d, this binary has migrations up to %d", applied, embedded),
			Action: "run `canon migrate up`"}
	case applied > embedded:
		return Check{Name: name, Status: Warn, Detail: fmt.Sprintf("schema at %d is newer than this binary's %d", applied, embedded),
			Action: "upgrade canon to the release that migrated this database"}
	}
	return Check{Name: name, Status: OK, Detail: fmt.Sprintf("version %d", applied)}
}

func indexes(ctx context.Context, pool *pgxpool.Pool) Check {
	const name = "indexes present and valid"
	var total, hnsw int
	var invalid, bare []string
	// Partitioned by project (KB_TABLE_LAYOUT), the HNSW index is each
	// partition's own, made from the definition partition_indexes records.
	err := pool.QueryRow(ctx, `
		SELECT count(*)::int,
		       (count(*) FILTER (WHERE am.amname = 'hnsw' AND i.indrelid = to_regclass('chunks')))::int
		       + (SELECT count(*) FROM partition_indexes p WHERE p.table_name = 'chunks' AND p.definition LIKE '% USING hnsw %')::int,
		       coalesce(array_agg(c.relname ORDER BY c.relname) FILTER (WHERE NOT i.indisvalid), '{}'),
		       ARRAY(SELECT h.inhrelid::regclass::text FROM pg_inherits h
		             WHERE h.inhparent = to_regclass('chunks')
		               AND NOT EXISTS (SELECT FROM pg_index x JOIN pg_class xc ON xc.oid = x.indexrelid
		                               JOIN pg_am xa ON xa.oid = xc.relam
		                               WHERE x.indrelid = h.inhrelid AND xa.amname = 'hnsw')
		             ORDER BY 1)
		FROM pg_index i
		JOIN pg_class c ON c.oid = i.indexrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_am am ON am.oid = c.relam
		WHERE n.nspname = current_schema()`).Scan(&total, &hnsw, &invalid, &bare)
	switch {
	case err != nil:
		return dbFailure(name, err)
	case len(invalid) > 0:
		return Check{Name: name, Status: Fail, Detail: "invalid: " + strings.Join(invalid, ", "),
			Action: "REINDEX INDEX CONCURRENTLY " + invalid[0] + " (an interrupted CREATE INDEX CONCURRENTLY leaves an index invalid)"}
	case hnsw == 0:
		return Check{Name: name, Status: Fail, Detail: "no HNSW index on chunks.embedding",
			Action: "run `canon migrate up`; vector search scans every chunk without it"}
	case len(bare) > 0:
		return Check{Name: name, Status: Fail, Detail: "no HNSW index on the partitions " + strings.Join(bare, ", "),
			Action: "run `canon migrate up` (it builds an index an interrupted bulk load left unbuilt); vector search scans those projects' chunks without it"}
	}
	return Check{Name: name, Status: OK, Detail: fmt.Sprintf("%d indexes, all valid", total)}
}

func dimension(ctx context.Context, o Options) Check {
	const name = "embedding dimension"
	dim, err := postgres.EmbeddingDim(ctx, o.Pool)
	typ := "vector"
	if err == nil {
		typ, err = postgres.EmbeddingType(ctx, o.Pool)
	}
	switch {
	case err != nil:
		return Check{Name: name, Status: Fail, Detail: err.Error(), Action: "run `canon migrate up`"}
	case o.FollowsSchema || dim == o.EmbeddingDim:
		return Check{Name: name, Status: OK, Detail: fmt.Sprintf("%s(%d)", typ, dim)}
	}
	return Check{Name: name, Status: Fail, Detail: fmt.Sprintf("embedder gives %d, chunks.embedding is %s(%d)", o.EmbeddingDim, typ, dim),
		Action: fmt.Sprintf("set KB_EMBEDDING_DIM=%d (and a model of that width), or migrate a new database", dim)}
}

func efSearch(ctx context.Context, pool *pgxpool.Pool) Check {
	const name = "hnsw.ef_search"
	var v *string
	if err := pool.QueryRow(ctx, `SELECT current_setting('hnsw.ef_search', true)`).Scan(&v); err != nil {
		return dbFailure(name, err)
	}
	if v == nil || *v == "" {
		return Check{Name: name, Status: OK, Detail: "pgvector default (40); canon raises it per query to its fan-out"}
	}
	n, err := strconv.Atoi(*v)
	if err != nil || n < minEfSearch {
		return Check{Name: name, Status: Warn, Detail: *v,
			Action: fmt.Sprintf("set hnsw.ef_search >= %d in postgresql.conf or on the role: a lower default truncates other vector queries", minEfSearch)}
	}
	return Check{Name: name, Status: OK, Detail: *v}
}

func workMem(ctx context.Context, pool *pgxpool.Pool) Check {
	const name = "work_mem"
	var kb int
	var shown string
	if err := pool.QueryRow(ctx, `SELECT setting::int, current_setting('work_mem') FROM pg_settings WHERE name = 'work_mem'`).Scan(&kb, &shown); err != nil {
		return dbFailure(name, err)
	}
	switch {
	case kb < minWorkMemKB:
		return Check{Name: name, Status: Warn, Detail: shown, Action: "raise work_mem to at least 4MB: the ranking statement's sorts spill to disk"}
	case kb > maxWorkMemKB:
		return Check{Name: name, Status: Warn, Detail: shown, Action: "lower work_mem below 1GB: each sort of each connection may use that much"}
	}
	return Check{Name: name, Status: OK, Detail: shown}
}

func probe(ctx context.Context, name string, p Probe, timeout time.Duration, action string) Check {
	if p == nil {
		return Check{Name: name, Status: OK, Detail: "none configured (built in)"}
	}
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	if err := p(ctx); err != nil {
		return Check{Name: name, Status: Fail, Detail: err.Error(), Action: action}
	}
	return Check{Name: name, Status: OK, Detail: fmt.Sprintf("answered in %s", time.Since(start).Round(time.Millisecond))}
}
