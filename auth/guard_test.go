package auth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"

	"github.com/canonkb/canon/domain"
)

func TestStreamCapPerKey(t *testing.T) {
	t.Parallel()
	g := NewGuard(nil, Config{MaxStreamsPerKey: 2}, nil, nil, nil)
	a := domain.Principal{KeyID: "a", Role: domain.RoleReader}
	b := domain.Principal{KeyID: "b", Role: domain.RoleReader}
	r1, err := g.AcquireStream(a)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := g.AcquireStream(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.AcquireStream(a); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("third stream: %v", err)
	}
	rb, err := g.AcquireStream(b)
	if err != nil {
		t.Fatalf("another key: %v", err)
	}
	r1()
	r3, err := g.AcquireStream(a)
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	for _, release := range []func(){r2, r3, rb} {
		release()
	}
	if len(g.streams) != 0 {
		t.Errorf("streams left: %v", g.streams)
	}
	if _, err := g.AcquireStream(domain.Operator()); err != nil {
		t.Errorf("the operator is not capped: %v", err)
	}
}

func TestAuthorize(t *testing.T) {
	t.Parallel()
	reader := domain.Principal{KeyID: "k", Role: domain.RoleReader, Projects: []string{"a"}}
	tests := []struct {
		name     string
		ctx      context.Context
		role     domain.Role
		projects []string
		want     connect.Code
	}{
		{"no principal", context.Background(), domain.RoleReader, nil, connect.CodeUnauthenticated},
		{"reader reads", domain.WithPrincipal(context.Background(), reader), domain.RoleReader, []string{"a"}, 0},
		{"reader edits", domain.WithPrincipal(context.Background(), reader), domain.RoleEditor, []string{"a"}, connect.CodePermissionDenied},
		{"other project", domain.WithPrincipal(context.Background(), reader), domain.RoleReader, []string{"a", "b"}, connect.CodePermissionDenied},
		{"operator", domain.WithPrincipal(context.Background(), domain.Operator()), domain.RoleAdmin, []string{"z"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Authorize(tt.ctx, tt.role, tt.projects...)
			if got := connect.CodeOf(err); (err == nil && tt.want != 0) || (err != nil && got != tt.want) {
				t.Fatalf("Authorize = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestLoopback(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:8787": true, "[::1]:8787": true, "localhost:1": true, "127.9.9.9:1": true,
		"0.0.0.0:8787": false, ":8787": false, "10.0.0.5:80": false, "[::]:80": false, "example.com:80": false, "junk": false,
	} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v", addr, got)
		}
	}
}

// TestPublicRouteIsAnonymous: a request to a public route carries a principal
// that may use no project and see no document, with auth on or off.
func TestPublicRouteIsAnonymous(t *testing.T) {
	t.Parallel()
	for _, required := range []bool{true, false} {
		g := NewGuard(nil, Config{Required: required, Public: []string{"/healthz", "/app/"}}, nil, nil, nil)
		for _, path := range []string{"/healthz", "/app/index.html"} {
			var got domain.Principal
			var carried bool
			h := g.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				got, carried = domain.PrincipalIn(r.Context())
			}))
			req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, path, nil)
			req.Host = "127.0.0.1:8787" // without keys only local names are answered
			h.ServeHTTP(httptest.NewRecorder(), req)
			switch {
			case !carried:
				t.Errorf("required %v, %s: no principal in the context (PrincipalFrom would give the operator)", required, path)
			case got.AllProjects || got.AllDocuments || got.MayUse("platform") || got.Role.Includes(domain.RoleReader):
				t.Errorf("required %v, %s: principal %+v may do something", required, path, got)
			case got.DocumentGroups() == nil:
				t.Errorf("required %v, %s: DocumentGroups nil means every document", required, path)
			}
		}
	}
}

func TestLocalHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost:8787": true, "LOCALHOST": true, "app.localhost:8787": true, "127.0.0.1:8787": true,
		"127.1.2.3": true, "[::1]:8787": true, "::1": true, "localhost.:8787": true,
		"team.example.com:8787": true, // in allowed
		"attacker.example:8787": false, "10.0.0.5:8787": false, "": false, "localhost.attacker.example": false,
		"[::ffff:10.0.0.1]:8787": false,
	} {
		if got := LocalHost(host, []string{"Team.Example.com"}); got != want {
			t.Errorf("LocalHost(%q) = %v, want %v", host, got, want)
		}
	}
}
