package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/canonkb/canon/convert"
	"github.com/canonkb/canon/ingest"
)

func newIngestCmd() *cobra.Command {
	var (
		databaseURL, project, lang string
		prune, asJSON, watch       bool
		debounce                   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "ingest DIR... --project KEY",
		Short: "Load documents into a project (idempotent; --watch keeps it in step)",
		Long: `Reads every file canon ingests under each DIR (` + strings.Join(convert.Extensions(), ", ") + `;
hidden folders skipped) with its sidecar <file>.meta.yaml, validates it, and stores what
changed: an unchanged file costs one read and no writes. A file that fails is reported
as path:line: reason (or path: reason) and skipped; the run completes and exits with
status 1. A frontmatter or sidecar "project:" overrides --project.

Each document is analysed in its language (stemming, stop words): a frontmatter "lang:"
(ISO 639-1), else the project's (--language, stored on the project for later runs), else
the language detected in its text, else English.

--watch ingests, then watches the folders and ingests again after each burst of changes
(debounced), deleting the documents of removed files (it implies --prune), until
interrupted (Ctrl-C, SIGTERM); stopping at any moment leaves every document either as
it was or as its file now is.

--prune over folders that hold no document is refused (it would empty the project), and
a watch whose folders empty prunes nothing until files are back.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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
			if watch {
				return a.ingester.Watch(cmd.Context(), args, ingest.WatchOptions{Project: project, Language: lang, Debounce: debounce,
					OnRun: func(res ingest.Result, err error) {
						if err != nil {
							fmt.Fprintln(cmd.ErrOrStderr(), "canon: watch:", err)
							return
						}
						printIngest(cmd, res, asJSON) //nolint:errcheck // a report that cannot be printed must not stop the watch
					}})
			}
			files, err := ingest.ReadDirs(args)
			if err != nil {
				return err
			}
			opts := ingest.Options{Project: project, Language: lang, Prune: prune}
			var bar *progressbar.ProgressBar
			if !asJSON && term.IsTerminal(int(os.Stderr.Fd())) {
				bar = progressbar.NewOptions(len(files), progressbar.OptionSetWriter(os.Stderr),
					progressbar.OptionSetDescription("ingest"), progressbar.OptionShowCount(),
					progressbar.OptionClearOnFinish())
				opts.Progress = func(done, _ int) { bar.Set(done) } //nolint:errcheck // the progress bar is cosmetic
			}
			res, err := a.ingester.Ingest(cmd.Context(), files, opts)
			if bar != nil {
				bar.Finish() //nolint:errcheck // the progress bar is cosmetic
			}
			if err != nil {
				return err
			}
			if err := printIngest(cmd, res, asJSON); err != nil {
				return err
			}
			if len(res.Errors) > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("%d files failed", len(res.Errors))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	cmd.Flags().StringVarP(&project, "project", "p", "", "project key for files whose metadata names none (required)")
	cmd.Flags().StringVar(&lang, "language", "", "ISO 639-1 language of the project's documents that declare no lang: (stored on the project; default: detect)")
	cmd.Flags().BoolVar(&prune, "prune", false, "delete the project's documents whose files are gone (refused when the folders hold no document)")
	cmd.Flags().BoolVar(&watch, "watch", false, "keep ingesting as the folders change, until interrupted (implies --prune)")
	cmd.Flags().DurationVar(&debounce, "debounce", ingest.DefaultDebounce, "with --watch: quiet time after a change before ingesting")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON (with --watch, one object per run)")
	return cmd
}

// printIngest reports a run: its errors and notices on stderr and a summary
// line, or the result as JSON.
func printIngest(cmd *cobra.Command, res ingest.Result, asJSON bool) error {
	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	for _, e := range res.Errors {
		fmt.Fprintln(cmd.ErrOrStderr(), e.Error())
	}
	for _, n := range res.Notices {
		fmt.Fprintln(cmd.ErrOrStderr(), "note:", n)
	}
	_, err := fmt.Fprintf(out, "ingested %d files: %d created, %d updated, %d unchanged, %d pruned, %d chunks, %d errors in %s\n",
		res.Files, res.Created, res.Updated, res.Unchanged, res.Pruned, res.Chunks, len(res.Errors),
		res.Elapsed.Round(1e6))
	return err
}
