package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/canonkb/canon/auth"
	"github.com/canonkb/canon/domain"
)

// cliRPC names the CLI's key operations in the audit log.
const cliRPC = "cli/keys "

func newKeysCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Create, list and revoke API keys (the operator's path, straight to the database)",
		Long: `API keys authenticate requests to canon serve when KB_AUTH=required. A key is
shown once, when created; the database keeps only its SHA-256 hash.`,
	}
	cmd.AddCommand(newKeysCreateCmd(), newKeysListCmd(), newKeysRevokeCmd())
	return cmd
}

func newKeysCreateCmd() *cobra.Command {
	var (
		databaseURL string
		req         auth.NewKeyRequest
		asJSON      bool
	)
	cmd := &cobra.Command{
		Use:   "create --project KEY [--project KEY2] --role reader|editor|admin [--group G ...] [--name N]",
		Short: "Create a key and print it once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pool, err := openPool(cmd.Context(), databaseURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			store := auth.NewStore(pool)
			key, info, err := store.Create(cmd.Context(), req)
			outcome := "ok"
			if err != nil {
				outcome = "invalid_argument"
			}
			if aerr := store.Audit(cmd.Context(), auth.AuditEntry{Principal: domain.Operator(), RPC: cliRPC + "create",
				Project: strings.Join(req.Projects, ","), Document: info.ID, Outcome: outcome}); aerr != nil {
				return aerr
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, struct {
					Key string `json:"key"`
					auth.KeyInfo
				}{key, info})
			}
			fmt.Fprintf(out, "%s\n\nid %s · %s · projects %s · groups %s\n", key, info.ID, info.Role,
				strings.Join(info.Projects, ","), strings.Join(info.Groups, ","))
			fmt.Fprintln(cmd.ErrOrStderr(), "Store this key now: it is not shown again. Send it as 'Authorization: Bearer <key>'.")
			// Unlike the API, the operator may make a key before the project's
			// first ingest (an editor key for the job that will create it).
			unknown, err := store.UnknownProjects(cmd.Context(), info.Projects)
			if err != nil {
				return err
			}
			for _, p := range unknown {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: project %q does not exist yet: the key covers it once an ingest creates it\n", p)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	cmd.Flags().StringArrayVar(&req.Projects, "project", nil, "a project the key may use (repeat for more)")
	cmd.Flags().StringVar(&req.Role, "role", "", "reader (search, chat, gaps, graph), editor (+ ingest, lifecycle) or admin (+ keys)")
	cmd.Flags().StringArrayVar(&req.Groups, "group", nil, "a group the key belongs to, for document access lists (repeat for more)")
	cmd.Flags().StringVar(&req.Name, "name", "", "a name for lists and the audit log")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"key": ..., "id": ..., ...}`)
	return cmd
}

func newKeysListCmd() *cobra.Command {
	var (
		databaseURL string
		asJSON      bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List keys (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pool, err := openPool(cmd.Context(), databaseURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			keys, err := auth.NewStore(pool).List(cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, keys)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tPREFIX\tNAME\tROLE\tPROJECTS\tGROUPS\tCREATED\tLAST USED\tREVOKED")
			for _, k := range keys {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Prefix, k.Name, k.Role,
					strings.Join(k.Projects, ","), strings.Join(k.Groups, ","), k.CreatedAt.UTC().Format(time.RFC3339),
					timeOrDash(k.LastUsedAt), timeOrDash(k.RevokedAt))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func newKeysRevokeCmd() *cobra.Command {
	var databaseURL string
	cmd := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a key: its next request is refused",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pool, err := openPool(cmd.Context(), databaseURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			store := auth.NewStore(pool)
			k, err := store.Revoke(cmd.Context(), args[0])
			outcome := "ok"
			if err != nil {
				outcome = "not_found"
			}
			if aerr := store.Audit(cmd.Context(), auth.AuditEntry{Principal: domain.Operator(), RPC: cliRPC + "revoke",
				Project: strings.Join(k.Projects, ","), Document: args[0], Outcome: outcome}); aerr != nil {
				return aerr
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s (%s, %s)\n", k.ID, k.Prefix, k.Name)
			return nil
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	return cmd
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
