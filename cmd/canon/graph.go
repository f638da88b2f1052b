package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/canonkb/canon/lifecycle"
	"github.com/canonkb/canon/server"
)

func newGraphCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "graph",
		Short: "Inspect the knowledge graph (canonical documents and their typed edges)",
	}
	cmd.AddCommand(newGraphShowCmd())
	return cmd
}

func newGraphShowCmd() *cobra.Command {
	var (
		databaseURL, project string
		asJSON               bool
	)
	cmd := &cobra.Command{
		Use:   "show SLUG --project KEY",
		Short: "List a document's neighbours: edge types, weights, directions, provenance",
		Long: `Lists every edge on a document, both directions, strongest first. "outgoing" is
SLUG -> neighbour, "incoming" neighbour -> SLUG. Search expansion follows the
same edges (one hop, restricted to KB_GRAPH_EXPANSION_EDGE_TYPES).`,
		Example: "canon graph show dec-cache-v2 --project platform",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pool, err := openPool(cmd.Context(), databaseURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			g, err := lifecycle.New(pool).Graph(cmd.Context(), project, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), server.GraphProto(g))
			}
			return printGraph(cmd.OutOrStdout(), g)
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	cmd.Flags().StringVarP(&project, "project", "p", "", "project key (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as protobuf JSON")
	cobra.CheckErr(cmd.MarkFlagRequired("project"))
	return cmd
}

func printGraph(w io.Writer, g lifecycle.Graph) error {
	fmt.Fprintf(w, "%s · %s · %s\n", g.Slug, stateString(g.State), g.Title)
	if len(g.SupersededBy) > 0 {
		says := ""
		if g.DeclaredStatus != g.State.Status {
			says = fmt.Sprintf(" (its own status: %s)", g.DeclaredStatus)
		}
		fmt.Fprintf(w, "superseded by %s%s\n", strings.Join(g.SupersededBy, ", "), says)
	}
	if g.State.CanonicalType == "" {
		fmt.Fprintln(w, "raw document: not a graph node (canon canon promote makes it one)")
		return nil
	}
	if len(g.Neighbours) == 0 {
		fmt.Fprintln(w, "no edges")
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DIRECTION\tEDGE\tWEIGHT\tNEIGHBOUR\tTYPE/STATUS\tPROVENANCE")
	for _, n := range g.Neighbours {
		arrow := "->"
		if n.Direction == "incoming" {
			arrow = "<-"
		}
		prov := n.Provenance
		if n.DeclaredBy != "" {
			prov += " (" + n.DeclaredBy + ")"
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%.2f\t%s\t%s/%s\t%s\n", arrow, n.Direction, n.EdgeType, n.Weight, n.Slug,
			n.CanonicalType, n.Status, prov)
	}
	return tw.Flush()
}
