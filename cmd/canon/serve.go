package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/canonkb/canon/server"
)

func newServeCmd() *cobra.Command {
	var databaseURL, addr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the Connect/gRPC/gRPC-web API (loopback only unless told otherwise)",
		Long: `Serves SearchService, IngestService and ProjectService over Connect, gRPC and
gRPC-web on one port, plus gRPC health, reflection, GET /healthz and the Model Context
Protocol (Streamable HTTP) at /mcp (bearer key per request). It listens on
127.0.0.1:8787 unless --addr or KB_LISTEN_ADDR says otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(databaseURL)
			if err != nil {
				return err
			}
			if addr != "" {
				cfg.ListenAddr = addr
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			a, err := openApp(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer a.Close()
			var lc net.ListenConfig
			ln, err := lc.Listen(cmd.Context(), "tcp", cfg.ListenAddr)
			if err != nil {
				return err
			}
			srv := server.NewHTTPServer(cfg.ListenAddr, server.Handler(server.Deps{
				Pool: a.pool, Searcher: a.searcher, SearchService: a.hierarchy, Ingester: a.ingester, Chat: a.chat, Logger: log,
				MCP: a.mcpServer(log).HTTPHandler(),
			}))
			log.Info("canon listening", "addr", "http://"+ln.Addr().String(), "embedder", a.embedder.Name(),
				"profile", cfg.Profile())
			fmt.Fprintf(cmd.OutOrStdout(), "canon listening on http://%s\n", ln.Addr())
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			select {
			case err := <-errc:
				return err
			case <-cmd.Context().Done():
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			log.Info("canon stopped")
			return nil
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	cmd.Flags().StringVar(&addr, "addr", "", "listen address (default $KB_LISTEN_ADDR or 127.0.0.1:8787)")
	return cmd
}
