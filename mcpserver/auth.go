package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Role is what a caller may do; each role includes the ones below it.
type Role int

// Roles, weakest first.
const (
	RoleReader Role = iota + 1 // search, ask, read documents and gaps
	RoleEditor                 // and the lifecycle operations
	RoleAdmin                  // and whatever administration other surfaces offer
)

func (r Role) String() string {
	switch r {
	case RoleReader:
		return "reader"
	case RoleEditor:
		return "editor"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// Principal is who calls a tool: Name is recorded as the actor of lifecycle changes.
type Principal struct {
	Name string
	Role Role
}

// Authorizer decides who presented a key: the bearer token of an HTTP request,
// or CANON_API_KEY for `canon mcp` over stdio ("" when none was presented). An
// error refuses the call; a *connect.Error keeps its code, any other error is
// Unauthenticated with its message.
type Authorizer interface {
	Authorize(ctx context.Context, key string) (Principal, error)
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, key string) (Principal, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, key string) (Principal, error) {
	return f(ctx, key)
}

// OpenAccess lets every caller do everything as "anonymous", as the Connect API
// does while canon has no API keys; it is the default Authorizer.
var OpenAccess Authorizer = AuthorizerFunc(func(context.Context, string) (Principal, error) {
	return Principal{Name: "anonymous", Role: RoleAdmin}, nil
})

func withArticle(r Role) string {
	if r == RoleReader {
		return "a reader"
	}
	return "an " + r.String()
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

// authorize asks the Authorizer who calls and checks the role the tool needs.
func authorize(ctx context.Context, a Authorizer, key string, need Role, what string) (Principal, error) {
	p, err := a.Authorize(ctx, key)
	if err != nil {
		var ce *connect.Error
		if errors.As(err, &ce) {
			return Principal{}, ce
		}
		return Principal{}, connect.NewError(connect.CodeUnauthenticated, err)
	}
	if p.Role < need {
		return Principal{}, connect.NewError(connect.CodePermissionDenied,
			fmt.Errorf("%s needs %s key; this key's role is %s", what, withArticle(need), p.Role))
	}
	return p, nil
}
