package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/canonkb/canon/auth"
	"github.com/canonkb/canon/domain"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
	"github.com/canonkb/canon/server"
)

// bearer sends an Authorization header with every call of a client.
func bearer(key string) connect.ClientOption {
	return connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if key != "" {
				req.Header().Set("Authorization", "Bearer "+key)
			}
			return next(ctx, req)
		}
	}))
}

func newKey(t *testing.T, pool *pgxpool.Pool, role string, projects []string, groups ...string) (string, auth.KeyInfo) {
	t.Helper()
	key, info, err := auth.NewStore(pool).Create(context.Background(), auth.NewKeyRequest{
		Name: t.Name() + " " + role, Projects: projects, Role: role, Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	return key, info
}

func codeOf(err error) connect.Code {
	if err == nil {
		return 0
	}
	return connect.CodeOf(err)
}

func TestAuthEndToEnd(t *testing.T) {
	t.Parallel()
	srv, pool := newServerWith(t, auth.Config{Required: true})
	reader, _ := newKey(t, pool, "reader", []string{"platform"})
	editor, editorInfo := newKey(t, pool, "editor", []string{"platform"})
	otherProject, _ := newKey(t, pool, "admin", []string{"billing"})
	revoked, revokedInfo := newKey(t, pool, "reader", []string{"platform"})
	if _, err := auth.NewStore(pool).Revoke(context.Background(), revokedInfo.ID); err != nil {
		t.Fatal(err)
	}
	unknown, _, _, _ := auth.NewKey()
	search := func(key, project string) error {
		c := canonv1connect.NewSearchServiceClient(srv.Client(), srv.URL, bearer(key))
		_, err := c.Search(context.Background(), connect.NewRequest(&canonv1.SearchRequest{
			Query: "cache layer", Filters: &canonv1.Filters{ProjectKeys: []string{project}}}))
		return err
	}
	ingest := func(key, project string) error {
		c := canonv1connect.NewIngestServiceClient(srv.Client(), srv.URL, bearer(key))
		_, err := c.Ingest(context.Background(), connect.NewRequest(&canonv1.IngestRequest{ProjectKey: project,
			Files: []*canonv1.IngestFile{{Path: "new.md", Content: []byte("# New\n\nA new page about caches.\n")}}}))
		return err
	}
	tests := []struct {
		name string
		call func() error
		want connect.Code
	}{
		{"no key", func() error { return search("", "platform") }, connect.CodeUnauthenticated},
		{"malformed key", func() error { return search("not-a-key", "platform") }, connect.CodeUnauthenticated},
		{"unknown key", func() error { return search(unknown, "platform") }, connect.CodeUnauthenticated},
		{"revoked key", func() error { return search(revoked, "platform") }, connect.CodeUnauthenticated},
		{"reader searches its project", func() error { return search(reader, "platform") }, 0},
		{"reader calls ingest", func() error { return ingest(reader, "platform") }, connect.CodePermissionDenied},
		{"editor ingests", func() error { return ingest(editor, "platform") }, 0},
		{"key for billing asks platform", func() error { return search(otherProject, "platform") }, connect.CodePermissionDenied},
		{"key for platform asks an unknown project", func() error { return search(reader, "nowhere") }, connect.CodePermissionDenied},
		{"key for platform asks billing", func() error { return search(reader, "billing") }, connect.CodePermissionDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := codeOf(tt.call()); got != tt.want {
				t.Fatalf("code %v, want %v", got, tt.want)
			}
		})
	}

	// An unknown project and a forbidden one read the same, but for the name.
	unknownErr, forbiddenErr := search(reader, "nowhere"), search(reader, "billing")
	if strings.ReplaceAll(unknownErr.Error(), "nowhere", "P") != strings.ReplaceAll(forbiddenErr.Error(), "billing", "P") {
		t.Errorf("unknown %q and forbidden %q differ", unknownErr, forbiddenErr)
	}

	// The lifecycle actor is the key; the audit log has the ingest, allowed and refused.
	canon := canonv1connect.NewCanonServiceClient(srv.Client(), srv.URL, bearer(editor))
	res, err := canon.Promote(context.Background(), connect.NewRequest(&canonv1.PromoteRequest{ProjectKey: "platform", Slug: "new",
		CanonicalType: "decision", Status: "accepted"}))
	if err != nil {
		t.Fatal(err)
	}
	if a := res.Msg.GetChange().GetActor(); !strings.Contains(a, editorInfo.ID) {
		t.Errorf("actor %q does not name the key %s", a, editorInfo.ID)
	}
	// A call refused for a slug that is not text is audited all the same.
	if _, err := canon.Deprecate(context.Background(), connect.NewRequest(&canonv1.DeprecateRequest{ProjectKey: "platform",
		Slug: "a\x00b"})); codeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("NUL in a slug: %v", err)
	}
	var outcomes []string
	rows, err := pool.Query(context.Background(), `SELECT rpc || ' ' || project || ' ' || document || ' ' || outcome
		FROM audit_log ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		outcomes = append(outcomes, s)
	}
	want := []string{
		"/canon.v1.IngestService/Ingest platform  permission_denied",
		"/canon.v1.IngestService/Ingest platform  ok",
		"/canon.v1.CanonService/Promote platform new ok",
		"/canon.v1.CanonService/Deprecate platform a\uFFFDb invalid_argument",
	}
	if strings.Join(outcomes, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit log:\n%s\nwant\n%s", strings.Join(outcomes, "\n"), strings.Join(want, "\n"))
	}
}

func TestKeyServiceAdmin(t *testing.T) {
	t.Parallel()
	srv, pool := newServerWith(t, auth.Config{Required: true})
	admin, _ := newKey(t, pool, "admin", []string{"platform"}, "eng")
	_, foreign := newKey(t, pool, "reader", []string{"billing"})
	c := canonv1connect.NewKeyServiceClient(srv.Client(), srv.URL, bearer(admin))
	ctx := context.Background()
	created, err := c.CreateKey(ctx, connect.NewRequest(&canonv1.CreateKeyRequest{Name: "bot", ProjectKeys: []string{"platform"},
		Role: "reader", Groups: []string{"eng"}}))
	if err != nil {
		t.Fatal(err)
	}
	if !auth.WellFormed(created.Msg.GetKey()) || created.Msg.GetInfo().GetGroups()[0] != "eng" {
		t.Fatalf("created %v", created.Msg)
	}
	if _, err := c.CreateKey(ctx, connect.NewRequest(&canonv1.CreateKeyRequest{ProjectKeys: []string{"billing"}, Role: "reader"})); codeOf(err) != connect.CodePermissionDenied {
		t.Errorf("a key for another project: %v", err)
	}
	// A group opens documents its access lists restrict: an admin grants only its own.
	if _, err := c.CreateKey(ctx, connect.NewRequest(&canonv1.CreateKeyRequest{ProjectKeys: []string{"platform"}, Role: "reader",
		Groups: []string{"eng", "sre"}})); codeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), `may not grant group "sre"`) {
		t.Errorf("a group the admin is not in: %v", err)
	}
	if _, err := c.CreateKey(ctx, connect.NewRequest(&canonv1.CreateKeyRequest{ProjectKeys: []string{"platform"}, Role: "root"})); codeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("an unknown role: %v", err)
	}
	// A bad name is refused saying what is wrong with it.
	for name, want := range map[string]string{
		"a\x00b":                 `the key's name "a\x00b" contains a NUL character (U+0000)`,
		strings.Repeat("n", 201): "the key's name is 201 bytes long; the limit is 200",
	} {
		_, err := c.CreateKey(ctx, connect.NewRequest(&canonv1.CreateKeyRequest{Name: name, ProjectKeys: []string{"platform"}, Role: "reader"}))
		if codeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), want) {
			t.Errorf("name %q: %v, want invalid_argument with %q", name, err, want)
		}
	}
	list, err := c.ListKeys(ctx, connect.NewRequest(&canonv1.ListKeysRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range list.Msg.GetKeys() {
		if k.GetId() == foreign.ID {
			t.Errorf("an admin of platform lists the billing key %v", k)
		}
	}
	if _, err := c.RevokeKey(ctx, connect.NewRequest(&canonv1.RevokeKeyRequest{Id: foreign.ID})); codeOf(err) != connect.CodePermissionDenied {
		t.Errorf("revoking another project's key: %v", err)
	}
	if _, err := c.RevokeKey(ctx, connect.NewRequest(&canonv1.RevokeKeyRequest{Id: "00000000-0000-0000-0000-000000000000"})); codeOf(err) != connect.CodePermissionDenied {
		t.Errorf("revoking no key: %v", err)
	}
	if _, err := c.RevokeKey(ctx, connect.NewRequest(&canonv1.RevokeKeyRequest{Id: created.Msg.GetInfo().GetId()})); err != nil {
		t.Fatal(err)
	}
	search := canonv1connect.NewSearchServiceClient(srv.Client(), srv.URL, bearer(created.Msg.GetKey()))
	_, err = search.Search(ctx, connect.NewRequest(&canonv1.SearchRequest{Query: "x", Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}}}))
	if codeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("a revoked key searches: %v", err)
	}
}

// A key is for projects that exist: CreateKey names the unknown ones
// (NotFound), for the operator and for an admin whose own key lists them; a
// malformed project key is still InvalidArgument.
func TestCreateKeyForUnknownProject(t *testing.T) {
	t.Parallel()
	srv, pool := newServerWith(t, auth.Config{Required: true})
	admin, _ := newKey(t, pool, "admin", []string{"platform", "future"})
	operator, operatorPool := newServerWith(t, auth.Config{})
	tests := []struct {
		name     string
		client   canonv1connect.KeyServiceClient
		projects []string
		want     connect.Code
		inMsg    string
	}{
		{"operator, known project", canonv1connect.NewKeyServiceClient(operator.Client(), operator.URL), []string{"platform"}, 0, ""},
		{"operator, unknown project", canonv1connect.NewKeyServiceClient(operator.Client(), operator.URL),
			[]string{"nope"}, connect.CodeNotFound, `unknown project "nope"`},
		{"operator, two unknown among known", canonv1connect.NewKeyServiceClient(operator.Client(), operator.URL),
			[]string{"platform", "nope", "nada"}, connect.CodeNotFound, `unknown projects "nada", "nope"`},
		{"operator, malformed project", canonv1connect.NewKeyServiceClient(operator.Client(), operator.URL),
			[]string{"Bad Key"}, connect.CodeInvalidArgument, "not a project key"},
		{"admin, its own project that does not exist", canonv1connect.NewKeyServiceClient(srv.Client(), srv.URL, bearer(admin)),
			[]string{"future"}, connect.CodeNotFound, `unknown project "future"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.client.CreateKey(context.Background(), connect.NewRequest(&canonv1.CreateKeyRequest{
				ProjectKeys: tt.projects, Role: "reader"}))
			if codeOf(err) != tt.want || (err != nil && !strings.Contains(err.Error(), tt.inMsg)) {
				t.Errorf("CreateKey(%q) = %v, want %v with %q", tt.projects, err, tt.want, tt.inMsg)
			}
		})
	}
	// Nothing was created for an unknown project.
	for _, p := range []*pgxpool.Pool{pool, operatorPool} {
		var n int
		if err := p.QueryRow(context.Background(), `SELECT count(*) FROM api_keys
			WHERE role = 'reader' AND projects && ARRAY['nope', 'future']`).Scan(&n); err != nil || n != 0 {
			t.Errorf("%d keys created for unknown projects (%v)", n, err)
		}
	}
}

// countingReader is an endless body that counts what the transport reads.
type countingReader struct{ n atomic.Int64 }

func (r *countingReader) Read(p []byte) (int, error) {
	r.n.Add(int64(len(p)))
	return len(p), nil
}

// A body over the limit is refused from its Content-Length, unread: a
// Connect RPC with resource_exhausted (HTTP 429, connect-go's own mapping for a
// body over its read limit), a plain HTTP route with 413.
func TestOversizeBodyIsRefusedUnread(t *testing.T) {
	t.Parallel()
	srv, _ := newServerWith(t, auth.Config{})
	for path, want := range map[string]int{
		canonv1connect.SearchServiceSearchProcedure: http.StatusTooManyRequests,
		"/api/kb/chat": http.StatusRequestEntityTooLarge,
		"/api/chat":    http.StatusRequestEntityTooLarge,
	} {
		t.Run(path, func(t *testing.T) {
			body := &countingReader{}
			const size = 64 << 20
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+path, io.LimitReader(body, size))
			if err != nil {
				t.Fatal(err)
			}
			req.ContentLength = size
			req.Header.Set("Content-Type", "application/json")
			start := time.Now()
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != want || !strings.Contains(string(msg), "the limit here is 8388608") {
				t.Fatalf("status %d: %s; want %d naming the limit", res.StatusCode, msg, want)
			}
			// The client stops sending once answered; what it sent fits in socket buffers.
			if sent := body.n.Load(); sent > size/4 {
				t.Errorf("the client sent %d of %d bytes before the refusal (%s)", sent, size, time.Since(start))
			}
		})
	}
}

// A plain HTTP route's body over its limit, found while reading it (no
// Content-Length, or a route whose own limit is below the server's), is 413
// too, not a 400 for a bad body.
func TestPlainRoutesAnswer413WhileReading(t *testing.T) {
	t.Parallel()
	srv, _ := newServerWith(t, auth.Config{})
	tests := []struct {
		name          string
		path          string
		size          int64
		contentLength bool
	}{
		{"/api/kb/chat, chunked, over the server's limit", "/api/kb/chat", 9 << 20, false},
		{"/api/kb/chat, declared, over its own limit", "/api/kb/chat", 3 << 20, true},
		{"/api/chat, chunked, over its limit", "/api/chat", 9 << 20, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A JSON string that never ends: only its size can be wrong.
			body := io.MultiReader(strings.NewReader(`{"question":"`), io.LimitReader(repeatReader('a'), tt.size))
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+tt.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.contentLength {
				req.ContentLength = tt.size + int64(len(`{"question":"`))
			}
			req.Header.Set("Content-Type", "application/json")
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var e struct{ Code, Message string }
			json.NewDecoder(res.Body).Decode(&e) //nolint:errcheck // checked below
			res.Body.Close()
			if res.StatusCode != http.StatusRequestEntityTooLarge || e.Code != "resource_exhausted" ||
				!strings.Contains(e.Message, "larger than the limit here") {
				t.Errorf("status %d, %+v: want 413 resource_exhausted naming the limit", res.StatusCode, e)
			}
		})
	}
}

// repeatReader is an endless run of one byte.
type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

func TestRateLimitPerKey(t *testing.T) {
	srv, pool := newServerWith(t, auth.Config{Required: true, RatePerSecond: 0.5, Burst: 2})
	key, _ := newKey(t, pool, "reader", []string{"platform"})
	other, _ := newKey(t, pool, "reader", []string{"platform"})
	list := func(key string) error {
		c := canonv1connect.NewProjectServiceClient(srv.Client(), srv.URL, bearer(key))
		_, err := c.ListProjects(context.Background(), connect.NewRequest(&canonv1.ListProjectsRequest{}))
		return err
	}
	for i := range 2 {
		if err := list(key); err != nil {
			t.Fatalf("call %d within the burst: %v", i, err)
		}
	}
	err := list(key)
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeResourceExhausted || !strings.Contains(ce.Message(), "retry in") ||
		ce.Meta().Get("Retry-After") == "" {
		t.Fatalf("over the limit: %v (meta %v)", err, ce.Meta())
	}
	if err := list(other); err != nil {
		t.Errorf("another key is limited too: %v", err)
	}
}

func TestListProjectsShowsOnlyTheKeysProjects(t *testing.T) {
	t.Parallel()
	srv, pool := newServerWith(t, auth.Config{Required: true})
	key, _ := newKey(t, pool, "reader", []string{"billing"})
	c := canonv1connect.NewProjectServiceClient(srv.Client(), srv.URL, bearer(key))
	res, err := c.ListProjects(context.Background(), connect.NewRequest(&canonv1.ListProjectsRequest{}))
	if err != nil || len(res.Msg.GetProjects()) != 0 {
		t.Fatalf("projects %v, %v", res.Msg.GetProjects(), err)
	}
}

// TestEveryRouteIsProtected walks every route and procedure the server mounts: each
// canon.v1 RPC has a policy, and without a key every route but the public ones
// answers Unauthenticated and every non-reader procedure refuses a reader.
func TestEveryRouteIsProtected(t *testing.T) {
	t.Parallel()
	srv, pool := newServerWith(t, auth.Config{Required: true})
	reader, _ := newKey(t, pool, "reader", []string{"platform"})
	policies := server.Policies()

	// Every RPC canon defines has a policy.
	protoregistry.GlobalFiles.RangeFilesByPackage("canon.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			sd := fd.Services().Get(i)
			for j := range sd.Methods().Len() {
				procedure := "/" + string(sd.FullName()) + "/" + string(sd.Methods().Get(j).Name())
				if _, ok := policies[procedure]; !ok {
					t.Errorf("%s has no access policy", procedure)
				}
			}
		}
		return true
	})

	routes := server.Routes(server.Deps{Pool: pool})
	for _, want := range []string{"POST /api/kb/chat", "POST /api/chat", "GET /api/doc/{project}/{slug}", "GET /app/", "GET /{$}"} {
		if !slices.Contains(routes, want) {
			t.Errorf("route %s is not walked (routes %v)", want, routes)
		}
	}
	for _, route := range routes {
		method, path, found := strings.Cut(route, " ")
		if found || !strings.HasSuffix(path, "/") {
			// A plain HTTP route (/api/..., /app/, /healthz): no key, no answer (unless public).
			if !found {
				method = http.MethodGet
			}
			path = wildcard.ReplaceAllString(strings.TrimSuffix(path, "{$}"), "x")
			res := rawRequest(t, method, srv.URL+path, "")
			public := auth.IsPublic(server.PublicPaths(), path)
			if public == (res == http.StatusUnauthorized) {
				t.Errorf("%s: status %d without a key (public %v)", route, res, public)
			}
			continue
		}
		var procedures []string
		for p := range policies {
			if strings.HasPrefix(p, path) {
				procedures = append(procedures, p)
			}
		}
		if len(procedures) == 0 {
			t.Errorf("route %s serves no procedure with a policy", route)
		}
		for _, p := range procedures {
			for _, key := range []string{"", reader} {
				c := connect.NewClient[emptypb.Empty, emptypb.Empty](h2cClient(), srv.URL+p, connect.WithGRPC(), bearer(key))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := c.CallUnary(ctx, connect.NewRequest(&emptypb.Empty{}))
				cancel()
				got := codeOf(err)
				switch {
				case policies[p].Public:
					if got == connect.CodeUnauthenticated || got == connect.CodePermissionDenied {
						t.Errorf("%s is public: %v", p, err)
					}
				case key == "" && got != connect.CodeUnauthenticated:
					t.Errorf("%s without a key: %v", p, err)
				case key != "" && policies[p].Role != domain.RoleReader && got != connect.CodePermissionDenied:
					t.Errorf("%s with a reader key: %v, want permission_denied", p, err)
				}
			}
		}
	}
}

// wildcard is a path pattern's {name} segment, walked with a sample value.
var wildcard = regexp.MustCompile(`\{[^}]*\}`)

func rawRequest(t *testing.T, method, url, key string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestDocumentACLInSearch: a page with access: [secret] is found by the operator's
// ingest, hidden from a reader without the group, and found by one holding it.
func TestDocumentACLInSearch(t *testing.T) {
	t.Parallel()
	srv, pool := newServerWith(t, auth.Config{Required: true})
	editor, _ := newKey(t, pool, "editor", []string{"platform"})
	plain, _ := newKey(t, pool, "reader", []string{"platform"})
	insider, _ := newKey(t, pool, "reader", []string{"platform"}, "secret")
	ic := canonv1connect.NewIngestServiceClient(srv.Client(), srv.URL, bearer(editor))
	if _, err := ic.Ingest(context.Background(), connect.NewRequest(&canonv1.IngestRequest{ProjectKey: "platform",
		Files: []*canonv1.IngestFile{{Path: "zeppelin.md",
			Content: []byte("---\naccess: [secret]\n---\n# Zeppelin plan\n\nThe zeppelin hangar opens in spring.\n")}}})); err != nil {
		t.Fatal(err)
	}
	found := func(key string) bool {
		c := canonv1connect.NewSearchServiceClient(srv.Client(), srv.URL, bearer(key))
		res, err := c.Search(context.Background(), connect.NewRequest(&canonv1.SearchRequest{
			Query: "zeppelin hangar", Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}}}))
		if err != nil {
			t.Fatal(err)
		}
		r := res.Msg.GetResult()
		for _, block := range [][]*canonv1.Hit{r.GetPrimary(), r.GetRunnerUp(), r.GetExpanded(), r.GetRejected()} {
			for _, h := range block {
				if h.GetDocId() == "zeppelin" {
					return true
				}
			}
		}
		return false
	}
	if found(plain) {
		t.Error("a reader without the group sees the restricted page")
	}
	if !found(insider) {
		t.Error("a reader holding the group does not see the restricted page")
	}
}

// TestContentGapAudience: a refused question is listed to callers holding every
// group its askers held, so a question asked under a wider ACL does not reach
// readers of a narrower one; once a narrower reader asks it too, they see it.
func TestContentGapAudience(t *testing.T) {
	srv, pool := newServerWith(t, auth.Config{Required: true})
	insider, _ := newKey(t, pool, "reader", []string{"platform"}, "g1")
	wider, _ := newKey(t, pool, "reader", []string{"platform"}, "g1", "g2")
	plain, _ := newKey(t, pool, "reader", []string{"platform"})
	const question = "what is the acquisition price of zyxwvut holdings?"
	ask := func(key string) {
		c := canonv1connect.NewChatServiceClient(srv.Client(), srv.URL, bearer(key))
		res, err := c.Chat(context.Background(), connect.NewRequest(&canonv1.ChatRequest{Question: question,
			Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}}}))
		if err != nil || res.Msg.GetRefusalReason() == "" {
			t.Fatalf("ask: %v, %v: want a refusal", res, err)
		}
	}
	// count is how often the key's gap listing says the question was asked (0: not listed).
	count := func(key string) int64 {
		c := canonv1connect.NewChatServiceClient(srv.Client(), srv.URL, bearer(key))
		res, err := c.ContentGaps(context.Background(), connect.NewRequest(&canonv1.ContentGapsRequest{ProjectKey: "platform"}))
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range res.Msg.GetGaps() {
			if g.GetQuestion() == question {
				return g.GetCount()
			}
		}
		return 0
	}
	listed := func(key string) bool { return count(key) > 0 }
	// The chat log writes in the background: wait for a caller who must see it.
	waitListed := func(key string, want int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if count(key) == want {
				return
			}
		}
		t.Fatalf("the gap was not listed with count %d within 10 s", want)
	}
	ask(insider)
	waitListed(wider, 1)
	if !listed(insider) {
		t.Error("the asker does not see its own gap")
	}
	if listed(plain) {
		t.Error("a reader without the asker's group sees the gap")
	}
	ask(plain)
	waitListed(wider, 2)
	if !listed(plain) {
		t.Error("a reader who asked the question too does not see the gap")
	}
}

// An Ingest request writes to its own project only: a file whose frontmatter
// names another project is refused, whoever asks, and nothing of that project
// changes (a key for billing once wrote, and overwrote, platform's decisions).
func TestIngestStaysInTheRequestsProject(t *testing.T) {
	t.Parallel()
	srv, pool := newServerWith(t, auth.Config{Required: true})
	billing, _ := newKey(t, pool, "editor", []string{"billing"})
	both, _ := newKey(t, pool, "editor", []string{"billing", "platform"})
	stored := func() string {
		var s string
		if err := pool.QueryRow(context.Background(), `SELECT string_agg(d.slug || ':' || d.content_hash, ',' ORDER BY d.slug)
			FROM documents d JOIN projects p ON p.id = d.project_id WHERE p.project_key = 'platform'`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := stored()
	file := func(path, id string) *canonv1.IngestFile {
		return &canonv1.IngestFile{Path: path, Content: []byte("---\nid: " + id + "\nproject: platform\ntype: decision\nstatus: accepted\n---\n" +
			"# Cache layer standard\n\nWe standardised on Memcached as the single shared cache layer.\n")}
	}
	for _, tc := range []struct {
		name, key string
		want      string
	}{
		{"a key for billing alone", billing, `the frontmatter names project "platform", but this request ingests into project "billing"`},
		{"a key for both, in a request for billing", both, `the frontmatter names project "platform", but this request ingests into project "billing"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := canonv1connect.NewIngestServiceClient(srv.Client(), srv.URL, bearer(tc.key))
			res, err := c.Ingest(context.Background(), connect.NewRequest(&canonv1.IngestRequest{ProjectKey: "billing",
				Files: []*canonv1.IngestFile{file("inj.md", "injected"), file("platform/decisions/dec-cache-v2.md", "dec-cache-v2")}}))
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Msg.GetErrors(); len(got) != 2 || !strings.Contains(got[0].GetReason(), tc.want) || !strings.Contains(got[1].GetReason(), tc.want) {
				t.Errorf("errors %v, want both files refused with %q", got, tc.want)
			}
			if res.Msg.GetCreated()+res.Msg.GetUpdated() != 0 {
				t.Errorf("created %d, updated %d: want nothing written", res.Msg.GetCreated(), res.Msg.GetUpdated())
			}
		})
	}
	if after := stored(); after != before {
		t.Errorf("platform's documents changed:\nbefore %s\nafter  %s", before, after)
	}
}

// Without keys the server answers only its own names (DNS rebinding), and the
// plain JSON chat routes take JSON only (a cross-site form post).
func TestWithoutKeysOnlyLocalRequests(t *testing.T) {
	t.Parallel()
	srv, _ := newServerWith(t, auth.Config{AllowedHosts: []string{"canon.internal"}})
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	send := func(method, path, host, contentType, body string) int {
		req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host + port
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body) //nolint:errcheck // only the status matters
		res.Body.Close()
		return res.StatusCode
	}
	search := `{"query":"cache","filters":{"project_keys":["platform"]}}`
	chat := `{"question":"what cache layer did we standardise on?","project_key":"platform"}`
	for _, tc := range []struct {
		name, method, path, host, contentType, body string
		want                                        int
	}{
		{"search at 127.0.0.1", "POST", "/canon.v1.SearchService/Search", "127.0.0.1", "application/json", search, 200},
		{"search at localhost", "POST", "/canon.v1.SearchService/Search", "localhost", "application/json", search, 200},
		{"search at an allowed name", "POST", "/canon.v1.SearchService/Search", "canon.internal", "application/json", search, 200},
		{"search at another name", "POST", "/canon.v1.SearchService/Search", "attacker.example", "application/json", search, 403},
		{"a document at another name", "GET", "/api/doc/platform/dec-cache-v2", "attacker.example", "", "", 403},
		{"the web app at another name", "GET", "/app/chat", "attacker.example", "", "", 403},
		{"a document at localhost", "GET", "/api/doc/platform/dec-cache-v2", "localhost", "", "", 200},
		{"JSON chat as JSON", "POST", "/api/kb/chat", "localhost", "application/json; charset=utf-8", chat, 200},
		{"JSON chat as text/plain", "POST", "/api/kb/chat", "localhost", "text/plain", chat, 415},
		{"JSON chat as a form", "POST", "/api/kb/chat", "localhost", "application/x-www-form-urlencoded", chat, 415},
		{"web chat as text/plain", "POST", "/api/chat", "localhost", "text/plain",
			`{"messages":[{"role":"user","parts":[{"type":"text","text":"cache?"}]}],"project":"platform"}`, 415},
	} {
		if got := send(tc.method, tc.path, tc.host, tc.contentType, tc.body); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
	}
}

// authorization sends an Authorization header value as is with every call.
func authorization(value string) connect.ClientOption {
	return connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", value)
			return next(ctx, req)
		}
	}))
}

// TestAKeySentWithoutKeysRequiredIsChecked: with KB_AUTH=off a request without
// a key is the operator, and one that sends a bearer key acts as that key
// (its projects, its role) or is refused when the key is bad, never silently
// the operator. Another scheme (a proxy's Basic credentials) is not canon's.
func TestAKeySentWithoutKeysRequiredIsChecked(t *testing.T) {
	t.Parallel()
	srv, pool := newServerWith(t, auth.Config{})
	billing, _ := newKey(t, pool, "reader", []string{"billing"})
	reader, _ := newKey(t, pool, "reader", []string{"platform"})
	revoked, info := newKey(t, pool, "reader", []string{"platform"})
	if _, err := auth.NewStore(pool).Revoke(context.Background(), info.ID); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, header string
		projects     int // listed (the handbook holds platform and payments); -1 when refused
		code         connect.Code
		ingest       connect.Code // a reader's refusal of an editor's RPC; 0 not tried
	}{
		{"no key", "", 2, 0, 0},
		{"another project's key", "Bearer " + billing, 0, 0, 0},
		{"a reader's key", "Bearer " + reader, 1, 0, connect.CodePermissionDenied},
		{"an unknown key", "Bearer canon_" + strings.Repeat("A", 43), -1, connect.CodeUnauthenticated, 0},
		{"a malformed key", "Bearer canon_bogus", -1, connect.CodeUnauthenticated, 0},
		{"a revoked key", "Bearer " + revoked, -1, connect.CodeUnauthenticated, 0},
		{"Bearer without a key", "Bearer", -1, connect.CodeUnauthenticated, 0},
		{"a proxy's Basic credentials", "Basic dXNlcjpwYXNz", 2, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []connect.ClientOption
			if tt.header != "" {
				opts = append(opts, authorization(tt.header))
			}
			c := canonv1connect.NewProjectServiceClient(srv.Client(), srv.URL, opts...)
			res, err := c.ListProjects(context.Background(), connect.NewRequest(&canonv1.ListProjectsRequest{}))
			switch {
			case tt.projects < 0 && codeOf(err) != tt.code:
				t.Errorf("got %v, want %v", err, tt.code)
			case tt.projects >= 0 && (err != nil || len(res.Msg.GetProjects()) != tt.projects):
				t.Errorf("got %v, %v; want %d projects", res, err, tt.projects)
			}
			if tt.ingest != 0 {
				ic := canonv1connect.NewIngestServiceClient(srv.Client(), srv.URL, opts...)
				_, err := ic.Ingest(context.Background(), connect.NewRequest(&canonv1.IngestRequest{ProjectKey: "platform"}))
				if codeOf(err) != tt.ingest {
					t.Errorf("ingest: %v, want %v", err, tt.ingest)
				}
			}
		})
	}
}
