package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// TracerName names canon's own spans (embedder and LLM calls).
const TracerName = "github.com/canonkb/canon"

// TracingEnabled says whether the environment asks for traces: an OTLP endpoint
// is set (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) and
// neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none says otherwise.
func TracingEnabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// StartTracing exports spans over OTLP/HTTP as the standard OTEL_EXPORTER_OTLP_*
// variables say (endpoint, headers, timeout, compression). With tracing off it
// returns nil and a no-op shutdown. The provider is also made the global one,
// with W3C trace-context propagation; the SDK's errors (a failed export) go to
// log as warnings.
func StartTracing(ctx context.Context, version string, log *slog.Logger) (*sdktrace.TracerProvider, func(context.Context) error, error) {
	if !TracingEnabled(os.Getenv) {
		return nil, func(context.Context) error { return nil }, nil
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		if err := checkEndpoint(name, os.Getenv(name)); err != nil {
			return nil, nil, err
		}
	}
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol != "" && protocol != "http/protobuf" {
		return nil, nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: canon exports http/protobuf only", protocol)
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	tp := NewTracerProvider(sdktrace.WithBatcher(exporter), version)
	// Without a handler the SDK prints through the log package, which slog
	// logs at INFO: an unreachable collector would pass unnoticed.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("tracing failed (OTEL_EXPORTER_OTLP_*)", "err", err)
	}))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return tp, tp.Shutdown, nil
}

// checkEndpoint refuses an OTLP/HTTP endpoint that is not an http or https URL
// with a host: the exporter would take it and fail every export.
func checkEndpoint(name, value string) error {
	if value == "" {
		return nil
	}
	u, err := url.Parse(value)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s=%q is not an http or https URL with a host (e.g. http://127.0.0.1:4318)", name, value)
	}
	return nil
}

// NewTracerProvider is canon's tracer provider over a span processor (tests pass
// an in-memory exporter's). OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES apply.
func NewTracerProvider(processor sdktrace.TracerProviderOption, version string) *sdktrace.TracerProvider {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName("canon"), semconv.ServiceVersion(version)))
	if err != nil {
		res = resource.Default()
	}
	// The environment's resource (OTEL_SERVICE_NAME, ...) wins over canon's defaults.
	if env, err := resource.New(context.Background(), resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	return sdktrace.NewTracerProvider(processor, sdktrace.WithResource(res))
}

// PgxTracer traces each SQL statement (otelpgx, without query parameters: they
// hold users' questions) and tags it with the request id.
func PgxTracer(tp trace.TracerProvider) pgx.QueryTracer {
	return &sqlTracer{Tracer: otelpgx.NewTracer(otelpgx.WithTracerProvider(tp))}
}

// sqlTracer adds the request id to otelpgx's query and batch spans.
type sqlTracer struct{ *otelpgx.Tracer }

func (t *sqlTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	ctx = t.Tracer.TraceQueryStart(ctx, conn, data)
	tagRequest(ctx)
	return ctx
}

func (t *sqlTracer) TraceBatchStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	ctx = t.Tracer.TraceBatchStart(ctx, conn, data)
	tagRequest(ctx)
	return ctx
}

func tagRequest(ctx context.Context) {
	if id := RequestID(ctx); id != "" {
		trace.SpanFromContext(ctx).SetAttributes(RequestIDAttribute.String(id))
	}
}
