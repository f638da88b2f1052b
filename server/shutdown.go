package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Server is canon's HTTP server with a graceful shutdown that, past its
// deadline, cancels the requests and streams still running and waits for them.
type Server struct {
	http     *http.Server
	inflight *inflight
	// cancel ends every request's context when the shutdown deadline passes,
	// with errShuttingDown as the cause.
	cancel context.CancelCauseFunc
}

// StreamCloser is a handler holding streams open that only it can end (MCP's
// standalone SSE streams, idle until the client leaves): Shutdown ends them
// as it starts, instead of waiting its whole timeout and cancelling them.
type StreamCloser interface {
	CloseStreams()
}

// errShuttingDown is what a request still running at the shutdown deadline is
// answered with: the cause of its cancelled context.
var errShuttingDown = errors.New("the server is shutting down; ask again")

// shuttingDown reports whether ctx was cancelled by the shutdown deadline
// (rather than by its client leaving).
func shuttingDown(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errShuttingDown)
}

// answerGrace is how long handlers cancelled at the shutdown deadline get to
// write their error (an `error` chunk, a gRPC status, a 503) before the
// connections close under them.
const answerGrace = time.Second

// NewServer serves d's handler on addr with the timeouts of NewHTTPServer.
func NewServer(addr string, d Deps) *Server {
	tracking := &inflight{}
	base, cancel := context.WithCancelCause(context.Background())
	h, _ := build(d, tracking)
	srv := NewHTTPServer(addr, h)
	srv.BaseContext = func(net.Listener) context.Context { return base }
	if sc, ok := d.MCP.(StreamCloser); ok {
		srv.RegisterOnShutdown(sc.CloseStreams)
	}
	return &Server{http: srv, inflight: tracking, cancel: cancel}
}

// Serve accepts connections on ln until Shutdown; it returns nil after a shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// InFlight is the number of requests (and streams) being served.
func (s *Server) InFlight() int64 { return s.inflight.n.Load() }

// idleGrace is how long Shutdown lets connections close on their own once no
// request is in flight (an HTTP/2 GOAWAY takes one second) before closing them.
const idleGrace = 2 * time.Second

// pollInterval is how often a shutdown looks at the requests still in flight.
const pollInterval = 10 * time.Millisecond

// Shutdown stops accepting connections and lets requests and streams in flight
// finish until ctx ends; then it cancels their contexts (errShuttingDown),
// gives their handlers up to answerGrace to answer with that error, closes the
// connections and waits for the handlers until grace has passed since the
// cancel. It returns an error when a request had to be cancelled, or when a
// handler outlived grace.
func (s *Server) Shutdown(ctx context.Context, grace time.Duration) error {
	// Shutdown closes the listeners at once, then waits for HTTP/1 requests.
	shut := make(chan error, 1)
	go func() { shut <- s.http.Shutdown(ctx) }()
	if s.inflight.wait(ctx) {
		// Nothing is in flight, yet http.Server.Shutdown can wait out its whole
		// context for an HTTP/2 connection it never sees go idle (golang/go#81153).
		select {
		case err := <-shut:
			if err == nil {
				s.cancel(nil)
				return nil
			}
		case <-time.After(idleGrace):
			_ = s.http.Close()
			<-shut //nolint:errcheck // Close makes Shutdown return; nothing was left to finish
			s.cancel(nil)
			return nil
		}
	} else {
		<-shut //nolint:errcheck // ctx ended: the cancel below ends what is left
	}
	s.cancel(errShuttingDown)
	deadline := time.Now().Add(grace)
	answered, cancelAnswer := context.WithTimeout(context.Background(), min(grace, answerGrace))
	s.inflight.wait(answered)
	cancelAnswer()
	_ = s.http.Close() // the listeners are closed already; this closes the connections
	waitCtx, cancelWait := context.WithDeadline(context.Background(), deadline)
	defer cancelWait()
	if !s.inflight.wait(waitCtx) {
		return fmt.Errorf("shutdown: %d requests still running %s after they were cancelled", s.InFlight(), grace)
	}
	return errors.New("shutdown deadline passed: requests in flight were cancelled")
}

// inflight counts the requests being served.
type inflight struct{ n atomic.Int64 }

func (f *inflight) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.n.Add(1)
		defer f.n.Add(-1)
		next.ServeHTTP(w, r)
	})
}

// wait reports whether no request is in flight before ctx ends.
func (f *inflight) wait(ctx context.Context) bool {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for f.n.Load() > 0 {
		select {
		case <-ctx.Done():
			return f.n.Load() == 0
		case <-t.C:
		}
	}
	return true
}
