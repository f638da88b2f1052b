package telemetry_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/canonkb/canon/telemetry"
)

// The project names a request carries reach the log before they are validated:
// a megabyte of them must not make a megabyte log line.
func TestRequestLogBoundsTheProject(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	h := telemetry.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		telemetry.SetProject(r.Context(), strings.Repeat("p", 1_000_000))
	}), slog.New(slog.NewTextHandler(&out, nil)), nil)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/x", nil))
	if line := out.String(); len(line) > 2048 || !strings.Contains(line, "project=ppp") {
		t.Errorf("log line of %d bytes: %.200s", len(line), line)
	}
}
