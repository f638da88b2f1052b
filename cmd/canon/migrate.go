package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/postgres"
)

func newMigrateCmd() *cobra.Command {
	var databaseURL string
	cmd := &cobra.Command{
		Use:   "migrate up|down|status",
		Short: "Apply, roll back (one step) or list the schema migrations",
		Long: `Runs the goose migrations embedded in the binary against DATABASE_URL.
The embedding dimension of the schema is fixed at migration time by KB_EMBEDDING_DIM
(default 384). KB_VECTOR_TYPE (vector or halfvec) chooses how chunk embeddings are
stored: a new database is migrated with it (vector when unset), and "up" converts an
existing database to it when it is set and differs (the chunks are rewritten and their
HNSW indexes built again: minutes at a million chunks). "up" also builds an index a
killed bulk ingest left deferred. KB_TABLE_LAYOUT (single or partitioned) lays chunks,
postings and lexeme_stats out as one table each or as a partition per project, the same
way: a new database gets it (single when unset), "up" converts an existing one (every
row copied, every index built again).`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"up", "down", "status"},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(databaseURL)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if err := postgres.Migrate(ctx, cfg.DatabaseURL, args[0], postgres.MigrateOptions{Log: cmd.OutOrStdout()}); err != nil {
				return err
			}
			if args[0] != "up" {
				return nil
			}
			// An index a killed bulk load deferred is built here too (see ingest.BulkPolicy).
			pool, err := postgres.Connect(ctx, cfg.DatabaseURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			built, err := ingest.RestoreDeferredIndexes(ctx, pool, bulkPolicy(cfg))
			if len(built) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "built %s, which an interrupted bulk load had left unbuilt\n", strings.Join(ingest.IndexNames(built), ", "))
			}
			if err != nil {
				return err
			}
			if cfg.TableLayout != "" {
				changed, took, err := ingest.SetTableLayout(ctx, pool, cfg.TableLayout, bulkPolicy(cfg))
				if err != nil {
					return err
				}
				if changed {
					fmt.Fprintf(cmd.OutOrStdout(), "chunks, postings and lexeme_stats are now %s (converted, indexes rebuilt, in %s)\n", cfg.TableLayout, took.Round(time.Millisecond))
				}
			}
			if cfg.VectorType == "" {
				return nil
			}
			changed, took, err := ingest.SetVectorType(ctx, pool, cfg.VectorType, bulkPolicy(cfg))
			if changed {
				fmt.Fprintf(cmd.OutOrStdout(), "chunks.embedding is now %s (converted, indexes rebuilt, in %s)\n", cfg.VectorType, took.Round(time.Millisecond))
			}
			return err
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	return cmd
}
