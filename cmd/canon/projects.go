package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/project"
	"github.com/canonkb/canon/server"
)

func newProjectsCmd() *cobra.Command {
	var (
		databaseURL string
		asJSON      bool
	)
	cmd := &cobra.Command{
		Use:   "projects",
		Short: "List projects with their document, chunk and entity counts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(databaseURL)
			if err != nil {
				return err
			}
			pool, err := postgres.Connect(cmd.Context(), cfg.DatabaseURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			list, err := project.List(cmd.Context(), pool)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, server.ProjectsResponse(list))
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "PROJECT\tDOCUMENTS\tCANONICAL\tENTITIES\tCHUNKS")
			for _, p := range list {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", p.Key, p.Documents, p.CanonicalDocuments, p.Entities, p.Chunks)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as protobuf JSON")
	return cmd
}
