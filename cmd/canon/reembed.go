package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newReembedCmd() *cobra.Command {
	var (
		databaseURL, project string
		asJSON               bool
	)
	cmd := &cobra.Command{
		Use:   "reembed --project KEY",
		Short: "Embed a project's chunks and entities again with the configured embedder",
		Long: `After changing the embedder (KB_EMBEDDER, KB_EMBEDDING_MODEL, ...), makes every vector of a
project again with it, a batch of documents per transaction. Search keeps answering during
the run (restart canon serve with the new settings afterwards, so questions are embedded
the same way). A stopped run resumes where it was: each document records the embedder
that made its vectors, and documents already done are skipped (so is everything, by a
later canon ingest with the same settings).

The vector dimension is fixed when the schema is migrated: an embedder of another
dimension is refused, with how to migrate.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if project == "" {
				return fmt.Errorf("--project is required")
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
			var bar *progressbar.ProgressBar
			var progress func(done, total int)
			if !asJSON && term.IsTerminal(int(os.Stderr.Fd())) {
				progress = func(done, total int) {
					if bar == nil {
						bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr),
							progressbar.OptionSetDescription("reembed"), progressbar.OptionShowCount(),
							progressbar.OptionClearOnFinish())
					}
					bar.Set(done) //nolint:errcheck // the progress bar is cosmetic
				}
			}
			res, err := a.ingester.Reembed(cmd.Context(), project, progress)
			if bar != nil {
				bar.Finish() //nolint:errcheck // the progress bar is cosmetic
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			fmt.Fprintf(out, "re-embedded %d documents (%d chunks, %d entities) with %s in %s",
				res.Documents, res.Chunks, res.Entities, a.embedder.Name(), res.Elapsed.Round(1e6))
			if res.Skipped > 0 {
				fmt.Fprintf(out, "; %d replaced by an ingest meanwhile", res.Skipped)
			}
			fmt.Fprintln(out)
			if res.Remaining > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("%d documents were re-ingested with another embedder during the run: run canon reembed again", res.Remaining)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	cmd.Flags().StringVarP(&project, "project", "p", "", "project key (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
