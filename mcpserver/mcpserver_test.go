package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/canonkb/canon/auth"
	"github.com/canonkb/canon/chat"
	"github.com/canonkb/canon/chatlog"
	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/hierarchy"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/internal/mcptest"
	"github.com/canonkb/canon/llm"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/mcpserver"
	"github.com/canonkb/canon/search"
	"github.com/canonkb/canon/server"
)

// newServer wires the MCP server as `canon serve` does, over a fresh database
// holding the example handbook.
func newServer(t *testing.T, authorizer mcpserver.Authorizer) *mcpserver.Server {
	t.Helper()
	s, _ := newServerPool(t, func(*pgxpool.Pool) mcpserver.Authorizer { return authorizer }, false)
	return s
}

// newServerPool is newServer with an authorizer over its database, which also
// holds a page only the group "secret" may read; audited records the editor
// tools' calls in its audit_log.
func newServerPool(t *testing.T, authorizer func(*pgxpool.Pool) mcpserver.Authorizer, audited bool,
	opts ...func(*mcpserver.Deps)) (*mcpserver.Server, *pgxpool.Pool) {
	t.Helper()
	pool := dbtest.FreshPool(t)
	emb := embed.NewHash(384)
	files, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, ingest.File{Path: "zeppelin.md",
		Content: []byte("---\naccess: [secret]\n---\n# Zeppelin plan\n\nThe zeppelin hangar opens in spring.\n")})
	if _, err := ingest.New(pool, emb, markdown.Options{}).Ingest(context.Background(), files, ingest.Options{Project: "platform"}); err != nil {
		t.Fatal(err)
	}
	flat := search.New(pool, emb, search.Config{Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed),
		Profile: domain.ProfileHashKeywordLed, Graph: search.DefaultGraphConfig()})
	twoPass := hierarchy.New(pool, flat, hierarchy.DefaultConfig())
	prompt, err := domain.ParsePrompt(domain.DefaultPromptTemplate())
	if err != nil {
		t.Fatal(err)
	}
	logger := chatlog.New(pool, 10, nil)
	t.Cleanup(func() { logger.Close(context.Background()) })
	svc := chat.New(twoPass, llm.NewExtractive(), prompt, logger, chat.Config{
		Gate: domain.Gate{MinSimilarity: 0.26, MinKeywordCoverage: 0.70}, SupportThreshold: 0.5})
	d := mcpserver.Deps{Pool: pool, Search: twoPass, Chat: svc, Authorizer: authorizer(pool)}
	if audited {
		d.Auditor = auth.NewStore(pool)
	}
	for _, o := range opts {
		o(&d)
	}
	return mcpserver.New(d), pool
}

// connectHTTP opens a client session to an MCP endpoint, sending key as the bearer token.
func connectHTTP(t *testing.T, endpoint, key string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: bearer{key: key, next: http.DefaultTransport}}
	client := mcp.NewClient(&mcp.Implementation{Name: "canon-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.key != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return b.next.RoundTrip(r)
}

// TestEveryToolOverStreamableHTTP mounts the server as `canon serve` does (at
// /mcp beside the Connect API) and drives it with the SDK's own HTTP client.
func TestEveryToolOverStreamableHTTP(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	h := server.Handler(server.Deps{MCP: s.HTTPHandler()})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cs := connectHTTP(t, srv.URL+"/mcp", "")
	mcptest.ExerciseAll(t, cs)
	// A message may be as large over HTTP as over stdio (MaxMessageBytes), not
	// the SDK's 4 MiB: this one reaches the tool and gets its error.
	if _, text, isError := mcptest.Call(t, cs, "search", map[string]any{"project": "platform", "query": strings.Repeat("x", 6<<20)}); !isError ||
		!strings.Contains(text, "invalid_argument: query is 6291456 characters long") {
		t.Errorf("a 6 MiB query: isError=%v %.200s", isError, text)
	}
}

// keys is an authorizer with one reader and one editor key.
var keys = mcpserver.AuthorizerFunc(func(_ context.Context, key string) (domain.Principal, error) {
	switch key {
	case "reader-key":
		return domain.Principal{KeyID: "r1", Name: "rita", AllProjects: true, Role: domain.RoleReader}, nil
	case "editor-key":
		return domain.Principal{KeyID: "e1", Name: "ed", AllProjects: true, Role: domain.RoleEditor}, nil
	case "":
		return domain.Principal{}, errors.New("an API key is required: send Authorization: Bearer <key>")
	}
	return domain.Principal{}, connect.NewError(connect.CodeUnauthenticated, errors.New("unknown API key"))
})

func TestRolesOverHTTP(t *testing.T) {
	t.Parallel()
	s := newServer(t, keys)
	srv := httptest.NewServer(s.HTTPHandler())
	t.Cleanup(srv.Close)
	deprecate := map[string]any{"project": "platform", "slug": "std-logging-logfmt"}
	search := map[string]any{"query": "cache", "project": "platform"}
	tests := []struct {
		name, key, tool string
		args            map[string]any
		want            string // "" for success
	}{
		{"no key", "", "search", search, "unauthenticated: an API key is required"},
		{"unknown key", "wrong", "search", search, "unauthenticated: unknown API key"},
		{"reader searches", "reader-key", "search", search, ""},
		{"reader cannot deprecate", "reader-key", "deprecate", deprecate, "permission_denied: the deprecate tool needs an editor key"},
		{"editor deprecates", "editor-key", "deprecate", deprecate, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, text, isError := mcptest.Call(t, connectHTTP(t, srv.URL, tt.key), tt.tool, tt.args)
			switch {
			case tt.want == "" && isError:
				t.Errorf("want success, got %s", text)
			case tt.want != "" && (!isError || !strings.Contains(text, tt.want)):
				t.Errorf("want an error with %q, got isError=%v %s", tt.want, isError, text)
			}
			if tt.tool == "deprecate" && !isError && out["actor"] != "ed (key e1)" {
				t.Errorf("the change should record the key's principal as actor: %v", out)
			}
		})
	}
	// Resources need a reader key too.
	cs := connectHTTP(t, srv.URL, "")
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "canon://platform/dec-cache-v2"}); err == nil ||
		!strings.Contains(err.Error(), "API key") {
		t.Errorf("reading without a key: %v", err)
	}
}

// TestStdioKeyReachesAuthorizer runs a session over an in-memory transport (the
// stdio path of `canon mcp`): the key given to Run is the one authorized.
func TestStdioKeyReachesAuthorizer(t *testing.T) {
	t.Parallel()
	s := newServer(t, keys)
	for key, want := range map[string]bool{"reader-key": false, "editor-key": true} {
		serverT, clientT := mcp.NewInMemoryTransports()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx, serverT, key) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, clientT, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, text, isError := mcptest.Call(t, cs, "archive", map[string]any{"project": "platform", "slug": "inc-2022-10-dns-outage"})
		if isError == want {
			t.Errorf("key %s: archive isError=%v %s", key, isError, text)
		}
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("run: %v", err)
		}
	}
}

// TestAPIKeysScopeTools authorizes with canon's own keys (as /mcp does with
// KB_AUTH=required): a key reaches only its projects, and only the documents
// its groups allow, in every tool and resource.
func TestAPIKeysScopeTools(t *testing.T) {
	s, pool := newServerPool(t, func(p *pgxpool.Pool) mcpserver.Authorizer { return mcpserver.Keys(auth.NewStore(p)) }, true)
	newKey := func(role string, projects []string, groups ...string) string {
		key, _, err := auth.NewStore(pool).Create(context.Background(), auth.NewKeyRequest{Name: role, Projects: projects,
			Role: role, Groups: groups})
		if err != nil {
			t.Fatal(err)
		}
		return key
	}
	plain := newKey("reader", []string{"platform"})
	insider := newKey("reader", []string{"platform"}, "secret")
	payments := newKey("editor", []string{"payments"})
	editor := newKey("editor", []string{"platform"})
	srv := httptest.NewServer(s.HTTPHandler())
	t.Cleanup(srv.Close)
	zeppelin := map[string]any{"project": "platform", "slug": "zeppelin"}
	tests := []struct {
		name, key, tool string
		args            map[string]any
		want            string // "" for success; "!zeppelin" for success without the page
	}{
		{"no key", "", "search", map[string]any{"query": "cache", "project": "platform"}, "unauthenticated: an API key is required"},
		{"bad key", "canon_nope", "search", map[string]any{"query": "cache", "project": "platform"}, "unauthenticated"},
		{"other project's search", payments, "search", map[string]any{"query": "cache", "project": "platform"},
			`permission_denied: this key may not use project "platform"`},
		{"other project's document", payments, "get_document", map[string]any{"project": "platform", "slug": "dec-cache-v2"},
			"permission_denied"},
		{"other project's lifecycle", payments, "deprecate", map[string]any{"project": "platform", "slug": "std-logging-logfmt"},
			"permission_denied"},
		{"a reader's lifecycle", plain, "deprecate", map[string]any{"project": "platform", "slug": "std-logging-logfmt"},
			"permission_denied"},
		{"an editor's lifecycle", editor, "deprecate", map[string]any{"project": "platform", "slug": "std-logging-logfmt"}, "!zeppelin"},
		{"hidden page read", plain, "get_document", zeppelin, `not_found: no document "zeppelin"`},
		{"hidden page graph", plain, "graph_neighbours", zeppelin, "not_found"},
		{"hidden page searched", plain, "search", map[string]any{"query": "zeppelin hangar", "project": "platform"}, "!zeppelin"},
		{"hidden page asked", plain, "ask", map[string]any{"question": "when does the zeppelin hangar open?", "project": "platform"}, "!zeppelin"},
		{"insider reads it", insider, "get_document", zeppelin, ""},
		{"insider searches it", insider, "search", map[string]any{"query": "zeppelin hangar", "project": "platform"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, text, isError := mcptest.Call(t, connectHTTP(t, srv.URL, tt.key), tt.tool, tt.args)
			switch {
			case tt.want == "!zeppelin":
				if isError || strings.Contains(text, "zeppelin\"") || strings.Contains(text, "Zeppelin plan") {
					t.Errorf("want success without the hidden page, got isError=%v %s", isError, text)
				}
			case tt.want == "" && isError:
				t.Errorf("want success, got %s", text)
			case tt.want == "" && !strings.Contains(text, "Zeppelin plan"):
				t.Errorf("the insider does not get the page: %s", text)
			case tt.want != "" && (!isError || !strings.Contains(text, tt.want)):
				t.Errorf("want an error with %q, got isError=%v %s", tt.want, isError, text)
			}
		})
	}
	// Every editor-tool call of a known key is on the record, allowed or refused.
	rows, err := pool.Query(context.Background(),
		`SELECT actor, rpc, project, document, outcome FROM audit_log WHERE rpc LIKE 'mcp/%' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var actor, rpc, project, document, outcome string
		if err := rows.Scan(&actor, &rpc, &project, &document, &outcome); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Join([]string{strings.Fields(actor)[0], rpc, project, document, outcome}, " "))
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	want := []string{
		"editor mcp/deprecate platform std-logging-logfmt permission_denied",
		"reader mcp/deprecate platform std-logging-logfmt permission_denied",
		"editor mcp/deprecate platform std-logging-logfmt ok",
	}
	if !slices.Equal(got, want) {
		t.Errorf("audit_log:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// list_projects shows the key's projects only; the resource of a hidden page is not found.
	_, text, _ := mcptest.Call(t, connectHTTP(t, srv.URL, payments), "list_projects", map[string]any{})
	if strings.Contains(text, "platform") {
		t.Errorf("a payments key lists platform: %s", text)
	}
	cs := connectHTTP(t, srv.URL, plain)
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "canon://platform/zeppelin"}); err == nil {
		t.Error("a reader without the group reads the hidden page as a resource")
	}
	if _, err := connectHTTP(t, srv.URL, insider).ReadResource(context.Background(),
		&mcp.ReadResourceParams{URI: "canon://platform/zeppelin"}); err != nil {
		t.Errorf("the insider cannot read the page as a resource: %v", err)
	}
}

// initialize is an MCP initialize request, as a client's first POST to /mcp.
const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`

// postMCP sends body to endpoint addressed to host (its port kept), with key as
// the bearer token when set, and returns the status and the body. A session
// it opens is ended (DELETE) when the test ends.
func postMCP(t *testing.T, endpoint, host, key, body string) (int, string) {
	t.Helper()
	status, header, out := sendMCP(t, http.MethodPost, endpoint, host, key, "", body)
	if id := header.Get("Mcp-Session-Id"); id != "" {
		t.Cleanup(func() { sendMCP(t, http.MethodDelete, endpoint, host, key, id, "") })
	}
	return status, out
}

func sendMCP(t *testing.T, method, endpoint, host, key, session, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host + endpoint[strings.LastIndex(endpoint, ":"):strings.LastIndex(endpoint, "/")]
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, string(out)
}

// TestMCPHostPolicyIsTheServers: /mcp answers the Host names the Connect
// routes answer (a same-host reverse proxy keeping its client's Host, with a
// key or a KB_ALLOWED_HOSTS name) and refuses the others as they are refused,
// in canon's JSON error, not the SDK's own localhost check.
func TestMCPHostPolicyIsTheServers(t *testing.T) {
	t.Parallel()
	s, pool := newServerPool(t, func(p *pgxpool.Pool) mcpserver.Authorizer { return mcpserver.Keys(auth.NewStore(p)) }, false)
	key, _, err := auth.NewStore(pool).Create(context.Background(), auth.NewKeyRequest{Name: "proxy", Projects: []string{"platform"}, Role: "reader"})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(cfg auth.Config) string {
		srv := httptest.NewServer(server.Handler(server.Deps{Pool: pool, MCP: s.HTTPHandler(), Auth: cfg}))
		t.Cleanup(srv.Close)
		return srv.URL + "/mcp"
	}
	open := serve(auth.Config{AllowedHosts: []string{"canon.internal"}})
	keyed := serve(auth.Config{Required: true})
	tests := []struct {
		name, endpoint, host, key string
		status                    int
		body                      string // in the answer
	}{
		{"no keys, loopback address", open, "", "", http.StatusOK, `"serverInfo"`},
		{"no keys, localhost", open, "localhost", "", http.StatusOK, `"serverInfo"`},
		{"no keys, a name under localhost", open, "foo.localhost", "", http.StatusOK, `"serverInfo"`},
		{"no keys, a KB_ALLOWED_HOSTS name", open, "canon.internal", "", http.StatusOK, `"serverInfo"`},
		{"no keys, another name", open, "attacker.example", "", http.StatusForbidden,
			`{"code":"permission_denied","message":"this server has no API keys (KB_AUTH=off) and answers only requests addressed to localhost`},
		{"keys, a proxy's name with a key", keyed, "canon.example.com", key, http.StatusOK, `"serverInfo"`},
		{"keys, a proxy's name without a key", keyed, "canon.example.com", "", http.StatusUnauthorized, `"code":"unauthenticated"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := postMCP(t, tt.endpoint, tt.host, tt.key, initialize)
			if status != tt.status || !strings.Contains(body, tt.body) {
				t.Errorf("status %d, body %q; want %d with %q", status, body, tt.status, tt.body)
			}
		})
	}
}

// TestAKeySentToMCPWithoutKeysRequiredIsChecked: with KB_AUTH=off (the guard
// and OptionalKeys, as `canon serve` wires them) a client that sends a key acts
// as that key on /mcp, as over stdio and on the Connect routes; a bad key is
// refused; only a client without one is the operator.
func TestAKeySentToMCPWithoutKeysRequiredIsChecked(t *testing.T) {
	t.Parallel()
	s, pool := newServerPool(t, func(p *pgxpool.Pool) mcpserver.Authorizer { return mcpserver.OptionalKeys(auth.NewStore(p)) }, false)
	store := auth.NewStore(pool)
	newKey := func(role string, projects ...string) string {
		key, _, err := store.Create(context.Background(), auth.NewKeyRequest{Name: role, Projects: projects, Role: role})
		if err != nil {
			t.Fatal(err)
		}
		return key
	}
	reader, payments, billing := newKey("reader", "platform"), newKey("reader", "payments"), newKey("reader", "billing")
	srv := httptest.NewServer(server.Handler(server.Deps{Pool: pool, MCP: s.HTTPHandler()}))
	t.Cleanup(srv.Close)
	deprecate := map[string]any{"project": "platform", "slug": "zeppelin"}
	tests := []struct {
		name, key, tool string
		args            map[string]any
		want            string // in the result; an error's "code: message" when isError
		isError         bool
	}{
		{"no key lists every project", "", "list_projects", map[string]any{}, `"project":"platform"`, false},
		{"no key reads a hidden page", "", "get_document", deprecate, "Zeppelin plan", false},
		{"a key of a project that does not exist lists none", billing, "list_projects", map[string]any{}, `"projects":[]`, false},
		{"a payments key searches platform", payments, "search", map[string]any{"query": "cache", "project": "platform"},
			`permission_denied: this key may not use project "platform"`, true},
		{"a reader does not see the hidden page", reader, "get_document", deprecate, `not_found: no document "zeppelin"`, true},
		{"a reader may not deprecate", reader, "deprecate", deprecate, "permission_denied: the deprecate tool needs an editor key", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, text, isError := mcptest.Call(t, connectHTTP(t, srv.URL+"/mcp", tt.key), tt.tool, tt.args)
			if isError != tt.isError || !strings.Contains(text, tt.want) {
				t.Errorf("isError=%v %s; want isError=%v with %q", isError, text, tt.isError, tt.want)
			}
		})
	}
	// A bad key is refused before a session starts, in canon's JSON, as on Connect.
	for _, bad := range []string{"canon_bogus", "canon_" + strings.Repeat("A", 43)} {
		if status, body := postMCP(t, srv.URL+"/mcp", "", bad, initialize); status != http.StatusUnauthorized ||
			!strings.Contains(body, `"code":"unauthenticated"`) {
			t.Errorf("key %s: status %d %s; want 401 unauthenticated", bad, status, body)
		}
	}
}

// TestStdioAnswersBadLinesAndKeepsServing drives the stdio transport of
// `canon mcp` with raw lines: each one that is not a JSON-RPC message, or is
// over the size limit, gets a JSON-RPC error (with its id when it has one)
// and the session goes on to answer the next request; at the end of input it
// ends cleanly.
func TestStdioAnswersBadLinesAndKeepsServing(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- s.Run(context.Background(), &mcpserver.StdioTransport{Reader: inR, Writer: outW}, "")
		outW.Close()
	}()
	replies := bufio.NewScanner(outR)
	replies.Buffer(nil, 1<<20)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	reply := func() map[string]any {
		t.Helper()
		if !replies.Scan() {
			t.Fatalf("no reply: the session ended (%v)", replies.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(replies.Bytes(), &m); err != nil {
			t.Fatalf("reply %q: %v", replies.Text(), err)
		}
		return m
	}
	send(initialize)
	if r := reply(); r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call := func(id int, query string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search","arguments":{"project":"platform","query":%q}}}`,
			id, query)
	}
	tests := []struct {
		name, line string
		id         any // the reply's id (nil: null); float64 as JSON numbers decode
		code       float64
		message    string // in the error's message, or in a result's text
	}{
		{"not JSON", "this is not json", nil, -32700, "parse error: the line is not JSON: invalid character 'h' in literal true"},
		{"truncated JSON", `{"jsonrpc":"2.0","id":3,"method":"tools/list"`, nil, -32700, "parse error"},
		{"JSON that is not an object", "42", nil, -32600, "invalid request: not a JSON-RPC 2.0 message"},
		{"an object that is not JSON-RPC", `{"id":"q4","hello":"world"}`, "q4", -32600, "invalid request: not a JSON-RPC 2.0 message"},
		{"a batch", `[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, nil, -32600, "batches are not supported"},
		{"a message over the limit, after a blank line", "\n" + call(6, strings.Repeat("x", mcpserver.MaxMessageBytes)), 6.0, -32600,
			fmt.Sprintf("request too large: a message may be at most %d bytes (one line)", mcpserver.MaxMessageBytes)},
		{"a large message within the limit", call(7, strings.Repeat("x", 6<<20)), 7.0, 0, "invalid_argument: query is 6291456 characters long"},
		{"a request after them all", `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`, 8.0, 0, `"name":"search"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			send(tt.line)
			r := reply()
			if r["id"] != tt.id {
				t.Errorf("id %v, want %v: %v", r["id"], tt.id, r)
			}
			if tt.code == 0 {
				if res, _ := json.Marshal(r["result"]); r["error"] != nil || !strings.Contains(string(res), tt.message) {
					t.Errorf("want a result with %q, got %.300v", tt.message, r)
				}
				return
			}
			e, _ := r["error"].(map[string]any)
			if e["code"] != tt.code || !strings.Contains(fmt.Sprint(e["message"]), tt.message) {
				t.Errorf("error %v, want %v with %q", e, tt.code, tt.message)
			}
		})
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("run ended with %v at the end of input", err)
	}
}

// TestShutdownEndsIdleStreams: clients idle on their standalone SSE stream
// (the SDK's client opens one after initialize; curl -N holds one too) do not
// hold a graceful shutdown of canon serve until its deadline: it ends them and
// returns at once, with nothing cancelled. A stream asked for after is refused.
func TestShutdownEndsIdleStreams(t *testing.T) {
	t.Parallel()
	h := newServer(t, nil).HTTPHandler()
	t.Cleanup(h.Close)
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.NewServer(ln.Addr().String(), server.Deps{MCP: h})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	endpoint := "http://" + ln.Addr().String() + "/mcp"
	cs := connectHTTP(t, endpoint, "")
	mcptest.Call(t, cs, "list_projects", map[string]any{})
	// A raw stream, as `curl -N` opens it.
	_, header, _ := sendMCP(t, http.MethodPost, endpoint, "", "", "", initialize)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, endpoint, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", header.Get("Mcp-Session-Id"))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	for deadline := time.Now().Add(10 * time.Second); srv.InFlight() != 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests in flight, want the 2 streams", srv.InFlight())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(ctx, time.Second); err != nil || time.Since(start) > 2*time.Second {
		t.Errorf("shutdown took %s: %v; want the streams ended at once", time.Since(start), err)
	}
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		t.Errorf("the raw stream did not end cleanly: %v", err)
	}
	rec := httptest.NewRecorder()
	get := httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/mcp", nil)
	get.Header.Set("Accept", "text/event-stream")
	h.ServeHTTP(rec, get)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `"code":"unavailable"`) {
		t.Errorf("a stream after the shutdown: %d %s", rec.Code, rec.Body)
	}
}

// TestErrorsReadAsTheAPIs: arguments the tool schemas refuse are
// invalid_argument in "code: message" text, as canon's own checks are, not
// the SDK's wording; a canon error reading a resource has a JSON-RPC code
// (not 0) and the Connect code in its message and data.
func TestErrorsReadAsTheAPIs(t *testing.T) {
	t.Parallel()
	s, pool := newServerPool(t, func(p *pgxpool.Pool) mcpserver.Authorizer { return mcpserver.Keys(auth.NewStore(p)) }, false)
	key, _, err := auth.NewStore(pool).Create(context.Background(), auth.NewKeyRequest{Name: "payments", Projects: []string{"payments"}, Role: "reader"})
	if err != nil {
		t.Fatal(err)
	}
	serverT, clientT := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, serverT, key) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("run: %v", err)
		}
	})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	tools := []struct {
		name string
		args any
		want string
	}{
		{"a missing argument", map[string]any{"project": "payments"}, `invalid_argument: arguments: required: missing properties: ["query"]`},
		{"a wrong type", map[string]any{"project": "payments", "query": "x", "limit": "5"},
			`invalid_argument: arguments: validating /properties/limit: type: 5 has type "string", want "integer"`},
		{"an unknown argument", map[string]any{"project": "payments", "query": "x", "extra": 1},
			`invalid_argument: arguments: unexpected additional properties ["extra"]`},
		{"arguments that are not an object", "notanobject", "invalid_argument: arguments must be a JSON object"},
	}
	for _, tt := range tools {
		t.Run(tt.name, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search", Arguments: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || text != tt.want {
				t.Errorf("isError=%v %q, want %q", res.IsError, text, tt.want)
			}
		})
	}
	resources := []struct {
		name, uri string
		code      int64
		message   string
	}{
		{"a slug too long", "canon://payments/" + strings.Repeat("s", 600), jsonrpc.CodeInvalidParams, "invalid_argument: slug"},
		{"another project's document", "canon://platform/dec-cache-v2", mcpserver.CodeServerError,
			`permission_denied: this key may not use project "platform"`},
		{"no such document", "canon://payments/nope", jsonrpc.CodeInvalidParams, "Resource not found"},
	}
	for _, tt := range resources {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: tt.uri})
			var we *jsonrpc.Error
			if !errors.As(err, &we) || we.Code != tt.code || !strings.HasPrefix(we.Message, tt.message) {
				t.Errorf("got %#v, want code %d with %q", err, tt.code, tt.message)
			}
		})
	}
}

// TestSessionsPerKey: a key holds at most SessionsPerKey sessions; a new one
// closes that key's oldest (its client is told the session is gone), and
// another key's sessions are its own.
func TestSessionsPerKey(t *testing.T) {
	t.Parallel()
	pool := func(*pgxpool.Pool) mcpserver.Authorizer { return keys }
	s, _ := newServerPool(t, pool, false, func(d *mcpserver.Deps) { d.SessionsPerKey = 2 })
	h := s.HTTPHandler()
	t.Cleanup(h.Close)
	// The guard's part: the principal of the bearer key goes in the context.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := keys(r.Context(), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r.WithContext(domain.WithPrincipal(r.Context(), p)))
	}))
	t.Cleanup(srv.Close)
	endpoint := srv.URL + "/mcp"
	first := connectHTTP(t, endpoint, "reader-key")
	second := connectHTTP(t, endpoint, "reader-key")
	editor := connectHTTP(t, endpoint, "editor-key")
	third := connectHTTP(t, endpoint, "reader-key")
	for name, cs := range map[string]*mcp.ClientSession{"second": second, "third": third, "editor's": editor} {
		if _, text, isError := mcptest.Call(t, cs, "list_projects", map[string]any{}); isError {
			t.Errorf("the %s session: %s", name, text)
		}
	}
	_, err := first.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_projects", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "session not found") {
		t.Errorf("the reader's oldest session past the limit of 2: %v, want session not found", err)
	}
}
