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

	"github.com/canonkb/canon/auth"
	"github.com/canonkb/canon/server"
)

func newServeCmd() *cobra.Command {
	var databaseURL, addr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the Connect/gRPC/gRPC-web API (loopback only unless told otherwise)",
		Long: `Serves SearchService, IngestService and ProjectService over Connect, gRPC and
gRPC-web on one port, plus gRPC health, reflection, GET /healthz and the Model Context
Protocol (Streamable HTTP) at /mcp. It listens on 127.0.0.1:8787 unless --addr or
KB_LISTEN_ADDR says otherwise. With KB_AUTH=required every route but /healthz and
/metrics needs 'Authorization: Bearer <key>' (canon keys create); KB_AUTH=off (the
default) is allowed on loopback only.`,
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
			if err := checkExposure(cfg.ListenAddr, cfg.Auth); err != nil {
				return err
			}
			a, err := openApp(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer a.Close()
			ln, err := net.Listen("tcp", cfg.ListenAddr)
			if err != nil {
				return err
			}
			srv := server.NewHTTPServer(cfg.ListenAddr, server.Handler(server.Deps{
				Pool: a.pool, Searcher: a.searcher, SearchService: a.hierarchy, Ingester: a.ingester, Chat: a.chat, Logger: log,
				MCP: a.mcpServer(log, cfg.Auth == "required").HTTPHandler(),
				Auth: auth.Config{Required: cfg.Auth == "required", RatePerSecond: cfg.RateLimit, Burst: cfg.RateBurst,
					MaxStreamsPerKey: cfg.MaxStreamsPerKey},
			}))
			if cfg.Auth == "off" {
				log.Warn("KB_AUTH=off: every request acts as the operator, with no key (allowed on loopback only); " +
					"set KB_AUTH=required and create keys with canon keys create before exposing canon")
			}
			log.Info("canon listening", "addr", "http://"+ln.Addr().String(), "auth", cfg.Auth, "embedder", a.embedder.Name(),
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

// checkExposure refuses to serve without authentication on anything but loopback.
func checkExposure(addr, mode string) error {
	if mode == "off" && !auth.Loopback(addr) {
		return fmt.Errorf("refusing to listen on %s with KB_AUTH=off: anyone who reaches it could read and change "+
			"every project. Set KB_AUTH=required and create keys with 'canon keys create --project P --role reader', "+
			"or listen on loopback (--addr 127.0.0.1:8787)", addr)
	}
	return nil
}
