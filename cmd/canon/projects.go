package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/canonkb/canon/domain"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/postgres"
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
			viewer := domain.PrincipalFrom(cmd.Context())
			rows, err := db.New(pool).ProjectList(cmd.Context(), db.ProjectListParams{AllProjects: viewer.AllProjects,
				ProjectKeys: append([]string{}, viewer.Projects...), AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups()})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				res := &canonv1.ListProjectsResponse{}
				for _, r := range rows {
					res.Projects = append(res.Projects, &canonv1.Project{ProjectKey: r.ProjectKey,
						Documents: r.Documents, Chunks: r.Chunks, CanonicalDocuments: r.CanonicalDocuments, Entities: r.Entities})
				}
				return printJSON(out, res)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "PROJECT\tDOCUMENTS\tCANONICAL\tENTITIES\tCHUNKS")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", r.ProjectKey, r.Documents, r.CanonicalDocuments, r.Entities, r.Chunks)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as protobuf JSON")
	return cmd
}
