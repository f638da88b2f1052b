package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/domain"
)

// Report is one collection's evaluation.
type Report struct {
	Dataset   string `json:"dataset"`
	Dir       string `json:"dir"`
	Project   string `json:"project"`
	Docs      int    `json:"docs"`
	Chunks    int    `json:"chunks,omitempty"`
	Queries   int    `json:"queries"`
	Truncated int    `json:"truncated_queries"`
	Embedder  string `json:"embedder"`
	Profile   string `json:"profile"`
	// Ranking is the effective default ranking the variants override.
	Ranking *domain.Ranking `json:"default_ranking,omitempty"`
	// Parallel is the number of queries that were in flight at once.
	Parallel  int           `json:"parallel"`
	Ingest    IngestSummary `json:"ingest"`
	Results   []Result      `json:"results"`
	Baselines []Baseline    `json:"baselines,omitempty"`
	Machine   *Machine      `json:"machine,omitempty"`
	Started   time.Time     `json:"started"`
	Elapsed   float64       `json:"elapsed_seconds"`
}

// IngestSummary is what loading the collection did.
type IngestSummary struct {
	Created   int     `json:"created"`
	Updated   int     `json:"updated"`
	Unchanged int     `json:"unchanged"`
	Chunks    int     `json:"chunks_written"`
	Seconds   float64 `json:"seconds"`
}

// Machine describes where a report was measured.
type Machine struct {
	CPUs     int    `json:"cpus"`
	MemoryGB string `json:"memory_gb,omitempty"`
	Go       string `json:"go"`
	OSArch   string `json:"os_arch"`
	Postgres string `json:"postgres,omitempty"`
	PGVector string `json:"pgvector,omitempty"`
	Commit   string `json:"commit,omitempty"`
}

// DescribeMachine collects the machine, Go and database versions.
func DescribeMachine(ctx context.Context, pool *pgxpool.Pool, commit string) *Machine {
	m := &Machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), OSArch: runtime.GOOS + "/" + runtime.GOARCH, Commit: commit}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
					m.MemoryGB = strconv.FormatFloat(kb/1024/1024, 'f', 1, 64)
				}
			}
		}
	}
	if pool != nil {
		pool.QueryRow(ctx, "SHOW server_version").Scan(&m.Postgres)                                          //nolint:errcheck // a version that cannot be read stays blank
		pool.QueryRow(ctx, "SELECT extversion FROM pg_extension WHERE extname = 'vector'").Scan(&m.PGVector) //nolint:errcheck // a version that cannot be read stays blank
	}
	return m
}

// ChunkCount counts the chunks stored for project.
func ChunkCount(ctx context.Context, pool *pgxpool.Pool, project string) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM chunks c JOIN projects p ON p.id = c.project_id WHERE p.project_key = $1`, project).Scan(&n)
	return n, err
}

func (r *Report) header() string {
	return fmt.Sprintf("%s (project %s): %d docs, %d chunks, %d judged test queries; embedder %s, profile %s",
		r.Dataset, r.Project, r.Docs, r.Chunks, r.Queries, r.Embedder, r.Profile)
}

func fmtBaselineRecall(b Baseline) string {
	if b.Recall100 == nil {
		return "–"
	}
	return fmt.Sprintf("%.4f", *b.Recall100)
}

// WriteText prints the report as aligned tables.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintln(w, r.header())
	fmt.Fprintf(w, "ingest: %d created, %d updated, %d unchanged in %.1fs", r.Ingest.Created, r.Ingest.Updated, r.Ingest.Unchanged, r.Ingest.Seconds)
	if r.Truncated > 0 {
		fmt.Fprintf(w, "; %d queries cut to %d characters", r.Truncated, 4000)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ranking\tfusion\tnDCG@10\tR@10\tR@100\tMRR@10\tp50 ms\tp95 ms\t")
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%.4f\t%.4f\t%.4f\t%.4f\t%.1f\t%.1f\t\n", res.Variant, res.Fusion,
			res.NDCG10, res.Recall10, res.Recall100, res.MRR10, res.P50Ms, res.P95Ms)
	}
	tw.Flush()
	if len(r.Baselines) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "published baselines (same test split):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "system\tnDCG@10\tR@100\tsource\t")
		for _, b := range r.Baselines {
			fmt.Fprintf(tw, "%s\t%.4f\t%s\t%s\t\n", b.System, b.NDCG10, fmtBaselineRecall(b), b.Source)
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
}

// WriteMarkdown writes the report as a Markdown page; chart names the SVG written
// next to it ("" for none).
func (r *Report) WriteMarkdown(w io.Writer, chart string) {
	fmt.Fprintf(w, "# canon bench quality: %s\n\n", r.Dataset)
	fmt.Fprintf(w, "%s.\n\n", r.header())
	fmt.Fprintf(w, "Measured %s in %.0f s.", r.Started.UTC().Format(time.RFC3339), r.Elapsed)
	if m := r.Machine; m != nil {
		fmt.Fprintf(w, " Machine: %d CPUs, %s GB memory, %s, %s; PostgreSQL %s, pgvector %s", m.CPUs, m.MemoryGB, m.OSArch, m.Go, m.Postgres, m.PGVector)
		if m.Commit != "" {
			fmt.Fprintf(w, "; commit %s", m.Commit)
		}
		fmt.Fprint(w, ".")
	}
	fmt.Fprintf(w, "\nIngest: %d created, %d updated, %d unchanged in %.1f s.\n\n", r.Ingest.Created, r.Ingest.Updated, r.Ingest.Unchanged, r.Ingest.Seconds)
	if chart != "" {
		fmt.Fprintf(w, "![nDCG@10 and Recall@100 per fusion method against published baselines](%s)\n\n", chart)
	}
	fmt.Fprintln(w, "| ranking | fusion | nDCG@10 | Recall@10 | Recall@100 | MRR@10 | p50 ms | p95 ms |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, res := range r.Results {
		fmt.Fprintf(w, "| %s | %s | %.4f | %.4f | %.4f | %.4f | %.1f | %.1f |\n", mdEscape(res.Variant), res.Fusion,
			res.NDCG10, res.Recall10, res.Recall100, res.MRR10, res.P50Ms, res.P95Ms)
	}
	if len(r.Baselines) > 0 {
		fmt.Fprintln(w, "\n## Published baselines\n\n| system | nDCG@10 | Recall@100 | source |\n|---|---|---|---|")
		for _, b := range r.Baselines {
			fmt.Fprintf(w, "| %s | %.4f | %s | %s |\n", mdEscape(b.System), b.NDCG10, fmtBaselineRecall(b), mdEscape(b.Source))
		}
	}
	fmt.Fprintf(w, `
## Method

Every judged query of qrels/test.tsv runs through canon's search (one SQL statement)
with limit 100 and max_chunks_per_doc 1; a document's score is its best chunk. A
retrieved document whose id equals the query id is dropped (BEIR ignore_identical_ids,
Pyserini --remove-query). nDCG@10 uses the qrels scores as linear gains and the log2
discount (pytrec_eval); Recall@k is the share of relevant documents in the first k;
MRR@10 the reciprocal rank of the first relevant one. Latency is the wall time of one
search call as seen by the client, with %d quer%s in flight.
`, r.Parallel, plural(r.Parallel, "y", "ies"))
	if r.Truncated > 0 {
		fmt.Fprintf(w, "%d queries longer than canon's 4,000-character limit were cut at a word boundary.\n", r.Truncated)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// WriteFiles writes <dataset>.md, <dataset>.svg and <dataset>.json into dir and
// returns their paths.
func (r *Report) WriteFiles(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base := filepath.Join(dir, r.Dataset)
	var paths []string
	write := func(path string, fill func(io.Writer) error) error {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := fill(f); err != nil {
			f.Close()
			return err
		}
		paths = append(paths, path)
		return f.Close()
	}
	chart := r.Dataset + ".svg"
	if err := write(base+".svg", r.WriteSVG); err != nil {
		return paths, err
	}
	if err := write(base+".md", func(w io.Writer) error { r.WriteMarkdown(w, chart); return nil }); err != nil {
		return paths, err
	}
	err := write(base+".json", func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	})
	return paths, err
}
