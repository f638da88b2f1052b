package main

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/canonkb/canon/bench"
	"github.com/canonkb/canon/domain"
)

func newBenchRefusalCmd() *cobra.Command {
	var (
		databaseURL, dataset, project string
		limitQueries                  int
		asJSON                        bool
	)
	cmd := &cobra.Command{
		Use:   "refusal --dataset DIR|NAME",
		Short: "Refusal accuracy of the chat gate: a collection's test queries vs off-topic questions",
		Long: `Loads a BEIR collection (as bench quality does), then measures the evidence the chat
refusal gate sees (best raw cosine and best keyword coverage among the primary hits) for
its judged test queries, which the corpus answers, and for off-topic questions, which it
does not. Prints the accuracy of the configured gate (KB_REFUSAL_MIN_SIMILARITY,
KB_REFUSAL_MIN_KEYWORD_COVERAGE) and the best thresholds of a sweep.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := resolveDataset(dataset)
			if err != nil {
				return err
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
			ds, err := bench.Load(dir)
			if err != nil {
				return err
			}
			if project == "" {
				project = bench.ProjectKey(ds.Name)
			}
			if _, err := bench.Ingest(cmd.Context(), a.ingester, ds, project, nil); err != nil {
				return err
			}
			var questions []string
			for i, id := range ds.TestQueries {
				if limitQueries > 0 && i == limitQueries {
					break
				}
				questions = append(questions, ds.Queries[id])
			}
			pos, err := bench.RefusalEvidence(cmd.Context(), a.searcher, project, questions, true)
			if err != nil {
				return err
			}
			neg, err := bench.RefusalEvidence(cmd.Context(), a.searcher, project, bench.OffTopicQuestions(), false)
			if err != nil {
				return err
			}
			points := slices.Concat(pos, neg)
			configured := bench.ScoreGate(points, domain.Gate{MinSimilarity: cfg.RefusalMinSimilarity, MinKeywordCoverage: cfg.RefusalMinKeywordCoverage})
			grid := []float64{0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 1.01}
			sweep := bench.SweepGate(points, grid, grid)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"dataset": ds.Name, "configured": configured, "sweep": sweep[:min(10, len(sweep))], "points": points})
			}
			bench.WriteRefusalText(cmd.OutOrStdout(), ds.Name, configured, sweep)
			fmt.Fprintln(cmd.OutOrStdout())
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	fl.StringVar(&dataset, "dataset", "scifact", "BEIR collection directory, or a name under ../shared/datasets")
	fl.StringVar(&project, "project", "", "project key (default beir-<name>)")
	fl.IntVar(&limitQueries, "limit-queries", 300, "judged queries to use as answerable questions (0: all)")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
