package domain

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Role is what a key may do: each role includes the ones below it.
type Role string

// The roles, weakest first.
const (
	RoleReader Role = "reader" // search, chat, content gaps, graph show
	RoleEditor Role = "editor" // + ingest and lifecycle operations
	RoleAdmin  Role = "admin"  // + key management
)

// Roles lists the roles, weakest first.
var Roles = []Role{RoleReader, RoleEditor, RoleAdmin}

// ParseRole accepts reader, editor or admin.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if !slices.Contains(Roles, r) {
		return "", invalid("unknown role %s: use reader, editor or admin", Quote(s))
	}
	return r, nil
}

// Includes reports whether r grants everything other grants.
func (r Role) Includes(other Role) bool {
	return slices.Index(Roles, r) >= slices.Index(Roles, other) && slices.Contains(Roles, other)
}

// Principal is who makes a request: an API key's identity, or the operator when
// authentication is off or the request comes from the CLI.
type Principal struct {
	// KeyID is the API key's id; empty for the operator.
	KeyID string
	// Name is the key's name, for logs and the lifecycle audit.
	Name string
	// Projects the principal may use; nil with AllProjects.
	Projects []string
	// AllProjects is true only for the operator.
	AllProjects bool
	Role        Role
	// Groups decide which access-restricted documents the principal sees.
	Groups []string
	// AllDocuments is true only for the operator: document ACLs do not apply.
	AllDocuments bool
}

// Operator is the principal of the CLI and of a server running with KB_AUTH=off:
// every project, every document, every operation.
func Operator() Principal {
	return Principal{Name: "operator", AllProjects: true, Role: RoleAdmin, AllDocuments: true}
}

// Anonymous is the principal of a request to a public route (health, metrics,
// the web app's files): no project, no document and no role, so that a data path
// reached without a key sees nothing rather than everything.
func Anonymous() Principal {
	return Principal{Name: "anonymous", Groups: []string{}}
}

// MayUse reports whether the principal may touch the project.
func (p Principal) MayUse(project string) bool {
	return p.AllProjects || slices.Contains(p.Projects, project)
}

// Actor names the principal in audit records.
func (p Principal) Actor() string {
	if p.KeyID == "" {
		return "anonymous"
	}
	return fmt.Sprintf("%s (key %s)", p.Name, p.KeyID)
}

// DocumentGroups is the group list for the document ACL in SQL: nil means the
// principal sees every document; otherwise documents with an access list are
// visible only when it shares a group with these.
func (p Principal) DocumentGroups() []string {
	if p.AllDocuments {
		return nil
	}
	if p.Groups == nil {
		return []string{}
	}
	return p.Groups
}

// DocumentView names what the principal may see of documents, for cache keys:
// results computed for one view must not serve another. "*" is every document.
func (p Principal) DocumentView() string {
	if p.AllDocuments {
		return "*"
	}
	g := slices.Clone(p.Groups)
	slices.Sort(g)
	return strings.Join(slices.Compact(g), ",")
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalIn returns the request's principal and whether the context carries one.
func PrincipalIn(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// PrincipalFrom returns the request's principal; a context without one (the CLI,
// tests of the core packages) is the operator. A served request always carries
// one: the guard puts a key's principal, the operator's (auth off) or Anonymous
// (a public route) in its context.
func PrincipalFrom(ctx context.Context) Principal {
	if p, ok := ctx.Value(principalKey{}).(Principal); ok {
		return p
	}
	return Operator()
}

var groupPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$`)

// ValidGroup reports whether s can name a group (in a key or a document's access list).
func ValidGroup(s string) bool { return groupPattern.MatchString(s) }
