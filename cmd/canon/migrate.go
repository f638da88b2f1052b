package main

import (
	"github.com/spf13/cobra"

	"github.com/canonkb/canon/postgres"
)

func newMigrateCmd() *cobra.Command {
	var databaseURL string
	cmd := &cobra.Command{
		Use:   "migrate up|down|status",
		Short: "Apply, roll back (one step) or list the schema migrations",
		Long: `Runs the goose migrations embedded in the binary against DATABASE_URL.
The embedding dimension of the schema is fixed at migration time by KB_EMBEDDING_DIM
(default 384).`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"up", "down", "status"},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(databaseURL)
			if err != nil {
				return err
			}
			return postgres.Migrate(cmd.Context(), cfg.DatabaseURL, args[0], postgres.MigrateOptions{Log: cmd.OutOrStdout()})
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	return cmd
}
