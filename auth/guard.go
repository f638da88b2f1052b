package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/time/rate"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/internal/expiring"
)

// Policy is what calling one procedure takes.
type Policy struct {
	// Role is the weakest role allowed.
	Role domain.Role
	// Audit records every call, allowed or not, in audit_log.
	Audit bool
	// Public procedures need no key (gRPC health: a probe carries none); their
	// path must be among Config.Public too.
	Public bool
}

// Scope is what one request touches, read from its message.
type Scope struct {
	Projects []string
	Document string
}

// Config sets the guard's limits.
type Config struct {
	// Required makes every route but Public need a key; off, every request is the operator's.
	Required bool
	// RatePerSecond and Burst shape each key's token bucket; 0 disables it.
	RatePerSecond float64
	Burst         int
	// MaxStreamsPerKey caps a key's concurrent streaming calls; 0 disables it.
	MaxStreamsPerKey int
	// MaxBodyBytes bounds request bodies; BodyLimits raises it for paths by prefix.
	MaxBodyBytes int64
	BodyLimits   map[string]int64
	// Public paths need no key (health and metrics).
	Public []string
	// AllowedHosts are the host names a server without keys answers besides
	// loopback ones (localhost, *.localhost, 127.0.0.0/8, ::1).
	AllowedHosts []string
}

// Guard is the server's one authentication middleware and one authorization interceptor.
type Guard struct {
	store    *Store
	cfg      Config
	policies map[string]Policy
	scope    func(msg any) Scope
	log      *slog.Logger
	errors   *connect.ErrorWriter
	limiters *expiring.Cache[string, *rate.Limiter]

	mu      sync.Mutex
	streams map[string]int
}

// limiterCacheSize and limiterIdle bound the per-key limiter table.
const (
	limiterCacheSize = 10000
	limiterIdle      = 10 * time.Minute
)

// NewGuard returns a guard; policies maps every Connect procedure to its policy
// (a procedure without one is refused), scope reads a request message.
func NewGuard(store *Store, cfg Config, policies map[string]Policy, scope func(msg any) Scope, log *slog.Logger) *Guard {
	if log == nil {
		log = slog.Default()
	}
	return &Guard{store: store, cfg: cfg, policies: policies, scope: scope, log: log,
		errors:   connect.NewErrorWriter(),
		limiters: expiring.New[string, *rate.Limiter](limiterCacheSize, limiterIdle),
		streams:  map[string]int{}}
}

// Required reports whether requests need a key.
func (g *Guard) Required() bool { return g.cfg.Required }

// IsPublic reports whether path needs no key: it is one of public, or lies under
// one of its entries that ends in "/" (a tree of static files, such as the web app).
func IsPublic(public []string, path string) bool {
	for _, p := range public {
		if p == path || (len(p) > 1 && strings.HasSuffix(p, "/") && strings.HasPrefix(path, p)) {
			return true
		}
	}
	return false
}

// Middleware bounds the body, authenticates the bearer key and applies the key's
// rate limit on every route but the public ones; the principal goes in the context.
func (g *Guard) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.cfg.Required && !LocalHost(r.Host, g.cfg.AllowedHosts) {
			// Without keys, a web page whose DNS name points at 127.0.0.1 (DNS
			// rebinding) would be same-origin with canon: only its own names answer.
			g.writeError(w, r, connect.NewError(connect.CodePermissionDenied, errors.New(
				"this server has no API keys (KB_AUTH=off) and answers only requests addressed to localhost or a "+
					"loopback address; add this host name to KB_ALLOWED_HOSTS if it is yours")))
			return
		}
		if IsPublic(g.cfg.Public, r.URL.Path) {
			// Never the operator by default: a public route that reached data would see it all.
			next.ServeHTTP(w, r.WithContext(domain.WithPrincipal(r.Context(), domain.Anonymous())))
			return
		}
		limit := g.bodyLimit(r.URL.Path)
		if r.ContentLength > limit {
			// Refused from the header: the body is never read.
			g.writeError(w, r, connect.NewError(connect.CodeResourceExhausted,
				&BodyTooLargeError{Size: r.ContentLength, Limit: limit}))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		p, err := g.authenticate(r)
		if err != nil {
			g.writeError(w, r, err)
			return
		}
		if err := g.allow(p); err != nil {
			g.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(domain.WithPrincipal(r.Context(), p)))
	})
}

func (g *Guard) bodyLimit(path string) int64 {
	limit := g.cfg.MaxBodyBytes
	for prefix, l := range g.cfg.BodyLimits {
		if strings.HasPrefix(path, prefix) && l > limit {
			limit = l
		}
	}
	return limit
}

// hintNoKey says how to get in.
const hintNoKey = "this server needs an API key: send Authorization: Bearer <key> (an operator creates one with canon keys create)"

// authenticate finds who calls. Without keys required, a request that sends no
// bearer key is the operator; one that sends a key is checked and acts as that
// key, as with keys required, so a key is never silently ignored (MCP over
// stdio and HTTP alike).
func (g *Guard) authenticate(r *http.Request) (domain.Principal, error) {
	header := r.Header.Get("Authorization")
	if !g.cfg.Required && !SendsBearer(header) {
		return domain.Operator(), nil
	}
	key, err := ParseBearer(header)
	switch {
	case err != nil:
		return domain.Principal{}, connect.NewError(connect.CodeUnauthenticated, err)
	case key == "":
		return domain.Principal{}, connect.NewError(connect.CodeUnauthenticated, errors.New(hintNoKey))
	}
	p, err := g.store.Authenticate(r.Context(), key)
	switch {
	case errors.Is(err, ErrUnknownKey), errors.Is(err, ErrRevokedKey):
		return domain.Principal{}, connect.NewError(connect.CodeUnauthenticated, err)
	case err != nil:
		g.log.ErrorContext(r.Context(), "authenticate", "err", err)
		return domain.Principal{}, connect.NewError(connect.CodeUnavailable, errors.New("cannot check the API key now; try again shortly"))
	}
	return p, nil
}

// allow takes a token from the key's bucket; the operator is not limited.
func (g *Guard) allow(p domain.Principal) error {
	if p.KeyID == "" || g.cfg.RatePerSecond <= 0 {
		return nil
	}
	lim, ok := g.limiters.Get(p.KeyID)
	if !ok {
		lim = rate.NewLimiter(rate.Limit(g.cfg.RatePerSecond), max(g.cfg.Burst, 1))
		g.limiters.Add(p.KeyID, lim)
	}
	if lim.Allow() {
		return nil
	}
	res := lim.Reserve()
	wait := res.Delay()
	res.Cancel()
	err := connect.NewError(connect.CodeResourceExhausted, fmt.Errorf(
		"rate limit: this key may make %g requests a second (bursts of %d); retry in %s",
		g.cfg.RatePerSecond, max(g.cfg.Burst, 1), wait.Round(time.Millisecond)))
	err.Meta().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	return err
}

// writeError answers in the caller's protocol: Connect, gRPC and gRPC-web get
// their own error shape; other routes get {"code", "message"} JSON.
func (g *Guard) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		ce = connect.NewError(connect.CodeInternal, errors.New("internal error"))
	}
	// A plain HTTP route's JSON body looks like a Connect call to the error
	// writer; only a procedure's path is one.
	var tooLarge *BodyTooLargeError
	if _, procedure := g.policies[r.URL.Path]; !procedure && errors.As(err, &tooLarge) {
		WriteBodyTooLarge(w, tooLarge)
		return
	}
	if g.errors.IsSupported(r) {
		if ce.Code() == connect.CodeUnauthenticated {
			// RFC 9110 wants it on every 401; Connect's error writer does not add it.
			w.Header().Set("WWW-Authenticate", `Bearer realm="canon"`)
		}
		g.errors.Write(w, r, ce) //nolint:errcheck // the caller has gone if the write fails
		return
	}
	for k, v := range ce.Meta() {
		w.Header()[k] = v
	}
	WriteJSONError(w, ce.Code(), ce.Message())
}

// BodyTooLargeError is a request body over its route's limit. A Connect, gRPC
// or gRPC-web caller reads resource_exhausted, as connect-go answers a body
// over its own read limit; a plain HTTP route answers 413 (WriteBodyTooLarge).
type BodyTooLargeError struct {
	Size  int64 // from Content-Length; 0 when the body was found too large while read
	Limit int64
}

func (e *BodyTooLargeError) Error() string {
	if e.Size > 0 {
		return fmt.Sprintf("request body is %d bytes; the limit here is %d", e.Size, e.Limit)
	}
	return fmt.Sprintf("request body is larger than the limit here (%d bytes)", e.Limit)
}

// WriteBodyTooLarge answers a plain HTTP route's oversized body: 413, with the
// code and message a Connect caller gets.
func WriteBodyTooLarge(w http.ResponseWriter, e *BodyTooLargeError) {
	writeJSONError(w, http.StatusRequestEntityTooLarge, connect.CodeResourceExhausted, e.Error())
}

// WriteJSONError writes a Connect code and message as JSON with the matching HTTP status.
func WriteJSONError(w http.ResponseWriter, code connect.Code, msg string) {
	status := map[connect.Code]int{
		connect.CodeInvalidArgument: http.StatusBadRequest, connect.CodeNotFound: http.StatusNotFound,
		connect.CodeUnavailable: http.StatusServiceUnavailable, connect.CodeCanceled: 499,
		connect.CodeDeadlineExceeded: http.StatusGatewayTimeout, connect.CodeUnauthenticated: http.StatusUnauthorized,
		connect.CodePermissionDenied: http.StatusForbidden, connect.CodeResourceExhausted: http.StatusTooManyRequests,
		connect.CodeFailedPrecondition: http.StatusPreconditionFailed,
	}[code]
	if status == 0 {
		status = http.StatusInternalServerError
	}
	writeJSONError(w, status, code, msg)
}

func writeJSONError(w http.ResponseWriter, status int, code connect.Code, msg string) {
	if code == connect.CodeUnauthenticated {
		w.Header().Set("WWW-Authenticate", `Bearer realm="canon"`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"code": code.String(), "message": msg}) //nolint:errcheck,errchkjson // the caller has gone if the write fails
}

// Authorize checks that the request's principal has role and may use every
// project. An unknown project and a forbidden one get the same answer.
func Authorize(ctx context.Context, role domain.Role, projects ...string) error {
	p, ok := domain.PrincipalIn(ctx)
	if !ok {
		// Only a route mounted outside the middleware gets here: refuse, never assume.
		return connect.NewError(connect.CodeUnauthenticated, errors.New(hintNoKey))
	}
	if !p.Role.Includes(role) {
		return connect.NewError(connect.CodePermissionDenied,
			fmt.Errorf("this key's role (%s) may not do this: it needs %s", p.Role, role))
	}
	for _, project := range projects {
		if !p.MayUse(project) {
			return connect.NewError(connect.CodePermissionDenied, fmt.Errorf("this key may not use project %s", domain.Quote(project)))
		}
	}
	return nil
}

// Interceptor authorizes each Connect call by its procedure's policy and the
// projects its message names, caps a key's concurrent streams and audits.
func (g *Guard) Interceptor() connect.Interceptor { return &interceptor{g: g} }

type interceptor struct{ g *Guard }

func (i *interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			return next(ctx, req)
		}
		procedure := req.Spec().Procedure
		policy, ok := i.g.policies[procedure]
		if !ok {
			return nil, connect.NewError(connect.CodePermissionDenied, errors.New("no access policy for "+procedure))
		}
		scope := i.g.scope(req.Any())
		var err error
		if !policy.Public {
			err = Authorize(ctx, policy.Role, scope.Projects...)
		}
		var res connect.AnyResponse
		if err == nil {
			res, err = next(ctx, req)
		}
		if policy.Audit {
			i.g.audit(ctx, procedure, scope, err)
		}
		return res, err
	}
}

func (i *interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i *interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		procedure := conn.Spec().Procedure
		policy, ok := i.g.policies[procedure]
		if !ok {
			return connect.NewError(connect.CodePermissionDenied, errors.New("no access policy for "+procedure))
		}
		if policy.Public {
			return next(ctx, conn)
		}
		if err := Authorize(ctx, policy.Role); err != nil {
			return err
		}
		release, err := i.g.AcquireStream(domain.PrincipalFrom(ctx))
		if err != nil {
			return err
		}
		defer release()
		return next(ctx, &authorizedConn{StreamingHandlerConn: conn, ctx: ctx, g: i.g, policy: policy})
	}
}

// authorizedConn checks the projects of each message the client sends.
type authorizedConn struct {
	connect.StreamingHandlerConn
	ctx    context.Context
	g      *Guard
	policy Policy
}

func (c *authorizedConn) Receive(msg any) error {
	if err := c.StreamingHandlerConn.Receive(msg); err != nil {
		return err
	}
	return Authorize(c.ctx, c.policy.Role, c.g.scope(msg).Projects...)
}

// AcquireStream counts one more open stream of p's key against
// MaxStreamsPerKey, or refuses it (ResourceExhausted) when the key is at the
// cap; release ends it. Connect streams take it in the interceptor, plain HTTP
// streams (the web chat) in their handler, so both share one count per key.
func (g *Guard) AcquireStream(p domain.Principal) (release func(), err error) {
	if p.KeyID == "" || g.cfg.MaxStreamsPerKey <= 0 {
		return func() {}, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.streams[p.KeyID] >= g.cfg.MaxStreamsPerKey {
		return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf(
			"this key already has %d streams open (the limit); close one and retry", g.cfg.MaxStreamsPerKey))
	}
	g.streams[p.KeyID]++
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.streams[p.KeyID]--; g.streams[p.KeyID] <= 0 {
			delete(g.streams, p.KeyID)
		}
	}, nil
}

func (g *Guard) audit(ctx context.Context, procedure string, scope Scope, err error) {
	outcome := "ok"
	if err != nil {
		outcome = connect.CodeOf(err).String()
	}
	e := AuditEntry{Principal: domain.PrincipalFrom(ctx), RPC: procedure, Project: strings.Join(scope.Projects, ","),
		Document: scope.Document, Outcome: outcome}
	if aerr := g.store.Audit(ctx, e); aerr != nil {
		g.log.ErrorContext(ctx, "audit log write failed", "rpc", procedure, "err", aerr)
	}
}

// LocalHost reports whether a request's Host (name or address, with or without a
// port) is a loopback name or address, or one of allowed (case-insensitive).
func LocalHost(host string, allowed []string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true // RFC 6761: these always resolve to loopback
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	return slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(a, host) })
}

// Loopback reports whether addr (host:port) listens only on the loopback interface.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
