// Package server exposes canon over HTTP: Connect, gRPC and gRPC-web handlers on
// one port (HTTP/1.1 and unencrypted HTTP/2), plus health and reflection. Handlers only translate between the
// wire and the packages that do the work.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"connectrpc.com/otelconnect"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/canonkb/canon/auth"
	"github.com/canonkb/canon/chat"
	"github.com/canonkb/canon/domain"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/project"
	"github.com/canonkb/canon/search"
	"github.com/canonkb/canon/telemetry"
)

// Deps are what the handlers need.
type Deps struct {
	Pool *pgxpool.Pool
	// Reads routes graph show and content gaps to a read replica (search routes
	// through Searcher.Reads); nil reads from Pool.
	Reads    *postgres.Reads
	Searcher *search.Searcher
	// SearchService answers SearchService.Search (the two-pass entity search,
	// package hierarchy); nil means Searcher.
	SearchService Searcher
	Ingester      *ingest.Ingester
	Chat          *chat.Service
	Logger        *slog.Logger
	// MCP serves the Model Context Protocol (Streamable HTTP) at /mcp when set.
	MCP http.Handler
	// Auth configures keys and limits; the zero value is KB_AUTH=off with the
	// default body limits and no rate limit.
	Auth auth.Config
	// Metrics is served on GET /metrics and counts requests, refusals and
	// ingests; nil serves no metrics.
	Metrics *telemetry.Metrics
	// TracerProvider traces each RPC (otelconnect); nil traces nothing.
	TracerProvider trace.TracerProvider
}

// MaxRequestBytes bounds every request but ingest: the largest legitimate one is
// a chat with 50 history turns of 20,000 characters (at most 4 MB of UTF-8).
const MaxRequestBytes = 8 << 20

// PublicPaths answer without a key: probes and scrapers carry none, and the web
// app's static files hold no data (the page asks for a key when its API calls need one).
func PublicPaths() []string {
	return []string{"/healthz", "/metrics", "/app/", "/" + grpchealth.HealthV1ServiceName + "/"}
}

// Handler builds the HTTP handler with every service mounted behind the guard.
func Handler(d Deps) http.Handler {
	h, _ := build(d, nil)
	return h
}

// Routes lists every path Handler serves (Connect services by their prefix), so
// a test can walk them all.
func Routes(d Deps) []string {
	_, routes := build(d, nil)
	return routes
}

// routeMux records what it mounts.
type routeMux struct {
	*http.ServeMux
	routes []string
}

func (m *routeMux) Handle(pattern string, h http.Handler) {
	m.routes = append(m.routes, pattern)
	m.ServeMux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The request log and metrics name plain HTTP routes by pattern; a
		// Connect RPC's interceptor later names its procedure instead.
		telemetry.SetRoute(r.Context(), r.Pattern)
		h.ServeHTTP(w, r)
	}))
}

// named gives a request the guard refused before it reached its handler (a
// missing or revoked key, a body too large) its route's pattern, so the log and
// metrics count it under its route, not as unmatched. Patterns, never paths:
// labels stay bounded. Only such requests pay for matching the route again.
func (m *routeMux) named(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		telemetry.NameRoute(r.Context(), func() string {
			_, pattern := m.Handler(r)
			return pattern
		})
	})
}

func (m *routeMux) HandleFunc(pattern string, h http.HandlerFunc) { m.Handle(pattern, h) }

// build mounts every service behind the guard; each request (each HTTP/2
// stream) passes through the request log, the metrics and, when tracking is
// set, the count of requests in flight that a graceful shutdown waits for.
func build(d Deps, tracking *inflight) (http.Handler, []string) {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	mux := &routeMux{ServeMux: http.NewServeMux()}
	cfg := d.Auth
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = MaxRequestBytes
	}
	cfg.BodyLimits = map[string]int64{"/" + canonv1connect.IngestServiceName + "/": maxIngestRequestBytes}
	cfg.Public = PublicPaths()
	store := auth.NewStore(d.Pool)
	guard := auth.NewGuard(store, cfg, policies, requestScope, d.Logger)
	var interceptors []connect.Interceptor
	if d.TracerProvider != nil {
		tracing, err := otelconnect.NewInterceptor(otelconnect.WithTracerProvider(d.TracerProvider),
			otelconnect.WithoutMetrics(), otelconnect.WithTrustRemote())
		if err != nil {
			// Only a bad option fails, and the options are fixed here.
			panic(err)
		}
		interceptors = append(interceptors, tracing)
	}
	// Telemetry first, so a call the guard refuses is still counted and logged.
	interceptors = append(interceptors, telemetry.ConnectInterceptor(func(msg any) []string { return requestScope(msg).Projects }), guard.Interceptor(), readAfterInterceptor{d.Reads})
	opts := append([]connect.HandlerOption{
		connect.WithRecover(recoverPanic(d.Logger)),
		connect.WithInterceptors(interceptors...),
		connect.WithReadMaxBytes(MaxRequestBytes),
	}, jsonCodecs()...)
	var searcher Searcher = d.Searcher
	if d.SearchService != nil {
		searcher = d.SearchService
	}
	mux.Handle(canonv1connect.NewSearchServiceHandler(&searchHandler{searcher: searcher, log: d.Logger, metrics: d.Metrics}, opts...))
	mux.Handle(canonv1connect.NewIngestServiceHandler(&ingestHandler{ingester: d.Ingester, log: d.Logger, metrics: d.Metrics},
		append(opts, connect.WithReadMaxBytes(maxIngestRequestBytes))...))
	mux.Handle(canonv1connect.NewProjectServiceHandler(&projectHandler{pool: d.Pool, log: d.Logger}, opts...))
	mux.Handle(canonv1connect.NewCanonServiceHandler(newCanonHandler(d.Pool, d.Reads, d.Logger), opts...))
	chatH := &chatHandler{chat: d.Chat, pool: d.Pool, reads: d.Reads, log: d.Logger}
	mux.Handle(canonv1connect.NewChatServiceHandler(chatH, opts...))
	mux.HandleFunc("POST /api/kb/chat", jsonOnly(chatH.jsonChat))
	mountWeb(mux, d, guard)
	if d.MCP != nil {
		mux.Handle("/mcp", d.MCP)
	}
	mux.Handle(canonv1connect.NewKeyServiceHandler(&keyHandler{store: store, log: d.Logger}, opts...))

	services := []string{
		canonv1connect.SearchServiceName, canonv1connect.IngestServiceName, canonv1connect.ProjectServiceName,
		canonv1connect.ChatServiceName, canonv1connect.CanonServiceName, canonv1connect.KeyServiceName,
	}
	mux.Handle(grpchealth.NewHandler(healthChecker{pool: d.Pool, services: services}, opts...))
	reflector := grpcreflect.NewStaticReflector(services...)
	mux.Handle(grpcreflect.NewHandlerV1(reflector, opts...))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector, opts...))
	mux.HandleFunc("GET /healthz", serveHealthz(d.Pool))
	if d.Metrics != nil {
		mux.Handle("GET /metrics", d.Metrics.Handler())
	}
	h := telemetry.Middleware(mux.named(guard.Middleware(readAfterMiddleware(mux))), d.Logger, d.Metrics)
	if tracking != nil {
		h = tracking.wrap(h)
	}
	return h, mux.routes
}

// Protocols are the protocols canon serves on its one port: HTTP/1.1 for Connect
// and gRPC-web, and HTTP/2 without TLS (prior knowledge) for gRPC clients.
func Protocols() *http.Protocols {
	p := &http.Protocols{}
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return p
}

// NewHTTPServer serves the handler with Protocols and timeouts that protect the
// server from slow clients.
func NewHTTPServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		Protocols:         Protocols(),
		ReadHeaderTimeout: 10 * time.Second,
		// No ReadTimeout or WriteTimeout: they would cut off long ingest uploads and
		// chat streams; bodies are bounded in size instead, and idle connections close.
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 1 << 20,
	}
}

// Searcher runs a search request.
type Searcher interface {
	Search(ctx context.Context, req *domain.SearchRequest) (*domain.SearchResult, error)
}

type searchHandler struct {
	searcher Searcher
	log      *slog.Logger
	metrics  *telemetry.Metrics
}

func (h *searchHandler) Search(ctx context.Context, req *connect.Request[canonv1.SearchRequest]) (*connect.Response[canonv1.SearchResponse], error) {
	res, err := h.searcher.Search(ctx, SearchRequest(req.Msg))
	if err != nil {
		return nil, toConnect(ctx, h.log, "search", err)
	}
	if h.metrics != nil {
		h.metrics.ObserveStage(ctx, domain.StageRetrieval, time.Duration(res.Meta.RetrievalMs*float64(time.Millisecond)))
	}
	return connect.NewResponse(&canonv1.SearchResponse{Result: SearchResultProto(res)}), nil
}

type ingestHandler struct {
	ingester *ingest.Ingester
	log      *slog.Logger
	metrics  *telemetry.Metrics
}

// maxIngestFiles and maxIngestRequestBytes bound one request; bigger corpora go
// through several requests or the CLI. (Each file has its format's own limit.)
const (
	maxIngestFiles        = 5000
	maxIngestRequestBytes = 256 << 20
)

func (h *ingestHandler) Ingest(ctx context.Context, req *connect.Request[canonv1.IngestRequest]) (*connect.Response[canonv1.IngestResponse], error) {
	m := req.Msg
	if !ingest.ValidProjectKey(m.GetProjectKey()) {
		return nil, connect.NewError(connect.CodeInvalidArgument,
			errors.New("project_key is required: lowercase letters, digits, '-', '_' or '.'"))
	}
	if len(m.GetFiles()) > maxIngestFiles {
		return nil, connect.NewError(connect.CodeInvalidArgument,
			errors.New("too many files in one request (limit 5000): split the upload"))
	}
	files := make([]ingest.File, 0, len(m.GetFiles()))
	for _, f := range m.GetFiles() {
		// Ingest cleans the paths and refuses bad ones (invalid_argument, naming the path).
		files = append(files, ingest.File{Path: f.GetPath(), Content: f.GetContent()})
	}
	res, err := h.ingester.Ingest(ctx, files, ingest.Options{Project: m.GetProjectKey(), ProjectOnly: true, Prune: m.GetPrune()})
	if err != nil {
		return nil, toConnect(ctx, h.log, "ingest", err)
	}
	if h.metrics != nil {
		h.metrics.IngestResult(res.Created, res.Updated, res.Unchanged, res.Pruned, res.Chunks)
	}
	out := &canonv1.IngestResponse{
		Files: int32(res.Files), Created: int32(res.Created), Updated: int32(res.Updated),
		Unchanged: int32(res.Unchanged), Pruned: int32(res.Pruned), Chunks: int32(res.Chunks),
		ElapsedMs: float64(res.Elapsed.Microseconds()) / 1000, Notices: res.Notices,
	}
	for _, e := range res.Errors {
		out.Errors = append(out.Errors, &canonv1.FileError{Path: e.Path, Line: int32(e.Line), Reason: e.Reason})
	}
	return connect.NewResponse(out), nil
}

type projectHandler struct {
	pool *pgxpool.Pool
	log  *slog.Logger
}

func (h *projectHandler) ListProjects(ctx context.Context, _ *connect.Request[canonv1.ListProjectsRequest]) (*connect.Response[canonv1.ListProjectsResponse], error) {
	list, err := project.List(ctx, h.pool)
	if err != nil {
		return nil, toConnect(ctx, h.log, "list projects", err)
	}
	return connect.NewResponse(ProjectsResponse(list)), nil
}

// toConnect maps errors to Connect codes: the caller's mistakes keep their message;
// internal failures are logged and answered without internals.
func toConnect(ctx context.Context, log *slog.Logger, op string, err error) error {
	var invalid *domain.InvalidError
	var notFound *domain.NotFoundError
	switch {
	case shuttingDown(ctx): // whatever failed, it failed because the server cancelled it
		return connect.NewError(connect.CodeUnavailable, errShuttingDown)
	case errors.As(err, &invalid):
		return connect.NewError(connect.CodeInvalidArgument, errors.New(invalid.Message))
	case errors.As(err, &notFound):
		return connect.NewError(connect.CodeNotFound, errors.New(notFound.Message))
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, errors.New("request canceled"))
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, errors.New("request timed out"))
	case postgres.IsUnavailable(err):
		log.WarnContext(ctx, op+" failed: database unavailable", "err", err)
		return connect.NewError(connect.CodeUnavailable, errors.New("the database is unavailable; try again shortly"))
	}
	log.ErrorContext(ctx, op+" failed", "err", err)
	return connect.NewError(connect.CodeInternal, errors.New(op+" failed; the server log has details"))
}

// recoverPanic answers a handler's panic with an Internal error, logged: a bug
// answers one request badly instead of killing the server.
func recoverPanic(log *slog.Logger) func(context.Context, connect.Spec, http.Header, any) error {
	return func(ctx context.Context, spec connect.Spec, _ http.Header, p any) error {
		log.ErrorContext(ctx, "panic in handler", "procedure", spec.Procedure, "panic", p)
		return connect.NewError(connect.CodeInternal, errors.New("internal error"))
	}
}
