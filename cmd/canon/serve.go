package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/canonkb/canon/auth"
	"github.com/canonkb/canon/config"
	"github.com/canonkb/canon/server"
	"github.com/canonkb/canon/telemetry"
)

// version is canon's version and revision its source's commit, set at link time
// (-ldflags "-X main.version=... -X main.revision=..."; make build sets the
// revision, which GOFLAGS=-buildvcs=false keeps Go from stamping).
var version, revision = "dev", ""

// shutdownGrace is how long handlers get to return once the shutdown deadline
// has cancelled them.
const shutdownGrace = 5 * time.Second

func newServeCmd() *cobra.Command {
	var databaseURL, addr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the Connect/gRPC/gRPC-web API (loopback only unless told otherwise)",
		Long: `Serves SearchService, IngestService and ProjectService over Connect, gRPC and
gRPC-web on one port, plus gRPC health, reflection, GET /healthz, GET /metrics
(Prometheus) and the Model Context Protocol (Streamable HTTP) at /mcp. It listens on
127.0.0.1:8787 unless --addr or KB_LISTEN_ADDR says otherwise. With KB_AUTH=required
every route but /healthz, /metrics and the web app's files needs 'Authorization:
Bearer <key>' (canon keys create); KB_AUTH=off (the default) is allowed on loopback
only. Traces go to an OTLP/HTTP collector when OTEL_EXPORTER_OTLP_ENDPOINT is set.
On SIGTERM or SIGINT it stops accepting, lets requests in flight finish for
KB_SHUTDOWN_TIMEOUT (10s), ends what is left with "the server is shutting down;
ask again" (Unavailable), flushes the chat log and exits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(databaseURL)
			if err != nil {
				return err
			}
			if addr != "" {
				cfg.ListenAddr = addr
			}
			if err := checkExposure(cfg.ListenAddr, cfg.Auth); err != nil {
				return err
			}
			log, err := telemetry.NewLogger(cfg.LogFormat, os.Stderr, slog.LevelInfo,
				cfg.LLMAPIKey, cfg.EmbeddingAPIKey)
			if err != nil {
				return err
			}
			slog.SetDefault(log)
			return serve(cmd.Context(), cfg.ListenAddr, cfg, log, func(a net.Addr) {
				fmt.Fprintf(cmd.OutOrStdout(), "canon listening on http://%s\n", a)
			})
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	cmd.Flags().StringVar(&addr, "addr", "", "listen address (default $KB_LISTEN_ADDR or 127.0.0.1:8787)")
	return cmd
}

// checkExposure refuses an address that is not host:port, then serving without
// authentication on anything but loopback.
func checkExposure(addr, mode string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		why := err.Error()
		var ae *net.AddrError
		if errors.As(err, &ae) {
			why = ae.Err
		}
		return fmt.Errorf("listen address %q (KB_LISTEN_ADDR or --addr): %s; use host:port, e.g. 127.0.0.1:8787", addr, why)
	}
	if mode == "off" && !auth.Loopback(addr) {
		return fmt.Errorf("refusing to listen on %s with KB_AUTH=off: anyone who reaches it could read and change "+
			"every project. Set KB_AUTH=required and create keys with 'canon keys create --project P --role reader', "+
			"or listen on loopback (--addr 127.0.0.1:8787)", addr)
	}
	return nil
}

// serve runs canon on addr until ctx ends, then shuts down in order: the server
// (in-flight requests get cfg.ShutdownTimeout), the chat log, traces, the pool.
func serve(ctx context.Context, addr string, cfg config.Config, log *slog.Logger, listening func(net.Addr)) error {
	tp, stopTracing, err := telemetry.StartTracing(ctx, version, log)
	if err != nil {
		return err
	}
	obs := observability{metrics: telemetry.NewMetrics(version, revision), log: log}
	if tp != nil {
		obs.tracer = tp
	}
	a, err := openObservedApp(ctx, cfg, obs)
	if err == nil {
		if err = checkSchema(ctx, a.pool, log); err != nil {
			a.Close()
		}
	}
	if err != nil {
		stopTracing(context.Background()) //nolint:errcheck // nothing was traced yet
		return err
	}
	defer func() {
		a.Close()
		flush, cancel := context.WithTimeout(context.Background(), chatLogFlushTimeout)
		defer cancel()
		if err := stopTracing(flush); err != nil {
			log.Warn("flushing traces failed", "err", err)
		}
		log.Info("canon stopped", "chat_log_written", a.chatLog.Stats().Written,
			"chat_log_dropped", a.chatLog.Stats().Dropped)
	}()
	a.listen()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	srv := server.NewServer(addr, server.Deps{
		Pool: a.pool, Reads: a.reads, Searcher: a.searcher, SearchService: a.hierarchy, Ingester: a.ingester, Chat: a.chat,
		Logger: log, Metrics: obs.metrics, TracerProvider: obs.tracer,
		MCP: a.mcpServer(log, cfg.Auth == "required").HTTPHandler(),
		Auth: auth.Config{Required: cfg.Auth == "required", RatePerSecond: cfg.RateLimit, Burst: cfg.RateBurst,
			MaxStreamsPerKey: cfg.MaxStreamsPerKey, AllowedHosts: cfg.AllowedHosts},
	})
	if cfg.Auth == "off" {
		log.Warn("KB_AUTH=off: every request without a key acts as the operator (allowed on loopback only); " +
			"set KB_AUTH=required and create keys with canon keys create before exposing canon")
	}
	log.Info("canon listening", "addr", "http://"+ln.Addr().String(), "embedder", a.embedder.Name(),
		"profile", cfg.Profile(), "auth", cfg.Auth, "tracing", tp != nil)
	if listening != nil {
		listening(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("canon shutting down", "in_flight", srv.InFlight(), "timeout", cfg.ShutdownTimeout.String()) // "10s", not nanoseconds, in JSON too
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx, shutdownGrace); err != nil {
		log.Warn("graceful shutdown incomplete", "err", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
