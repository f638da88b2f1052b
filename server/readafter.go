package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
	"github.com/canonkb/canon/postgres"
)

// ReadAfterHeader carries read-your-writes between a client and several canon
// processes on one primary: a write's response names the primary's WAL position
// after it, and a read sent with that position reads a replica only once the
// replica has replayed it (else the primary), whichever process serves it.
const ReadAfterHeader = "Canon-Read-After"

// writeProcedures are the calls whose response carries ReadAfterHeader.
var writeProcedures = map[string]bool{
	canonv1connect.IngestServiceIngestProcedure:   true,
	canonv1connect.CanonServicePromoteProcedure:   true,
	canonv1connect.CanonServiceSupersedeProcedure: true,
	canonv1connect.CanonServiceDeprecateProcedure: true,
	canonv1connect.CanonServiceArchiveProcedure:   true,
	canonv1connect.CanonServiceRejectProcedure:    true,
}

type readAfterErrKey struct{}

// readAfterMiddleware puts a request's ReadAfterHeader into its context. A
// malformed one is refused as invalid_argument: by the interceptor on Connect
// routes, here (400, as JSON) on the others.
func readAfterMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.Header.Get(ReadAfterHeader)
		if v == "" {
			next.ServeHTTP(w, r)
			return
		}
		pos, err := postgres.ParseLSN(v)
		switch {
		case err == nil:
			r = r.WithContext(postgres.ReadAfter(r.Context(), pos))
		case strings.HasPrefix(r.URL.Path, "/canon.v1.") || strings.HasPrefix(r.URL.Path, "/grpc."):
			r = r.WithContext(context.WithValue(r.Context(), readAfterErrKey{}, err))
		default:
			writeJSONError(w, connect.CodeInvalidArgument, ReadAfterHeader+": "+err.Error())
			return
		}
		next.ServeHTTP(w, r)
	})
}

// readAfterInterceptor refuses a malformed ReadAfterHeader and names the
// position after each successful write in its response.
type readAfterInterceptor struct{ reads *postgres.Reads }

func (i readAfterInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if err := readAfterErr(ctx); err != nil {
			return nil, err
		}
		res, err := next(ctx, req)
		if err == nil && writeProcedures[req.Spec().Procedure] {
			if pos := i.reads.Position(); pos > 0 {
				res.Header().Set(ReadAfterHeader, postgres.FormatLSN(pos))
			}
		}
		return res, err
	}
}

func (readAfterInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (readAfterInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		if err := readAfterErr(ctx); err != nil {
			return err
		}
		return next(ctx, conn)
	}
}

func readAfterErr(ctx context.Context) error {
	if err, ok := ctx.Value(readAfterErrKey{}).(error); ok {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s: %w", ReadAfterHeader, err))
	}
	return nil
}
