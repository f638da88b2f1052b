package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/canonkb/canon/bench"
	"github.com/canonkb/canon/markdown"
)

func newBenchIngestCmd() *cobra.Command {
	var (
		databaseURL, database, outDir, vocabDir, commit string
		chunks                                          int
		seed                                            uint64
		change                                          float64
		asJSON                                          bool
	)
	cmd := &cobra.Command{
		Use:   "ingest [--chunks 100000] [--change 0.01] [--database canon_ingest] [--out DIR]",
		Short: "Ingest throughput: a first (bulk) load of the synthetic corpus, then a 1% change",
		Long: `Drops and creates --database on the server of DATABASE_URL (never the database DATABASE_URL
names), loads the synthetic corpus of --chunks chunks (bench/synth.go, as the latency bench
does) through canon's ingest path, and times it, the vector index build included: with
the default KB_INGEST_BULK_* settings an empty database takes it as a bulk load. Then it
ingests the same files again with --change of the documents carrying a paragraph more
(the others are skipped by their hash) and times that. Reports chunks/s and the seconds
of each step; --out writes ingest.json and ingest.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, err := loadConfig(databaseURL)
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			logf := func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
			if vocabDir == "" {
				vocabDir = filepath.Join(repoRoot(), "examples", "handbook")
			}
			vocab, err := bench.HandbookVocabulary(vocabDir)
			if err != nil {
				return fmt.Errorf("vocabulary from %s: %w", vocabDir, err)
			}
			url, err := bench.EnsureLatencyDatabase(ctx, cfg.DatabaseURL, database, true, 8)
			if err != nil {
				return err
			}
			cfg.DatabaseURL = url
			a, err := openApp(ctx, cfg)
			if err != nil {
				return err
			}
			defer a.Close()
			if commit == "" {
				commit = os.Getenv("BENCH_COMMIT")
			}
			rep, err := bench.IngestThroughput(ctx, bench.LatencySetup{
				Pool: a.pool, Ingester: a.ingester, Embedder: a.embedder, Commit: commit,
				Chunking: markdown.Options{ChunkTokens: cfg.ChunkTokens, OverlapTokens: cfg.ChunkOverlap},
			}, bench.IngestOptions{Chunks: chunks, Seed: seed, Vocabulary: vocab, Change: change, Log: logf})
			if err != nil {
				return err
			}
			if err := printReport(cmd.OutOrStdout(), rep, asJSON, outDir, logf); err != nil {
				return err
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&databaseURL, "database-url", "", "PostgreSQL URL of the server (default $DATABASE_URL); the bench uses its own database there")
	fl.StringVar(&database, "database", "canon_ingest", "database to drop, create and load (nothing else may be in it)")
	fl.IntVar(&chunks, "chunks", 100000, "chunks in the synthetic corpus")
	fl.Uint64Var(&seed, "seed", 1, "generator seed")
	fl.Float64Var(&change, "change", 0.01, "fraction of the documents the second run changes")
	fl.StringVar(&vocabDir, "vocabulary", "", "Markdown directory whose words seed the vocabulary (default examples/handbook)")
	fl.StringVar(&outDir, "out", "", "write ingest.json and ingest.md into this directory")
	fl.StringVar(&commit, "commit", "", "source revision to record (default $BENCH_COMMIT)")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
