package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/ingest"
)

// Setup is the system under test: the database, the ingest and search paths and
// what describes them in a report.
type Setup struct {
	Pool     *pgxpool.Pool
	Ingester *ingest.Ingester
	Searcher Searcher
	Embedder string // e.g. "hash/384"
	Profile  string
	Ranking  domain.Ranking // the searcher's defaults, recorded in the report
	Commit   string         // the source revision, recorded when known
	// IngestProgress receives ingest progress (files done, total).
	IngestProgress ingest.Progress
}

// Quality loads ds into project (ProjectKey(ds.Name) when empty), evaluates it
// and returns the report, with the published baselines of a known collection.
func Quality(ctx context.Context, ds *Dataset, project string, setup Setup, opts Options) (*Report, error) {
	start := time.Now()
	if project == "" {
		project = ProjectKey(ds.Name)
	}
	if !ingest.ValidProjectKey(project) {
		return nil, fmt.Errorf("invalid project key %q", project)
	}
	rank := setup.Ranking
	rep := &Report{
		Dataset: ds.Name, Dir: ds.Dir, Project: project, Docs: len(ds.Docs),
		Queries: len(ds.queryIDs(opts.LimitQueries)), Truncated: ds.TruncatedQueries(opts.LimitQueries),
		Embedder: setup.Embedder, Profile: setup.Profile, Ranking: &rank, Parallel: max(opts.Parallel, 1),
		Baselines: BaselinesFor(ds.Name), Started: start,
	}
	res, err := Ingest(ctx, setup.Ingester, ds, project, setup.IngestProgress)
	rep.Ingest = IngestSummary{Created: res.Created, Updated: res.Updated, Unchanged: res.Unchanged, Chunks: res.Chunks,
		Seconds: res.Elapsed.Seconds()}
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", ds.Name, err)
	}
	if setup.Pool != nil {
		if rep.Chunks, err = ChunkCount(ctx, setup.Pool, project); err != nil {
			return nil, err
		}
		rep.Machine = DescribeMachine(ctx, setup.Pool, setup.Commit)
	}
	if rep.Results, err = Evaluate(ctx, setup.Searcher, ds, project, opts); err != nil {
		return nil, err
	}
	rep.Elapsed = time.Since(start).Seconds()
	return rep, nil
}
