package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"github.com/jackc/pgx/v5/pgxpool"
)

// healthTimeout bounds a health probe's database ping, so a probe answers
// within its own deadline while the database hangs.
const healthTimeout = 2 * time.Second

// healthy is canon's one definition of healthy, for GET /healthz and gRPC
// health alike: the database answers a ping. Every RPC needs it.
func healthy(ctx context.Context, pool *pgxpool.Pool) error {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	return pool.Ping(ctx)
}

// serveHealthz is GET /healthz: 200 when healthy, 503 when not.
func serveHealthz(pool *pgxpool.Pool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if healthy(r.Context(), pool) != nil {
			http.Error(w, "database unreachable", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n")) //nolint:errcheck // a client that left cannot be told
	}
}

// healthWatchInterval is how often a gRPC health Watch looks again: the
// database's state changes without telling anyone.
const healthWatchInterval = 2 * time.Second

// healthChecker answers grpc.health.v1.Health for the server ("") and each of
// its services: SERVING when healthy, NOT_SERVING when not.
type healthChecker struct {
	pool     *pgxpool.Pool
	services []string
}

func (c healthChecker) known(service string) error {
	if service != "" && !slices.Contains(c.services, service) {
		return connect.NewError(connect.CodeNotFound, fmt.Errorf("no service %q here", service))
	}
	return nil
}

// Watch asks for a Check every healthWatchInterval (the handler sends only
// changes) until stop.
func (c healthChecker) Watch(_ context.Context, req *grpchealth.CheckRequest, onChange func()) (func(), error) {
	if err := c.known(req.Service); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(healthWatchInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				onChange()
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }, nil
}

func (c healthChecker) Check(ctx context.Context, req *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	if err := c.known(req.Service); err != nil {
		return nil, err
	}
	// An unhealthy server is an answer (NOT_SERVING), not a failed call.
	status := grpchealth.StatusServing
	if healthy(ctx, c.pool) != nil {
		status = grpchealth.StatusNotServing
	}
	return &grpchealth.CheckResponse{Status: status}, nil
}
