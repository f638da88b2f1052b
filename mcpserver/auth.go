package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/canonkb/canon/auth"
	"github.com/canonkb/canon/domain"
)

// Authorizer decides who presented a key: the bearer token of an HTTP request,
// or CANON_API_KEY for `canon mcp` over stdio ("" when none was presented). An
// error refuses the call; a *connect.Error keeps its code, any other error is
// Unauthenticated with its message.
type Authorizer interface {
	Authorize(ctx context.Context, key string) (domain.Principal, error)
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, key string) (domain.Principal, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, key string) (domain.Principal, error) {
	return f(ctx, key)
}

// OpenAccess makes every caller the operator (every project, every document),
// whatever key it sends; it is the default Authorizer. canon itself uses
// OptionalKeys (KB_AUTH=off, stdio) or Keys (KB_AUTH=required).
var OpenAccess Authorizer = AuthorizerFunc(func(context.Context, string) (domain.Principal, error) {
	return domain.Operator(), nil
})

// Keys authorizes with canon's API keys (canon keys create), as the Connect API
// does with KB_AUTH=required: the key's role, projects and groups then scope
// every tool call and the documents it may show.
func Keys(store *auth.Store) Authorizer {
	return AuthorizerFunc(func(ctx context.Context, key string) (domain.Principal, error) {
		if key == "" {
			return domain.Principal{}, connect.NewError(connect.CodeUnauthenticated, errors.New(
				"an API key is required: send Authorization: Bearer <key> (over stdio, set CANON_API_KEY)"))
		}
		p, err := store.Authenticate(ctx, key)
		switch {
		case errors.Is(err, auth.ErrUnknownKey), errors.Is(err, auth.ErrRevokedKey):
			return domain.Principal{}, connect.NewError(connect.CodeUnauthenticated, err)
		case err != nil:
			return domain.Principal{}, connect.NewError(connect.CodeUnavailable, errors.New("cannot check the API key now; try again shortly"))
		}
		return p, nil
	})
}

// OptionalKeys makes a caller without a key the operator and checks the key of
// one that sends it, as Keys does: the Connect API's rule with KB_AUTH=off, and
// `canon mcp`'s with or without CANON_API_KEY. A key that is sent is never ignored.
func OptionalKeys(store *auth.Store) Authorizer {
	keys := Keys(store)
	return AuthorizerFunc(func(ctx context.Context, key string) (domain.Principal, error) {
		if key == "" {
			return domain.Operator(), nil
		}
		return keys.Authorize(ctx, key)
	})
}

func withArticle(r domain.Role) string {
	if r == domain.RoleReader {
		return "a reader"
	}
	return "an " + string(r)
}

// credentialSource reads the key a request presents.
type credentialSource func(extra *mcp.RequestExtra) string

// bearerKey reads "Authorization: Bearer <key>" from an HTTP request.
func bearerKey(extra *mcp.RequestExtra) string {
	if extra == nil || extra.Header == nil {
		return ""
	}
	return bearerFromHeader(extra.Header)
}

func bearerFromHeader(h http.Header) string {
	scheme, token, ok := strings.Cut(h.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// fixedKey is the key of a stdio session: the environment's, for every call.
func fixedKey(key string) credentialSource {
	return func(*mcp.RequestExtra) string { return key }
}

// scoped is a tool input that names the project it touches.
type scoped interface{ project() string }

func (in SearchInput) project() string    { return in.Project }
func (in AskInput) project() string       { return in.Project }
func (in DocumentInput) project() string  { return in.Project }
func (in GapsInput) project() string      { return in.Project }
func (in PromoteInput) project() string   { return in.Project }
func (in SupersedeInput) project() string { return in.Project }
func (in RejectInput) project() string    { return in.Project }

// authorize asks the Authorizer who calls, checks the role the tool needs and
// the project it names (with the Connect API's message: an unknown project and
// a forbidden one read the same), and returns ctx carrying the principal, whose
// groups the core's SQL applies to every document it shows. A caller refused by
// role or project is still returned, for the audit; an unknown one is not.
func authorize(ctx context.Context, a Authorizer, key string, need domain.Role, what, project string) (context.Context, domain.Principal, error) {
	p, err := a.Authorize(ctx, key)
	if err != nil {
		var ce *connect.Error
		if errors.As(err, &ce) {
			return ctx, domain.Principal{}, ce
		}
		return ctx, domain.Principal{}, connect.NewError(connect.CodeUnauthenticated, err)
	}
	if !p.Role.Includes(need) {
		return ctx, p, connect.NewError(connect.CodePermissionDenied,
			fmt.Errorf("%s needs %s key; this key's role is %s", what, withArticle(need), p.Role))
	}
	ctx = domain.WithPrincipal(ctx, p)
	if project != "" {
		if err := auth.Authorize(ctx, need, project); err != nil {
			return ctx, p, err
		}
	}
	return ctx, p, nil
}

// Auditor records an audit_log row (*auth.Store).
type Auditor interface {
	Audit(ctx context.Context, e auth.AuditEntry) error
}

// audit records a tool call as "mcp/<tool>" with its project, document and outcome.
func (s *Server) audit(ctx context.Context, p domain.Principal, tool, project string, in any, err error) {
	if s.d.Auditor == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = connect.CodeOf(err).String()
	}
	e := auth.AuditEntry{Principal: p, RPC: "mcp/" + tool, Project: project, Outcome: outcome}
	if d, ok := in.(documented); ok {
		e.Document = d.document()
	}
	if aerr := s.d.Auditor.Audit(ctx, e); aerr != nil {
		s.d.Logger.ErrorContext(ctx, "audit log write failed", "tool", tool, "err", aerr)
	}
}

// documented is a tool input that names the document it changes.
type documented interface{ document() string }

func (in DocumentInput) document() string  { return in.Slug }
func (in PromoteInput) document() string   { return in.Slug }
func (in SupersedeInput) document() string { return in.OldSlug }
func (in RejectInput) document() string    { return in.Slug }
