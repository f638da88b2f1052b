package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/canonkb/canon/ingest"
)

func newIngestCmd() *cobra.Command {
	var (
		databaseURL, project string
		prune, asJSON        bool
	)
	cmd := &cobra.Command{
		Use:   "ingest DIR... --project KEY",
		Short: "Load Markdown files into a project (idempotent)",
		Long: `Reads every .md file under each DIR (hidden folders skipped), validates its
frontmatter, and stores what changed: an unchanged file costs one read and no writes.
A file that fails validation is reported as path:line: reason and skipped; the run
completes and exits with status 1. A frontmatter "project:" overrides --project.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if project == "" {
				return fmt.Errorf("--project is required")
			}
			cfg, err := loadConfig(databaseURL)
			if err != nil {
				return err
			}
			files, err := ingest.ReadDirs(args)
			if err != nil {
				return err
			}
			a, err := openApp(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer a.Close()
			opts := ingest.Options{Project: project, Prune: prune}
			var bar *progressbar.ProgressBar
			if !asJSON && term.IsTerminal(int(os.Stderr.Fd())) {
				bar = progressbar.NewOptions(len(files), progressbar.OptionSetWriter(os.Stderr),
					progressbar.OptionSetDescription("ingest"), progressbar.OptionShowCount(),
					progressbar.OptionClearOnFinish())
				opts.Progress = func(done, _ int) { bar.Set(done) } //nolint:errcheck
			}
			res, err := a.ingester.Ingest(cmd.Context(), files, opts)
			if bar != nil {
				bar.Finish() //nolint:errcheck
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return err
				}
			} else {
				for _, e := range res.Errors {
					fmt.Fprintln(cmd.ErrOrStderr(), e.Error())
				}
				for _, n := range res.Notices {
					fmt.Fprintln(cmd.ErrOrStderr(), "note:", n)
				}
				fmt.Fprintf(out, "ingested %d files: %d created, %d updated, %d unchanged, %d pruned, %d chunks, %d errors in %s\n",
					res.Files, res.Created, res.Updated, res.Unchanged, res.Pruned, res.Chunks, len(res.Errors),
					res.Elapsed.Round(1e6))
			}
			if len(res.Errors) > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("%d files failed", len(res.Errors))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	cmd.Flags().StringVarP(&project, "project", "p", "", "project key for files whose frontmatter names none (required)")
	cmd.Flags().BoolVar(&prune, "prune", false, "delete the project's documents whose files are gone")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
