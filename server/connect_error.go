package server

import (
	"context"
	"errors"
	"log/slog"

	"connectrpc.com/connect"

	"github.com/canonkb/canon/chat"
	"github.com/canonkb/canon/lifecycle"
	"github.com/canonkb/canon/llm"
)

// ConnectError is the Connect error the API answers err with, for any operation
// (op names it in the log): other surfaces (the MCP tools) use it so a caller
// reads the same code and message everywhere. A *connect.Error passes unchanged.
func ConnectError(ctx context.Context, log *slog.Logger, op string, err error) *connect.Error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce
	}
	var state *lifecycle.StateError
	var provider *llm.ProviderError
	var out error
	switch {
	case chat.IsUnavailable(err) || errors.As(err, &provider):
		out = chatError(ctx, log, err)
	case errors.As(err, &state):
		out = (&canonHandler{log: log}).lifecycleError(ctx, op, err)
	default:
		out = toConnect(ctx, log, op, err)
	}
	if !errors.As(out, &ce) {
		ce = connect.NewError(connect.CodeInternal, errors.New(op+" failed"))
	}
	return ce
}
