package ingest

// The bulk path: a load that is large next to what the database already holds
// builds the chunks' HNSW index once, after its rows are in, instead of
// inserting every vector into it (at 100,000 chunks an insert cost about three
// times its share of a build). See db/migrations/00035_deferred_indexes.sql for
// how a load that dies half-way leaves the database. With the tables
// partitioned by project (KB_TABLE_LAYOUT=partitioned, migration 00061) a load
// drops and builds only the indexes of the partitions of the projects it loads:
// the other projects' searches keep theirs.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	db "github.com/canonkb/canon/gen/db"
)

// BulkPolicy decides when a load defers the chunks' vector index, and how the
// index is built again.
type BulkPolicy struct {
	// MinChunks: a load storing fewer chunks keeps the index maintained row by
	// row (0: never defer).
	MinChunks int `json:"min_chunks"`
	// Ratio: a load must store at least Ratio times the chunks already in the
	// database (every project: the index is shared; partitioned by project, the
	// project's own), so the rebuild stays cheaper than the inserts it replaces
	// and other projects' searches go without the index only while their data
	// is the smaller part.
	Ratio float64 `json:"ratio"`
	// BuildMemory is maintenance_work_mem for the build (an HNSW build that
	// outgrows it slows down several times).
	BuildMemory string `json:"build_memory"`
	// BuildWorkers is max_parallel_maintenance_workers for the build (0: one per
	// core beside the leader).
	BuildWorkers int `json:"build_workers"`
}

// Defaults of BulkPolicy.
const (
	DefaultBulkMinChunks    = 10000
	DefaultBulkRatio        = 1.0
	DefaultIndexBuildMemory = "1GB"
)

// DefaultBulkPolicy is the policy of New.
func DefaultBulkPolicy() BulkPolicy {
	return BulkPolicy{MinChunks: DefaultBulkMinChunks, Ratio: DefaultBulkRatio, BuildMemory: DefaultIndexBuildMemory}
}

// deferrableIndexes are the indexes a bulk load drops and builds after its rows
// are in, by name; their definitions are read from the database when dropped.
// The HNSW index costs a graph search per insert; postings_lexeme_impact takes
// about 70 random inserts per chunk, and once it outgrows shared_buffers (1 GB
// of postings indexes at 100,000 chunks) each batch waits on page reads and
// evictions: 72,000 postings took 5–30 s with it and 0.3 s without. The
// postings themselves and postings_chunk_lexeme (new chunk ids append at its
// end; deletes by chunk need it) stay with the triggers.
// Partitioned by project, they are each partition's own, named after these
// (chunks_p<id>_embedding_hnsw).
var deferrableIndexes = []string{"chunks_embedding_hnsw", "postings_lexeme_impact"}

// applies says whether a load of chunks chunks, with stored chunks already in
// the database, is a bulk load.
func (p BulkPolicy) applies(chunks int, stored int64) bool {
	return p.MinChunks > 0 && chunks >= p.MinChunks && float64(chunks) >= p.Ratio*float64(stored)
}

func (p BulkPolicy) buildWorkers() int {
	if p.BuildWorkers > 0 {
		return p.BuildWorkers
	}
	return max(runtime.NumCPU()-1, 0)
}

// bulkScope is a BulkLoad in progress: the transaction holding the bulk lock
// (nil when the load is too small to defer the indexes), and the projects whose
// entity mentions it rebuilds once, at its end.
type bulkScope struct {
	lock pgx.Tx
	pool *pgxpool.Pool
	// partitioned: the tables are partitioned by project, and the load defers
	// the indexes of each project's partitions as its Ingest calls reach it,
	// when chunks (what the load stores) is large next to that project.
	partitioned bool
	chunks      int
	mu          sync.Mutex
	// decided: projects whose partitions' indexes the load has deferred, or kept.
	decided map[int64]bool
	// staleMentions: projects whose rebuild the load's Ingest calls left to it.
	staleMentions map[int64]bool
}

type bulkKey struct{}

func bulkOf(ctx context.Context) *bulkScope {
	s, _ := ctx.Value(bulkKey{}).(*bulkScope)
	return s
}

// deferMentions leaves a project's mention rebuild to the end of the load
// (its mark stays set until then, so a load that dies leaves it to the next run).
func (s *bulkScope) deferMentions(projectID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.staleMentions[projectID] = true
}

// BulkResult says what BulkLoad did.
type BulkResult struct {
	// Deferred: the load ran without the deferrable indexes, built at its end.
	Deferred   bool
	IndexBuild time.Duration
	Built      []BuiltIndex
	// Mentions: rebuilding the entity mentions of the projects loaded, once.
	Mentions time.Duration
}

// BulkLoad runs load, one or more Ingest calls storing about chunks chunks, as one
// load: a bulk load when the policy allows it (the deferrable indexes dropped
// first and built once at the end, also when load fails); either way the
// projects' entity mentions are rebuilt once, at the end. Ingest calls inside
// load do not decide on their own.
func (in *Ingester) BulkLoad(ctx context.Context, chunks int, load func(ctx context.Context) error) (BulkResult, error) {
	scope, err := in.startBulk(ctx, chunks, 0)
	if err != nil {
		return BulkResult{}, err
	}
	var res BulkResult
	if scope == nil {
		// Too small to defer the indexes; the calls still rebuild the mentions once.
		scope = &bulkScope{staleMentions: map[int64]bool{}}
	}
	loadErr := load(context.WithValue(ctx, bulkKey{}, scope))
	var buildErr error
	if scope.lock != nil {
		res.Deferred = scope.deferredAny()
		res.IndexBuild, res.Built, buildErr = scope.finish(context.WithoutCancel(ctx), in.Bulk)
	}
	if loadErr != nil || buildErr != nil {
		return res, errors.Join(loadErr, buildErr)
	}
	start := time.Now()
	projects := slices.Sorted(maps.Keys(scope.staleMentions))
	for _, id := range projects {
		if err := in.rebuildTextMentions(ctx, id, chunks); err != nil {
			return res, fmt.Errorf("entity mentions: %w", err)
		}
	}
	res.Mentions = time.Since(start)
	return res, nil
}

// startBulk begins a bulk load when the policy says a load of chunks chunks
// into project (0: BulkLoad's, whose projects its Ingest calls name) is one and
// no other bulk load runs; nil otherwise. Inside a partitioned bulk load it
// defers the project's partition indexes instead, once.
func (in *Ingester) startBulk(ctx context.Context, chunks int, project int64) (*bulkScope, error) {
	if scope := bulkOf(ctx); scope != nil {
		if scope.lock != nil && scope.partitioned && project != 0 {
			return nil, scope.deferProject(ctx, project, in.Bulk)
		}
		return nil, nil
	}
	if in.Bulk.MinChunks <= 0 || chunks < in.Bulk.MinChunks {
		return nil, nil
	}
	q := db.New(in.pool)
	layout, err := q.TableLayout(ctx)
	if err != nil {
		return nil, fmt.Errorf("bulk load: %w", err)
	}
	partitioned := layout == "partitioned"
	if !partitioned {
		stored, err := q.ChunkCountAll(ctx)
		if err != nil {
			return nil, fmt.Errorf("bulk load: %w", err)
		}
		if !in.Bulk.applies(chunks, stored) {
			return nil, nil
		}
	} else if project != 0 {
		stored, err := q.ChunkCountOf(ctx, project)
		if err != nil {
			return nil, fmt.Errorf("bulk load: %w", err)
		}
		if !in.Bulk.applies(chunks, stored) {
			return nil, nil
		}
	}
	lock, err := tryBulkLock(ctx, in.pool)
	if err != nil || lock == nil {
		// Another load holds it: this one stores with the index as it finds it.
		return nil, err
	}
	scope := &bulkScope{lock: lock, pool: in.pool, partitioned: partitioned, chunks: chunks,
		decided: map[int64]bool{}, staleMentions: map[int64]bool{}}
	// A dead load's index is built before this one defers it again, so the
	// definition recorded is always the index's own.
	if _, err := restoreDeferred(ctx, in.pool, in.Bulk); err != nil {
		scope.release()
		return nil, err
	}
	if partitioned {
		if project == 0 {
			return scope, nil
		}
		if err := scope.deferProject(ctx, project, in.Bulk); err != nil {
			_, _, _ = scope.finish(context.WithoutCancel(ctx), in.Bulk)
			return nil, err
		}
		return scope, nil
	}
	for _, name := range deferrableIndexes {
		if err := deferIndex(ctx, in.pool, name); err != nil {
			_, _, _ = scope.finish(context.WithoutCancel(ctx), in.Bulk)
			return nil, err
		}
	}
	return scope, nil
}

// deferredAny says whether the load runs without some of its indexes: all of
// them, or partitioned, those of at least one project.
func (s *bulkScope) deferredAny() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.partitioned {
		return true
	}
	for _, deferred := range s.decided {
		if deferred {
			return true
		}
	}
	return false
}

// deferProject defers the indexes of a project's partitions, the first time the
// load reaches the project, when the load is large next to what the project
// holds (the policy's ratio); other projects keep theirs.
func (s *bulkScope) deferProject(ctx context.Context, project int64, policy BulkPolicy) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.decided[project]; ok {
		return nil
	}
	q := db.New(s.pool)
	stored, err := q.ChunkCountOf(ctx, project)
	if err != nil {
		return fmt.Errorf("bulk load: %w", err)
	}
	s.decided[project] = policy.applies(s.chunks, stored)
	if !s.decided[project] {
		return nil
	}
	for _, index := range deferrableIndexes {
		name, err := q.PartitionIndexName(ctx, db.PartitionIndexNameParams{ProjectID: project, Name: index})
		if err != nil {
			return fmt.Errorf("defer index %s of project %d: %w", index, project, err)
		}
		if err := deferIndex(ctx, s.pool, name); err != nil {
			return err
		}
	}
	return nil
}

// deferIndex drops an index in the transaction that records its definition.
func deferIndex(ctx context.Context, pool *pgxpool.Pool, name string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		def, err := q.IndexDefinition(ctx, name)
		if err != nil {
			return fmt.Errorf("defer index %s: %w", name, err)
		}
		if def == "" {
			return fmt.Errorf("defer index %s: no such index (run canon migrate up)", name)
		}
		if err := q.IndexDeferRecord(ctx, db.IndexDeferRecordParams{Name: name, Definition: def}); err != nil {
			return fmt.Errorf("defer index %s: %w", name, err)
		}
		if _, err := tx.Exec(ctx, "DROP INDEX "+pgx.Identifier{name}.Sanitize()); err != nil {
			return fmt.Errorf("defer index %s: %w", name, err)
		}
		return nil
	})
}

// BuiltIndex is an index built from its recorded definition, and how long
// that took.
type BuiltIndex struct {
	Name string
	Took time.Duration
}

// IndexNames lists the names of built.
func IndexNames(built []BuiltIndex) []string {
	names := make([]string, len(built))
	for i, b := range built {
		names[i] = b.Name
	}
	return names
}

// finish builds the deferred indexes and ends the bulk load.
func (s *bulkScope) finish(ctx context.Context, policy BulkPolicy) (time.Duration, []BuiltIndex, error) {
	defer s.release()
	start := time.Now()
	built, err := restoreDeferred(ctx, s.pool, policy)
	return time.Since(start), built, err
}

// release ends the lock's transaction, which releases the lock.
func (s *bulkScope) release() {
	_ = s.lock.Rollback(context.Background()) // a connection already gone took the lock with it
}

// tryBulkLock begins the transaction that holds the bulk lock; nil when another
// load holds it.
func tryBulkLock(ctx context.Context, pool *pgxpool.Pool) (pgx.Tx, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("bulk lock: %w", err)
	}
	locked, err := db.New(tx).BulkTryLock(ctx)
	if err != nil || !locked {
		_ = tx.Rollback(context.Background()) // nothing was written
		if err != nil {
			return nil, fmt.Errorf("bulk lock: %w", err)
		}
		return nil, nil
	}
	return tx, nil
}

// restoreDeferred builds every deferred index from its recorded definition,
// while the caller holds the bulk lock; each in its own transaction with the
// policy's build settings.
func restoreDeferred(ctx context.Context, pool *pgxpool.Pool, policy BulkPolicy) ([]BuiltIndex, error) {
	deferred, err := db.New(pool).IndexDeferredList(ctx)
	if err != nil {
		return nil, fmt.Errorf("deferred indexes: %w", err)
	}
	var built []BuiltIndex
	for _, d := range deferred {
		start := time.Now()
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			q := db.New(tx)
			if !d.Present {
				memory := policy.BuildMemory
				if memory == "" {
					memory = DefaultIndexBuildMemory
				}
				if err := q.IndexBuildSettings(ctx, db.IndexBuildSettingsParams{
					Memory: memory, Workers: strconv.Itoa(policy.buildWorkers())}); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, d.Definition); err != nil {
					return err
				}
			}
			return q.IndexDeferredDone(ctx, d.Name)
		})
		if err != nil {
			return built, fmt.Errorf("build index %s: %w", d.Name, err)
		}
		built = append(built, BuiltIndex{Name: d.Name, Took: time.Since(start)})
	}
	return built, nil
}

// RestoreDeferredIndexes builds the indexes a bulk load deferred and did not
// build (it died), unless a bulk load is running now: that one will. It
// returns the indexes built. Ingest and `canon migrate up` call it.
func RestoreDeferredIndexes(ctx context.Context, pool *pgxpool.Pool, policy BulkPolicy) ([]BuiltIndex, error) {
	deferred, err := db.New(pool).IndexDeferredList(ctx)
	if err != nil || len(deferred) == 0 {
		return nil, err
	}
	lock, err := tryBulkLock(ctx, pool)
	if err != nil || lock == nil {
		return nil, err
	}
	defer func() { _ = lock.Rollback(context.Background()) }() // releases the lock
	return restoreDeferred(ctx, pool, policy)
}
