package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/llm"
)

func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(TracerName)
}

func startSpan(ctx context.Context, tracer trace.Tracer, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if id := RequestID(ctx); id != "" {
		attrs = append(attrs, RequestIDAttribute.String(id))
	}
	return tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// InstrumentEmbedder times a question's embedding (the embed stage) and traces
// every embedder call. tp and stages may be nil.
func InstrumentEmbedder(e embed.Embedder, tp trace.TracerProvider, stages domain.StageObserver) embed.Embedder {
	return &instrumentedEmbedder{Embedder: e, tracer: tracerOf(tp), stages: stages}
}

type instrumentedEmbedder struct {
	embed.Embedder
	tracer trace.Tracer
	stages domain.StageObserver
}

func (e *instrumentedEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	start := time.Now()
	ctx, span := startSpan(ctx, e.tracer, "embed query", attribute.String("canon.embedder", e.Name()))
	v, err := e.Embedder.EmbedQuery(ctx, text)
	endSpan(span, err)
	e.stages.Observe(ctx, domain.StageEmbed, start)
	return v, err
}

func (e *instrumentedEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	ctx, span := startSpan(ctx, e.tracer, "embed documents", attribute.String("canon.embedder", e.Name()),
		attribute.Int("canon.texts", len(texts)))
	v, err := e.Embedder.EmbedDocuments(ctx, texts)
	endSpan(span, err)
	return v, err
}

// InstrumentProvider times the language model's first token and whole answer
// and traces each call. tp and stages may be nil.
func InstrumentProvider(p llm.Provider, tp trace.TracerProvider, stages domain.StageObserver) llm.Provider {
	return &instrumentedProvider{Provider: p, tracer: tracerOf(tp), stages: stages}
}

type instrumentedProvider struct {
	llm.Provider
	tracer trace.Tracer
	stages domain.StageObserver
}

func (p *instrumentedProvider) Stream(ctx context.Context, req llm.Request, onDelta func(string) error) (llm.Response, error) {
	start := time.Now()
	ctx, span := startSpan(ctx, p.tracer, "llm stream", attribute.String("gen_ai.system", p.Name()),
		attribute.String("gen_ai.request.model", p.Model()))
	first := true
	res, err := p.Provider.Stream(ctx, req, func(d string) error {
		if first {
			first = false
			p.stages.Observe(ctx, domain.StageLLMFirst, start)
			span.AddEvent("first token")
		}
		if onDelta == nil {
			return nil
		}
		return onDelta(d)
	})
	if err == nil {
		span.SetAttributes(attribute.Int("gen_ai.usage.input_tokens", res.Usage.PromptTokens),
			attribute.Int("gen_ai.usage.output_tokens", res.Usage.CompletionTokens))
	}
	endSpan(span, err)
	p.stages.Observe(ctx, domain.StageLLMTotal, start)
	return res, err
}

// CostUSD keeps the wrapped provider's price table visible (llm.CostOf).
func (p *instrumentedProvider) CostUSD(r llm.Response) float64 { return llm.CostOf(p.Provider, r) }
