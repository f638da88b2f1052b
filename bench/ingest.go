package bench

// The ingest bench: a first load of the synthetic corpus into an empty
// database (a bulk load when ingest.BulkPolicy says so: the vector index built
// after the rows), then the same files again with a fraction of them changed
// (unchanged files skipped, changed ones replaced row by row).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/canonkb/canon/ingest"
)

// IngestOptions configure the ingest bench.
type IngestOptions struct {
	Chunks     int
	Seed       uint64
	Vocabulary []string
	// Change is the fraction of documents the second run changes (0.01: 1%).
	Change float64
	Log    func(format string, args ...any)
}

// IngestReport is the ingest bench's outcome.
type IngestReport struct {
	Started  time.Time         `json:"started"`
	Commit   string            `json:"commit,omitempty"`
	Embedder string            `json:"embedder"`
	Project  string            `json:"project"`
	Machine  LatencyMachine    `json:"machine"`
	Policy   ingest.BulkPolicy `json:"bulk_policy"`
	Workers  int               `json:"workers"`
	First    IngestRun         `json:"first_load"`
	Change   IngestRun         `json:"change"`
	// ChangeFraction of the documents the second run changed.
	ChangeFraction float64          `json:"change_fraction"`
	Sizes          map[string]int64 `json:"sizes_bytes"`
	PeakRSSMB      float64          `json:"peak_rss_mb"`
}

// IngestThroughput runs the ingest bench on s's database, which must hold no project.
func IngestThroughput(ctx context.Context, s LatencySetup, o IngestOptions) (*IngestReport, error) {
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	if o.Change <= 0 || o.Change > 1 {
		return nil, fmt.Errorf("change fraction %g: want more than 0 and at most 1", o.Change)
	}
	var projects int
	if err := s.Pool.QueryRow(ctx, "SELECT count(*) FROM projects").Scan(&projects); err != nil {
		return nil, err
	}
	if projects > 0 {
		return nil, fmt.Errorf("the ingest bench needs an empty database; this one holds %d projects", projects)
	}
	rep := &IngestReport{Started: time.Now().UTC(), Commit: s.Commit, Embedder: ingest.EmbedderIdentity(s.Embedder),
		Project: LatencyProjectKey(o.Chunks, o.Seed), Policy: s.Ingester.Bulk, Workers: s.Ingester.Workers, ChangeFraction: o.Change}
	if rep.Workers == 0 {
		rep.Workers = ingest.DefaultWorkers()
	}
	if err := machine(ctx, s.Pool, &rep.Machine); err != nil {
		return nil, err
	}
	resetPeakRSS()
	synth := func() (*Synth, error) {
		return NewSynth(SynthOptions{Chunks: o.Chunks, Seed: o.Seed, Project: rep.Project, Words: o.Vocabulary, Chunking: s.Chunking})
	}
	g, err := synth()
	if err != nil {
		return nil, err
	}
	o.Log("ingest: first load of %d chunks", o.Chunks)
	if rep.First, err = ingestGenerated(ctx, s.Ingester, g, rep.Project, o.Chunks, nil, o.Log); err != nil {
		return nil, err
	}

	// The same files again, every 1/Change-th one with a paragraph more.
	if g, err = synth(); err != nil {
		return nil, err
	}
	every := max(int(1/o.Change+0.5), 1)
	edit := func(i int, f ingest.File) ingest.File {
		if i%every == every-1 {
			f.Content = append(f.Content, fmt.Appendf(nil, "\n\nRevised in review %d: the rollout moves to the canary ring first.\n", i)...)
		}
		return f
	}
	o.Log("ingest: the same corpus with 1 document in %d changed", every)
	if rep.Change, err = ingestGenerated(ctx, s.Ingester, g, rep.Project, int(float64(o.Chunks)*o.Change), edit, o.Log); err != nil {
		return nil, err
	}
	rep.PeakRSSMB = peakRSSMB()
	rep.Machine.LoadAvgEnd = loadAvg()
	rep.Sizes = map[string]int64{}
	for _, sz := range []struct{ name, sql string }{
		{"database", "SELECT pg_database_size(current_database())"},
		{"chunks_embedding_hnsw", "SELECT pg_relation_size('chunks_embedding_hnsw')"},
		{"postings_table", "SELECT pg_table_size('postings')"},
	} {
		var n int64
		if err := s.Pool.QueryRow(ctx, sz.sql).Scan(&n); err != nil {
			return nil, fmt.Errorf("size of %s: %w", sz.name, err)
		}
		rep.Sizes[sz.name] = n
	}
	return rep, nil
}

// WriteFiles writes ingest.json and ingest.md into dir.
func (r *IngestReport) WriteFiles(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	js, md := filepath.Join(dir, "ingest.json"), filepath.Join(dir, "ingest.md")
	if err := os.WriteFile(js, append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	var sb strings.Builder
	r.WriteMarkdown(&sb)
	if err := os.WriteFile(md, []byte(sb.String()), 0o644); err != nil {
		return nil, err
	}
	return []string{js, md}, nil
}

// WriteMarkdown prints the report as Markdown.
func (r *IngestReport) WriteMarkdown(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "# canon ingest: %d chunks\n\n", r.First.Chunks)
	fmt.Fprintf(w, "Run %s", r.Started.Format("2006-01-02 15:04 UTC"))
	if r.Commit != "" {
		fmt.Fprintf(w, " at %s", r.Commit)
	}
	fmt.Fprintf(w, "; embedder %s; PostgreSQL %s, pgvector %s; %s/%s, %d CPUs (load average %s at the start, %s at the end); "+
		"shared_buffers %s; %d ingest workers; bulk policy: at least %d chunks and %g × the chunks stored, "+
		"index build with maintenance_work_mem %s; peak RSS of this process %.0f MB.\n\n",
		r.Embedder, m.Postgres, m.PGVector, m.GOOS, m.GOARCH, m.CPUs, m.LoadAvgStart, m.LoadAvgEnd,
		m.SharedBuffers, r.Workers, r.Policy.MinChunks, r.Policy.Ratio, r.Policy.BuildMemory, r.PeakRSSMB)
	fmt.Fprintf(w, "Synthetic corpus `%s` (`bench/synth.go`), generated in calls of about %d chunks (generation not timed). "+
		"The change run reads every file again: unchanged ones are skipped by their hash, %.0f%% of the documents carry a paragraph more.\n\n",
		r.Project, ingestBatchChunks, 100*r.ChangeFraction)
	fmt.Fprintln(w, "| run | documents stored / read | chunks stored | bulk load | seconds | chunks/s | convert | embed (workers) | store (workers) | index build | mention rebuild |")
	fmt.Fprintln(w, "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, run := range []struct {
		name string
		r    IngestRun
	}{{"first load", r.First}, {fmt.Sprintf("%.0f%% change", 100*r.ChangeFraction), r.Change}} {
		st := run.r.Steps
		fmt.Fprintf(w, "| %s | %d / %d | %d | %v | %.1f | **%.0f** | %.1f | %.1f | %.1f | %.1f | %.1f |\n",
			run.name, run.r.Stored, run.r.Documents, run.r.Chunks, run.r.Bulk, run.r.Seconds, run.r.ChunksPerS,
			st.Convert, st.Embed, st.Store, st.IndexBuild, st.Mentions)
	}
	if len(r.First.IndexBuilds) > 0 {
		var builds []string
		for _, name := range slices.Sorted(maps.Keys(r.First.IndexBuilds)) {
			builds = append(builds, fmt.Sprintf("%s %.1f s", name, r.First.IndexBuilds[name]))
		}
		fmt.Fprintf(w, "\nIndex builds of the first load: %s.\n", strings.Join(builds, ", "))
	}
	fmt.Fprintf(w, "\nSeconds include the index build. Embed and store add up the time of every worker (they overlap); "+
		"store is the batches' transactions: rows, the triggers deriving the full text, postings and BM25 statistics, index maintenance, commit.\n\n")
	fmt.Fprintf(w, "Sizes after both runs: database %s, chunks_embedding_hnsw %s, postings %s.\n",
		mb(r.Sizes["database"]), mb(r.Sizes["chunks_embedding_hnsw"]), mb(r.Sizes["postings_table"]))
}
