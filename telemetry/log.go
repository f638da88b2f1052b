package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// redacted replaces a secret wherever a log value would carry it.
const redacted = "[REDACTED]"

// NewLogger returns the process logger: format "json" or "text" (KB_LOG_FORMAT,
// empty means text). Every record logged with a request's context carries its
// request id, and any of secrets (API keys) found in a value is replaced.
func NewLogger(format string, w io.Writer, level slog.Level, secrets ...string) (*slog.Logger, error) {
	var kept []string
	for _, s := range secrets {
		// A very short "secret" would redact ordinary words.
		if len(s) >= 8 {
			kept = append(kept, s)
		}
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		return redact(a, kept)
	}}
	var h slog.Handler
	switch strings.ToLower(format) {
	case "", "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("KB_LOG_FORMAT %q: use json or text", format)
	}
	return slog.New(&requestIDHandler{Handler: h}), nil
}

// redact hides secrets in string values and in errors and other values printed as text.
func redact(a slog.Attr, secrets []string) slog.Attr {
	if len(secrets) == 0 {
		return a
	}
	var s string
	switch a.Value.Kind() {
	case slog.KindString:
		s = a.Value.String()
	case slog.KindAny:
		switch v := a.Value.Any().(type) {
		case error:
			s = v.Error()
		case fmt.Stringer:
			s = v.String()
		default:
			return a
		}
	default:
		return a
	}
	out := s
	for _, secret := range secrets {
		out = strings.ReplaceAll(out, secret, redacted)
	}
	if out == s && a.Value.Kind() == slog.KindString {
		return a
	}
	return slog.String(a.Key, out)
}

// requestIDHandler adds the request id of the record's context.
type requestIDHandler struct{ slog.Handler }

func (h *requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h *requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &requestIDHandler{Handler: h.Handler.WithAttrs(attrs)}
}

func (h *requestIDHandler) WithGroup(name string) slog.Handler {
	return &requestIDHandler{Handler: h.Handler.WithGroup(name)}
}
