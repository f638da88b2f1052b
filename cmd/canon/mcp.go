package main

import (
	"context"
	"errors"

	"connectrpc.com/connect"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

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
			// Over stdio canon runs as the operator, like the CLI: it holds the database URL.
			return a.mcpServer(log, false).Run(cmd.Context(), &mcp.StdioTransport{}, os.Getenv(apiKeyEnv))
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	return cmd
}

// buildVersion is the module version the binary was built from ("dev" when unknown).
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// mcpServer is the MCP server over the app's services, for stdio and for /mcp.
// With keys required, /mcp refuses every tool: its tools do not yet scope a call
// to the key's projects and groups, so only the operator's path (stdio, or
// KB_AUTH=off on loopback) may use them.
func (a *app) mcpServer(log *slog.Logger, keysRequired bool) *mcpserver.Server {
	authorizer := mcpserver.OpenAccess
	if keysRequired {
		authorizer = mcpserver.AuthorizerFunc(func(context.Context, string) (mcpserver.Principal, error) {
			return mcpserver.Principal{}, connect.NewError(connect.CodePermissionDenied, errMCPNeedsOperator)
		})
	}
	return mcpserver.New(mcpserver.Deps{
		Pool: a.pool, Search: a.hierarchy, Chat: a.chat, Logger: log, Version: buildVersion(),
		Authorizer: authorizer,
	})
}

var errMCPNeedsOperator = errors.New("MCP over HTTP is not available with KB_AUTH=required yet " +
	"(its tools are not scoped to a key's projects and groups); run `canon mcp` over stdio as the operator instead")
