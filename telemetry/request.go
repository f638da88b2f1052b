package telemetry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/canonkb/canon/domain"
)

// RequestIDHeader carries a request's id in and out; a caller's id is kept when it is sane.
const RequestIDHeader = "X-Request-Id"

// requestInfo is what the one log line of a request says; handlers deeper in
// the chain (the Connect interceptor, the JSON chat route) fill in what only they know.
type requestInfo struct {
	id string
	mu sync.Mutex
	// route is the RPC procedure or the mux pattern.
	route   string
	project string
	code    string
}

type requestInfoKey struct{}

func infoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return info
}

// RequestID is the id of the request ctx belongs to ("" outside one).
func RequestID(ctx context.Context) string {
	if info := infoFrom(ctx); info != nil {
		return info.id
	}
	return ""
}

// maxLoggedProject bounds the project field of a request's log line: the names
// come from the request before it is validated, and a search's 16 project keys
// of at most 63 bytes fit.
const maxLoggedProject = 1024

// SetProject records the request's project for its log line.
func SetProject(ctx context.Context, project string) {
	if info := infoFrom(ctx); info != nil && project != "" {
		info.mu.Lock()
		info.project = domain.Clip(project, maxLoggedProject)
		info.mu.Unlock()
	}
}

// SetCode records the request's outcome as a Connect code (routes that are not
// Connect RPCs answer with one too).
func SetCode(ctx context.Context, code connect.Code) {
	if info := infoFrom(ctx); info != nil {
		info.mu.Lock()
		info.code = codeName(code)
		info.mu.Unlock()
	}
}

// SetRoute records the route pattern that served the request (the mux sets
// r.Pattern only on the request it was handed, a copy of the logged one).
func SetRoute(ctx context.Context, route string) {
	if info := infoFrom(ctx); info != nil {
		info.mu.Lock()
		info.route = route
		info.mu.Unlock()
	}
}

// NameRoute records the route route() gives when nothing named the request yet
// (a request refused before reaching its handler); route runs only then.
func NameRoute(ctx context.Context, route func() string) {
	if info := infoFrom(ctx); info != nil {
		info.mu.Lock()
		defer info.mu.Unlock()
		if info.route == "" {
			info.route = route()
		}
	}
}

// codeName is the Connect code's name, "ok" for success (code 0).
func codeName(code connect.Code) string {
	if code == 0 {
		return "ok"
	}
	return code.String()
}

// newRequestID returns 16 random hex digits.
func newRequestID() string {
	var b [8]byte
	rand.Read(b[:]) // never fails since Go 1.24
	return hex.EncodeToString(b[:])
}

// saneRequestID keeps a caller's id only if it is short and printable ASCII, so
// that it cannot forge log lines or blow up a label.
func saneRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}

// quietRoutes are polled by machines: their lines are logged at debug level.
var quietRoutes = map[string]bool{"GET /metrics": true, "GET /healthz": true, "/grpc.health.v1.Health/Check": true}

// Middleware gives each request an id (X-Request-Id), counts it in m (nil: no
// metrics) and logs one line when it ends: request id, route, project, code,
// duration. It logs no header and no body, so credentials never reach the log.
func Middleware(next http.Handler, log *slog.Logger, m *Metrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get(RequestIDHeader)
		if !saneRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set(RequestIDHeader, id)
		info := &requestInfo{id: id}
		ctx := context.WithValue(r.Context(), requestInfoKey{}, info)
		rec := &statusRecorder{ResponseWriter: w}
		req := r.WithContext(ctx)
		next.ServeHTTP(rec, req)

		info.mu.Lock()
		route, project, code := info.route, info.project, info.code
		info.mu.Unlock()
		if route == "" {
			route = "unmatched"
		}
		if code == "" {
			code = codeName(codeFromStatus(rec.status()))
		}
		elapsed := time.Since(start)
		if m != nil {
			m.ObserveRequest(route, code, elapsed)
		}
		level := slog.LevelInfo
		switch {
		case quietRoutes[route]:
			level = slog.LevelDebug
		case code == "internal" || code == "unknown" || code == "data_loss":
			level = slog.LevelError
		}
		log.LogAttrs(ctx, level, "request", slog.String("route", route), slog.String("project", project),
			slog.String("code", code), slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000))
	})
}

// codeFromStatus maps an HTTP status to the Connect code that answers with it.
func codeFromStatus(status int) connect.Code {
	switch {
	case status < 400:
		return 0
	case status == http.StatusBadRequest:
		return connect.CodeInvalidArgument
	case status == http.StatusUnauthorized:
		return connect.CodeUnauthenticated
	case status == http.StatusForbidden:
		return connect.CodePermissionDenied
	case status == http.StatusNotFound:
		return connect.CodeNotFound
	case status == http.StatusConflict:
		return connect.CodeAborted
	case status == http.StatusTooManyRequests:
		return connect.CodeResourceExhausted
	case status == 499:
		return connect.CodeCanceled
	case status == http.StatusNotImplemented:
		return connect.CodeUnimplemented
	case status == http.StatusServiceUnavailable:
		return connect.CodeUnavailable
	case status == http.StatusGatewayTimeout:
		return connect.CodeDeadlineExceeded
	case status < 500:
		return connect.CodeInvalidArgument
	}
	return connect.CodeInternal
}

// statusRecorder remembers the status a handler wrote; it flushes (streams need it).
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) status() int {
	if s.code == 0 {
		return http.StatusOK
	}
	return s.code
}
