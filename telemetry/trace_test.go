package telemetry_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/internal/syncbuf"
	"github.com/canonkb/canon/llm"
	"github.com/canonkb/canon/telemetry"
)

// callThrough runs work inside a request that went through the middleware with
// the given request id.
func callThrough(t *testing.T, id string, work func(ctx context.Context)) {
	t.Helper()
	h := telemetry.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { work(r.Context()) }),
		slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	req := httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/x", nil)
	req.Header.Set(telemetry.RequestIDHeader, id)
	h.ServeHTTP(httptest.NewRecorder(), req)
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

// TestEmbedderAndLLMSpans: the embedder and LLM calls are spans tagged with the
// request id (the SDK's in-memory exporter).
func TestEmbedderAndLLMSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := telemetry.NewTracerProvider(sdktrace.WithSyncer(exp), "test")
	defer tp.Shutdown(context.Background()) //nolint:errcheck // in-memory
	emb := telemetry.InstrumentEmbedder(embed.NewHash(64), tp, nil)
	provider := telemetry.InstrumentProvider(llm.NewExtractive(), tp, nil)
	callThrough(t, "req-42", func(ctx context.Context) {
		ctx, root := tp.Tracer("test").Start(ctx, "rpc")
		defer root.End()
		if _, err := emb.EmbedQuery(ctx, "rollbacks"); err != nil {
			t.Error(err)
		}
		if _, err := provider.Stream(ctx, llm.Request{Question: "how do rollbacks work?", Passages: []llm.Passage{{N: 1, Text: "Rollbacks redeploy the previous release."}}}, nil); err != nil {
			t.Error(err)
		}
	})
	spans := exp.GetSpans().Snapshots()
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
	}
	for _, name := range []string{"embed query", "llm stream"} {
		s, ok := byName[name]
		if !ok {
			t.Fatalf("no %q span in %d spans", name, len(spans))
		}
		if got := attr(s, string(telemetry.RequestIDAttribute)); got != "req-42" {
			t.Errorf("%s: request id %q", name, got)
		}
		if s.Parent().SpanID() != byName["rpc"].SpanContext().SpanID() {
			t.Errorf("%s is not a child of the RPC span", name)
		}
	}
}

// TestOTLPHTTPExport: with OTEL_EXPORTER_OTLP_ENDPOINT set, spans reach an
// OTLP/HTTP receiver as a real protobuf ExportTraceServiceRequest.
func TestOTLPHTTPExport(t *testing.T) {
	var mu sync.Mutex
	var got []*collectortrace.ExportTraceServiceRequest
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "unexpected "+r.URL.Path, http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, &req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Write(b) //nolint:errcheck // the exporter reports a short write itself
	}))
	defer receiver.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.URL)
	t.Setenv("OTEL_SERVICE_NAME", "canon-test")
	tp, shutdown, err := telemetry.StartTracing(context.Background(), "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || tp == nil {
		t.Fatalf("tracing: %v (provider %v)", err, tp)
	}
	emb := telemetry.InstrumentEmbedder(embed.NewHash(64), tp, nil)
	callThrough(t, "req-otlp", func(ctx context.Context) {
		if _, err := emb.EmbedQuery(ctx, "rollbacks"); err != nil {
			t.Error(err)
		}
	})
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var found bool
	for _, req := range got {
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					if s.GetName() != "embed query" {
						continue
					}
					for _, a := range s.GetAttributes() {
						if a.GetKey() == string(telemetry.RequestIDAttribute) && a.GetValue().GetStringValue() == "req-otlp" {
							found = true
						}
					}
				}
			}
		}
	}
	if !found {
		t.Fatalf("the receiver got %d export requests without the embed span tagged req-otlp", len(got))
	}
}

// TestTracingOffByDefault: no OTLP variable, no tracing.
func TestTracingOffByDefault(t *testing.T) {
	env := map[string]string{}
	if telemetry.TracingEnabled(func(k string) string { return env[k] }) {
		t.Fatal("tracing is on without an endpoint")
	}
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:4318"
	if !telemetry.TracingEnabled(func(k string) string { return env[k] }) {
		t.Fatal("tracing is off with an endpoint")
	}
	env["OTEL_SDK_DISABLED"] = "true"
	if telemetry.TracingEnabled(func(k string) string { return env[k] }) {
		t.Fatal("OTEL_SDK_DISABLED=true is ignored")
	}
}

// TestOTLPEndpointMustBeAURL: an endpoint the exporter could never send to is
// refused at start, naming the variable and its value.
func TestOTLPEndpointMustBeAURL(t *testing.T) {
	for _, c := range []struct{ name, value string }{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "not a url"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://collector:4318"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://"},
	} {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			t.Setenv(c.name, c.value)
			tp, _, err := telemetry.StartTracing(context.Background(), "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err == nil || !strings.Contains(err.Error(), c.name+"=") || !strings.Contains(err.Error(), c.value) {
				t.Errorf("error %v, want it to name %s and %q", err, c.name, c.value)
			}
			if tp != nil {
				tp.Shutdown(context.Background()) //nolint:errcheck // the test failed already
			}
		})
	}
}

// TestOTLPExportFailureIsAWarning: a collector that refuses the spans is
// logged at WARN, not at the INFO the SDK's default handler ends up at.
func TestOTLPExportFailureIsAWarning(t *testing.T) {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck // refused whatever it holds
		http.Error(w, "refused", http.StatusBadRequest)
	}))
	defer receiver.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20") // milliseconds: export soon
	var logs syncbuf.Buffer
	tp, shutdown, err := telemetry.StartTracing(context.Background(), "test", slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background()) //nolint:errcheck // the export fails, as the test wants
	_, span := tp.Tracer("test").Start(context.Background(), "refused")
	span.End()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "level=WARN") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if out := logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "tracing failed") {
		t.Errorf("the failed export was not logged as a warning: %q", out)
	}
}
