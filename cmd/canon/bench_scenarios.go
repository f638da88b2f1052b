package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/canonkb/canon/bench"
	"github.com/canonkb/canon/chat"
	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/llm"
)

func newBenchScenariosCmd() *cobra.Command {
	var (
		databaseURL        string
		gate, asJSON, verb bool
	)
	cmd := &cobra.Command{
		Use:   "scenarios FILE.yaml [--gate] [--json]",
		Short: "Run a scenario file: questions with expectations about ranking, graph, refusals",
		Long: `Loads the file's corpus into projects of its own (every project key, including
those named by a file's project: frontmatter, gets the file's project_prefix, so the
suite never touches other data in the database; idempotent: an unchanged corpus
writes nothing), then runs each scenario through canon's search and, for refusal
and answer expectations, through the chat turn with the extractive provider (no
network) and the configured refusal gate.

Reports nDCG@5 (graded by the listed relevant documents), MRR, refusal accuracy,
graph recall (expected expanded documents found), rejected recall and the pass rate;
for answer expectations, fact recall, citation precision and recall (markers mapped
to documents through the response's citations) and the fragment and duplicate rates
of the answers' sentences. A file with compare_hierarchy: true runs every question
flat and two-pass and reports P@5, nDCG@10 and the two-pass/flat decision accuracy
of each, by what the question is about (person, team, project; none for controls).
--gate exits with status 1 when a metric misses the file's
threshold. Scenarios marked pending run and are reported but count toward no metric.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := bench.LoadScenarios(args[0])
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
			if f.Today != "" {
				today, _ := time.Parse(time.DateOnly, f.Today) // validated by LoadScenarios
				a.searcher.Today = func() time.Time { return today }
			}
			prompt, err := domain.ParsePrompt(domain.DefaultPromptTemplate())
			if err != nil {
				return err
			}
			// The extractive provider whatever KB_LLM_PROVIDER says: the suite
			// measures retrieval and the gate, offline, and logs nothing.
			// Retrieval as served: the two-pass searcher (over a.searcher, so the
			// pinned date above applies), for searches and chat turns alike.
			asker := chat.New(a.hierarchy, llm.NewExtractive(), prompt, nil, chat.Config{
				Gate:             domain.Gate{MinSimilarity: cfg.RefusalMinSimilarity, MinKeywordCoverage: cfg.RefusalMinKeywordCoverage},
				SupportThreshold: cfg.CitationSupportThreshold,
				MaxTokens:        cfg.LLMMaxTokens,
			})
			rep, err := bench.RunScenarios(cmd.Context(), f, bench.ScenarioSetup{
				Ingester: a.ingester, Searcher: a.hierarchy, Chat: asker,
				Embedder: fmt.Sprintf("%s/%d", a.embedder.Name(), a.embedder.Dim()), Profile: cfg.Profile(),
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				rep.WriteText(out, verb)
			}
			if gate && !rep.GatePassed() {
				return fmt.Errorf("scenario gate failed: %d threshold(s) missed", len(rep.GateFail))
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	fl.BoolVar(&gate, "gate", false, "exit with status 1 when a metric is below the file's gate thresholds")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fl.BoolVarP(&verb, "verbose", "v", false, "print each scenario's ranking and graph sections")
	return cmd
}
