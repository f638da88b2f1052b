package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/canonkb/canon/bench"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure retrieval quality on public test collections",
		Long: `Benchmarks of canon's retrieval, run against the configured database and embedder.
` + "`make bench`" + ` runs them all and writes bench/results/.`,
	}
	cmd.AddCommand(newBenchQualityCmd(), newBenchScenariosCmd(), newBenchLatencyCmd(), newBenchRefusalCmd(), newBenchLoadCmd(), newBenchIngestCmd())
	return cmd
}

func newBenchQualityCmd() *cobra.Command {
	var (
		databaseURL, fusion, outDir, project, commit string
		datasets, rankings                           []string
		limitQueries, parallel                       int
		asJSON                                       bool
	)
	cmd := &cobra.Command{
		Use:   "quality --dataset DIR|NAME [--fusion all|weighted,rrf,...] [--json] [--out DIR]",
		Short: "nDCG@10, Recall@10/100, MRR@10 and latency on a BEIR collection, next to published baselines",
		Long: `Loads a BEIR collection (corpus.jsonl, queries.jsonl, qrels/test.tsv) into a project of
its own (beir-<name>; idempotent: a second run writes nothing), runs every judged test
query through canon's search with each fusion method and scores the rankings the way
BEIR and Pyserini do (a document is its best chunk; a retrieved document whose id is the
query's own is dropped). The collection is read in place, never copied.

--dataset takes a directory or a collection name; a name is looked up in
../shared/datasets next to the repository (or in $CANON_DATASETS).

--ranking measures ranking overrides, one variant per flag, e.g.
  --ranking default --ranking k1=0.9,b=0.4 --ranking hybrid=0.2:0.8,heading_boost=2
Keys are the canon.v1.Ranking fields (bm25_k1, bm25_b, bm25_heading_boost,
vector_weight, keyword_weight, semantic_weight, fts_weight, ...) or the aliases k1, b,
heading_boost; hybrid=V:K sets vector_weight and semantic_weight to V and
keyword_weight and fts_weight to K.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(datasets) == 0 {
				return fmt.Errorf("--dataset is required (a BEIR directory or a name such as scifact)")
			}
			if project != "" && len(datasets) > 1 {
				return fmt.Errorf("--project needs exactly one --dataset")
			}
			fusions, err := bench.ParseFusions(fusion)
			if err != nil {
				return err
			}
			var variants []bench.Variant
			for _, spec := range rankings {
				v, err := bench.ParseVariant(spec)
				if err != nil {
					return err
				}
				variants = append(variants, v)
			}
			var dirs []string
			for _, d := range datasets {
				dir, err := resolveDataset(d)
				if err != nil {
					return err
				}
				dirs = append(dirs, dir)
			}
			cfg, err := loadConfig(databaseURL)
			if err != nil {
				return err
			}
			a, err := openApp(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer a.Close()
			if commit == "" {
				commit = os.Getenv("BENCH_COMMIT")
			}
			ranking, err := cfg.RankingDefaults()
			if err != nil {
				return err
			}
			interactive := !asJSON && term.IsTerminal(int(os.Stderr.Fd()))
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			var reports []*bench.Report
			for _, dir := range dirs {
				ds, err := bench.Load(dir)
				if err != nil {
					return err
				}
				setup := bench.Setup{
					Pool: a.pool, Ingester: a.ingester, Searcher: a.searcher,
					Embedder: fmt.Sprintf("%s/%d", a.embedder.Name(), a.embedder.Dim()),
					Profile:  cfg.Profile(), Ranking: ranking, Commit: commit,
				}
				opts := bench.Options{Fusions: fusions, Variants: variants, LimitQueries: limitQueries, Parallel: parallel}
				var ingestBar, queryBar *progressbar.ProgressBar
				if interactive {
					ingestBar = newBar(len(ds.Docs), "ingest "+ds.Name)
					setup.IngestProgress = func(done, _ int) { ingestBar.Set(done) } //nolint:errcheck // a bar that fails to draw changes no result
					opts.Progress = func(done, total int) {
						if queryBar == nil {
							ingestBar.Finish() //nolint:errcheck // a bar that fails to draw changes no result
							queryBar = newBar(total, "queries "+ds.Name)
						}
						queryBar.Set(done) //nolint:errcheck // a bar that fails to draw changes no result
					}
				} else if !asJSON {
					// Not a terminal: a line at every tenth of the searches.
					fmt.Fprintf(stderr, "bench: %s: %d docs, %d judged queries\n", ds.Name, len(ds.Docs), len(ds.TestQueries))
					name, start := ds.Name, time.Now()
					opts.Progress = func(done, total int) {
						if done == total || done*10/total != (done-1)*10/total {
							fmt.Fprintf(stderr, "bench: %s: %d/%d searches, %s\n", name, done, total, time.Since(start).Round(time.Second))
						}
					}
				}
				rep, err := bench.Quality(cmd.Context(), ds, project, setup, opts)
				for _, bar := range []*progressbar.ProgressBar{ingestBar, queryBar} {
					if bar != nil {
						bar.Finish() //nolint:errcheck // a bar that fails to draw changes no result
					}
				}
				if err != nil {
					return err
				}
				reports = append(reports, rep)
				if !asJSON {
					rep.WriteText(stdout)
				}
				if outDir != "" {
					paths, err := rep.WriteFiles(outDir)
					if err != nil {
						return err
					}
					if !asJSON {
						fmt.Fprintf(stderr, "wrote %s\n", strings.Join(paths, ", "))
					}
				}
			}
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Reports []*bench.Report `json:"reports"`
				}{reports})
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	fl.StringArrayVar(&datasets, "dataset", nil, "BEIR collection directory, or a name under ../shared/datasets (repeatable)")
	fl.StringVar(&fusion, "fusion", "all", "all, or a comma-separated list of weighted, rrf, semantic_only, keyword_only")
	fl.StringArrayVar(&rankings, "ranking", nil, "ranking overrides to measure, key=value,... (repeatable: one variant each)")
	fl.IntVar(&limitQueries, "limit-queries", 0, "run only the first N judged queries (0: all)")
	fl.IntVar(&parallel, "parallel", 1, "queries in flight at once (latency is per query under this load)")
	fl.StringVar(&project, "project", "", "project key to load into (default beir-<name>)")
	fl.StringVar(&outDir, "out", "", "also write <name>.md, <name>.svg and <name>.json into this directory")
	fl.StringVar(&commit, "commit", "", "source revision to record in the report (default $BENCH_COMMIT)")
	fl.BoolVar(&asJSON, "json", false, "print the reports as JSON")
	return cmd
}

func newBar(total int, desc string) *progressbar.ProgressBar {
	return progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription(desc), progressbar.OptionShowCount(), progressbar.OptionShowIts(),
		progressbar.OptionClearOnFinish())
}

// resolveDataset finds a collection: an existing directory as given, else a name
// under $CANON_DATASETS or ../shared/datasets next to the repository root.
func resolveDataset(arg string) (string, error) {
	if isBEIR(arg) {
		return arg, nil
	}
	var bases []string
	if env := os.Getenv("CANON_DATASETS"); env != "" {
		bases = append(bases, env)
	}
	if root := repoRoot(); root != "" {
		bases = append(bases, filepath.Join(root, "..", "shared", "datasets"))
	}
	bases = append(bases, filepath.Join("..", "shared", "datasets"))
	for _, b := range bases {
		if dir := filepath.Join(b, arg); isBEIR(dir) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("no BEIR collection at %q (want corpus.jsonl, queries.jsonl and qrels/test.tsv; looked in %s)",
		arg, strings.Join(bases, ", "))
}

func isBEIR(dir string) bool {
	for _, f := range []string{"corpus.jsonl", "queries.jsonl", filepath.Join("qrels", "test.tsv")} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}

// repoRoot is the nearest directory upwards holding canon's go.mod, or "".
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/canonkb/canon\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// benchReport is what a `canon bench` subcommand prints and writes.
type benchReport interface {
	WriteMarkdown(io.Writer)
	WriteFiles(dir string) ([]string, error)
}

// printReport prints rep as JSON or Markdown and, with outDir, writes its files.
func printReport(out io.Writer, rep benchReport, asJSON bool, outDir string, logf func(string, ...any)) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		rep.WriteMarkdown(out)
	}
	if outDir != "" {
		paths, err := rep.WriteFiles(outDir)
		if err != nil {
			return err
		}
		logf("wrote %s", strings.Join(paths, ", "))
	}
	return nil
}
