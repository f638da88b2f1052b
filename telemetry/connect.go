package telemetry

import (
	"context"
	"errors"
	"slices"
	"strings"

	"connectrpc.com/connect"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// RequestIDAttribute is the span attribute that carries canon's request id.
const RequestIDAttribute = attribute.Key("canon.request_id")

// ConnectInterceptor records each RPC's procedure, projects (projectsOf a
// request message: a search's filters name them, a lifecycle call its project)
// and code for the request's log line and metrics, and tags the RPC's span with
// the request id. Put it after the tracing interceptor so that the span exists.
func ConnectInterceptor(projectsOf func(msg any) []string) connect.Interceptor {
	return rpcRecorder{projectsOf: projectsOf}
}

type rpcRecorder struct{ projectsOf func(msg any) []string }

func (r rpcRecorder) setProjects(ctx context.Context, msg any) {
	if msg != nil && r.projectsOf != nil {
		SetProject(ctx, strings.Join(slices.Compact(slices.Sorted(slices.Values(r.projectsOf(msg)))), ","))
	}
}

func (r rpcRecorder) begin(ctx context.Context, procedure string, msg any) {
	SetRoute(ctx, procedure)
	r.setProjects(ctx, msg)
	if id := RequestID(ctx); id != "" {
		trace.SpanFromContext(ctx).SetAttributes(RequestIDAttribute.String(id))
	}
}

func finish(ctx context.Context, err error) {
	var code connect.Code
	if err != nil {
		code = connect.CodeOf(err)
		if errors.Is(err, context.Canceled) && code == connect.CodeUnknown {
			code = connect.CodeCanceled
		}
	}
	SetCode(ctx, code)
}

func (r rpcRecorder) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		r.begin(ctx, req.Spec().Procedure, req.Any())
		res, err := next(ctx, req)
		finish(ctx, err)
		return res, err
	}
}

func (rpcRecorder) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (r rpcRecorder) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		r.begin(ctx, conn.Spec().Procedure, nil)
		err := next(ctx, &receiveRecorder{StreamingHandlerConn: conn, ctx: ctx, rec: r})
		finish(ctx, err)
		return err
	}
}

// receiveRecorder reads the project of a stream's request as the handler receives it.
type receiveRecorder struct {
	connect.StreamingHandlerConn
	ctx context.Context //nolint:containedctx // the stream's own context, to record what it receives
	rec rpcRecorder
}

func (r *receiveRecorder) Receive(msg any) error {
	err := r.StreamingHandlerConn.Receive(msg)
	if err == nil {
		r.rec.setProjects(r.ctx, msg)
	}
	return err
}
