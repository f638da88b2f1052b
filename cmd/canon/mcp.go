package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/canonkb/canon/auth"
	"github.com/canonkb/canon/mcpserver"
)

// apiKeyEnv holds the API key of a `canon mcp` session (over HTTP the key is the
// bearer token of each request).
const apiKeyEnv = "CANON_API_KEY"

func newMCPCmd() *cobra.Command {
	var databaseURL string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the Model Context Protocol over stdio (for Claude Desktop, IDEs and agents)",
		Long: `Serves canon's MCP tools (search, ask, get_document, graph_neighbours, list_projects,
content_gaps, and the lifecycle operations promote, supersede, deprecate, archive,
reject) and the canon://{project}/{slug} document resources over stdin/stdout, for
an MCP client that starts canon as a subprocess. The API key comes from
CANON_API_KEY. Logs go to stderr. The same server answers over Streamable HTTP at
/mcp under ` + "`canon serve`" + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(databaseURL)
			if err != nil {
				return err
			}
			a, err := openApp(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer a.Close()
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			if err := checkSchema(cmd.Context(), a.pool, log); err != nil {
				return err
			}
			a.listen()
			// Over stdio canon holds the database URL, so it runs as the operator
			// like the CLI, unless CANON_API_KEY names a key to act as.
			key := os.Getenv(apiKeyEnv)
			if key != "" {
				if err := checkAPIKey(cmd.Context(), auth.NewStore(a.pool), key); err != nil {
					return err
				}
			}
			return a.mcpServer(log, false).Run(cmd.Context(), &mcpserver.StdioTransport{Logger: log}, key)
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	return cmd
}

// checkAPIKey refuses a session whose key could never authorize a call, before
// the client lists tools that would all fail.
func checkAPIKey(ctx context.Context, store *auth.Store, key string) error {
	_, err := store.Authenticate(ctx, key)
	switch {
	case errors.Is(err, auth.ErrUnknownKey):
		return errors.New(apiKeyEnv + " is unknown: create a key with `canon keys create`, or unset it to act as the operator")
	case errors.Is(err, auth.ErrRevokedKey):
		return errors.New(apiKeyEnv + " is revoked: create a new key with `canon keys create`")
	case err != nil:
		return fmt.Errorf("checking %s: %w", apiKeyEnv, err)
	}
	return nil
}

// buildVersion is the module version the binary was built from ("dev" when unknown).
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// mcpServer is the MCP server over the app's services, for stdio and for /mcp.
// A call that presents an API key acts as it (role, projects, groups); one
// without is refused when keys are required (KB_AUTH=required), else the
// operator's (stdio without CANON_API_KEY, or KB_AUTH=off on loopback).
func (a *app) mcpServer(log *slog.Logger, keysRequired bool) *mcpserver.Server {
	store := auth.NewStore(a.pool)
	authorizer := mcpserver.OptionalKeys(store)
	if keysRequired {
		authorizer = mcpserver.Keys(store)
	}
	return mcpserver.New(mcpserver.Deps{
		Pool: a.pool, Reads: a.reads, Search: a.hierarchy, Chat: a.chat, Logger: log, Version: buildVersion(),
		Authorizer: authorizer, Auditor: store, SessionsPerKey: a.cfg.MCPSessionsPerKey,
	})
}
