// Package mcpserver exposes canon to agents over the Model Context Protocol: the
// same search, answers, documents, graph and lifecycle operations as the Connect
// API, as MCP tools with JSON schemas, and documents as canon://{project}/{slug}
// resources. It serves stdio (`canon mcp`) and Streamable HTTP (/mcp under
// `canon serve`) with the official Go SDK, and calls the same core services as
// the Connect handlers; errors carry the Connect code and message.
package mcpserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/canonkb/canon/auth"
	"github.com/canonkb/canon/chat"
	"github.com/canonkb/canon/chatlog"
	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/lifecycle"
	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/project"
	"github.com/canonkb/canon/server"
)

// Deps are the services the tools call.
type Deps struct {
	Pool *pgxpool.Pool
	// Reads routes graph show and content gaps to a read replica; nil reads from Pool.
	Reads *postgres.Reads
	// Search answers the search tool: canon serve's SearchService (the two-pass search).
	Search server.Searcher
	Chat   *chat.Service
	// Authorizer decides who calls; nil means OpenAccess.
	Authorizer Authorizer
	// Auditor records every call of a tool that changes documents (an editor's
	// tool), allowed or refused, as the Connect API's audited RPCs are; nil
	// records nothing.
	Auditor Auditor
	Logger  *slog.Logger
	// Version is reported to clients at initialisation.
	Version string
	// SessionsPerKey bounds the Streamable HTTP sessions one API key (or, without
	// one, the caller) holds open: a new one past it closes that key's oldest.
	// 0 leaves them unbounded.
	SessionsPerKey int
}

// Server builds MCP servers over canon's services.
type Server struct {
	d         Deps
	lifecycle *lifecycle.Service
}

// New returns a Server.
func New(d Deps) *Server {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Authorizer == nil {
		d.Authorizer = OpenAccess
	}
	if d.Version == "" {
		d.Version = "dev"
	}
	svc := lifecycle.New(d.Pool)
	svc.Reads = d.Reads
	return &Server{d: d, lifecycle: svc}
}

// Run serves one session over t (stdio for `canon mcp`) until the client goes
// away or ctx ends; key is the caller's API key (CANON_API_KEY), used for every call.
func (s *Server) Run(ctx context.Context, t mcp.Transport, key string) error {
	return s.build(fixedKey(key)).Run(ctx, t)
}

// sessionTimeout closes HTTP sessions a client abandoned.
const sessionTimeout = 30 * time.Minute

// HTTPHandler serves Streamable HTTP (mount it at /mcp); each call authenticates
// with the request's "Authorization: Bearer <key>". Mount it behind canon's
// guard (server.Handler does): the guard applies canon's one Host policy
// (auth.LocalHost and KB_ALLOWED_HOSTS without keys, keys with KB_AUTH=required),
// so the SDK's own localhost check, which refuses a same-host reverse proxy's
// Host even with a valid key, is off.
func (s *Server) HTTPHandler() *HTTPHandler {
	srv := s.build(bearerKey)
	stop, stopNow := context.WithCancel(context.Background())
	return &HTTPHandler{
		sdk: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
			&mcp.StreamableHTTPOptions{Logger: quiet(s.d.Logger), SessionTimeout: sessionTimeout,
				DisableLocalhostProtection: true, MaxRequestBodyBytes: MaxMessageBytes}),
		srv: srv, stop: stop, stopNow: stopNow, log: s.d.Logger, perKey: s.d.SessionsPerKey, owned: map[string][]string{},
	}
}

// HTTPHandler is the Streamable HTTP endpoint (/mcp).
type HTTPHandler struct {
	sdk  *mcp.StreamableHTTPHandler
	srv  *mcp.Server
	stop context.Context
	// stopNow ends the standalone streams and refuses new ones.
	stopNow context.CancelFunc
	log     *slog.Logger
	// perKey is Deps.SessionsPerKey; owned lists each owner's sessions (by id),
	// oldest first.
	perKey int
	mu     sync.Mutex
	owned  map[string][]string
}

// sessionHeader carries a Streamable HTTP session's id.
const sessionHeader = "Mcp-Session-Id"

// ServeHTTP serves one request; a GET is a client's standalone SSE stream,
// held open until the client leaves, its session ends or CloseStreams. A POST
// without a session starts one (initialize), which counts against its key's
// SessionsPerKey.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.Header.Get(sessionHeader) == "" && h.perKey > 0 {
		h.sdk.ServeHTTP(w, r)
		if id := w.Header().Get(sessionHeader); id != "" {
			h.own(sessionOwner(domain.PrincipalFrom(r.Context())), id)
		}
		return
	}
	if r.Method == http.MethodGet {
		if h.stop.Err() != nil {
			auth.WriteJSONError(w, connect.CodeUnavailable, ErrShuttingDown.Error())
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(h.stop, cancel)()
		r = r.WithContext(ctx)
	}
	h.sdk.ServeHTTP(w, r)
}

// sessionOwner names whom a session counts against: the API key, else the
// caller without one (the operator on loopback, or anonymous).
func sessionOwner(p domain.Principal) string {
	if p.KeyID != "" {
		return "key:" + p.KeyID
	}
	return "name:" + p.Name
}

// own records session id as owner's and closes owner's oldest sessions past
// perKey. Sessions that ended (closed by their client, timed out) are dropped
// from the list first, so only open ones count.
func (h *HTTPHandler) own(owner, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	open := map[string]*mcp.ServerSession{}
	for ss := range h.srv.Sessions() {
		open[ss.ID()] = ss
	}
	var ids []string
	for _, o := range append(h.owned[owner], id) {
		if open[o] != nil {
			ids = append(ids, o)
		}
	}
	for len(ids) > h.perKey {
		// The client of a closed session gets "session not found" and, as the
		// protocol says, starts a new one.
		err := open[ids[0]].Close()
		h.log.Info("mcp: closed the oldest session of a key past KB_MCP_SESSIONS_PER_KEY",
			"owner", owner, "limit", h.perKey, "error", err)
		ids = ids[1:]
	}
	if len(ids) == 0 {
		delete(h.owned, owner)
		return
	}
	h.owned[owner] = ids
}

// ErrShuttingDown answers a standalone stream asked for once CloseStreams has run.
var ErrShuttingDown = errors.New("the server is shutting down: reconnect when it is back")

// CloseStreams ends the standalone SSE streams clients hold open (GET /mcp;
// canon sends nothing on them) and refuses new ones, so a graceful shutdown
// does not wait its whole timeout for an idle client; calls in flight finish
// (server.Server.Shutdown calls it as the shutdown starts). The sessions stay:
// a client that reconnects to the next server gets "session not found" and
// starts a new one, as the protocol says.
func (h *HTTPHandler) CloseStreams() { h.stopNow() }

// Close ends the streams and every session (their goroutines too).
func (h *HTTPHandler) Close() {
	h.CloseStreams()
	for ss := range h.srv.Sessions() {
		ss.Close()
	}
}

// quiet keeps the SDK's per-session messages (Info) out of canon's log.
func quiet(l *slog.Logger) *slog.Logger { return slog.New(warnings{l.Handler()}) }

type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn && w.Handler.Enabled(ctx, level)
}

func (w warnings) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warnings{w.Handler.WithAttrs(attrs)}
}

func (w warnings) WithGroup(name string) slog.Handler { return warnings{w.Handler.WithGroup(name)} }

// serverInstructions tell a model how the tools fit together.
const serverInstructions = `canon answers questions from a team's own documents (decisions, runbooks, standards, incidents, people and team pages).
Start with list_projects to learn the project keys. Use ask for a grounded answer with citations (or a refusal when the documents do not say),
search to see the ranked evidence (with related documents and rejected approaches), get_document to read a document whole,
and graph_neighbours to walk its edges. Superseded, deprecated and archived documents are ranked lower: prefer accepted ones.
The lifecycle tools (promote, supersede, deprecate, archive, reject) change a document's status and need an editor key;
restore undoes them on a document, back to what its file says.`

func (s *Server) build(credential credentialSource) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "canon", Title: "canon knowledge base", Version: s.d.Version},
		&mcp.ServerOptions{Instructions: serverInstructions, Logger: quiet(s.d.Logger)})
	srv.AddReceivingMiddleware(uniformErrors)
	t := &tools{s: s, credential: credential}
	t.register(srv)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "document", Title: "canon document", URITemplate: URIScheme + "{project}/{slug}", MIMEType: "text/markdown",
		Description: "A document's text as Markdown, with its title, status and path. The slug is path-escaped (a '/' is %2F).",
	}, t.readResource)
	return srv
}

// tools are the tool handlers of one server (one credential source).
type tools struct {
	s          *Server
	credential credentialSource
}

var (
	readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	// lifecycleAnnotations: a re-run changes nothing; nothing is deleted.
	lifecycleAnnotations = &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false)}
)

// handle wraps a tool: authorize with the role it needs, run, and map errors to
// the Connect code and message the API would answer with.
func handle[In, Out any](t *tools, name string, need domain.Role, run func(ctx context.Context, p domain.Principal, in In) (Out, error)) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		var zero Out
		project := ""
		if s, ok := any(in).(scoped); ok {
			project = s.project()
		}
		ctx, p, err := authorize(ctx, t.s.d.Authorizer, t.credential(req.Extra), need, "the "+name+" tool", project)
		out := zero
		if err == nil {
			if out, err = run(ctx, p, in); err != nil {
				err = server.ConnectError(ctx, t.s.d.Logger, name, err)
			}
		}
		// Once the caller is known, a change is on the record whatever its outcome.
		if need.Includes(domain.RoleEditor) && p.Role != "" {
			t.s.audit(ctx, p, name, project, in, err)
		}
		if err != nil {
			return nil, zero, err
		}
		return nil, out, nil
	}
}

func (t *tools) register(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "search", Title: "Search documents", Annotations: readOnly,
		Description: "Rank a project's document chunks for a question with canon's hybrid retrieval (vector + BM25, trust-weighted: " +
			"accepted decisions above blog posts, superseded ones lower). Returns the hits (doc_id, title, heading path, snippet, score, " +
			"status), related documents one graph hop away, and rejected approaches for the decisions found."},
		handle(t, "search", domain.RoleReader, t.search))
	mcp.AddTool(srv, &mcp.Tool{Name: "ask", Title: "Ask a question", Annotations: readOnly,
		Description: "Answer a question from a project's documents: every claim cites a chunk as [n], checked against it. When nothing " +
			"relevant is found the result is a typed refusal (refused: true, refusal_reason) rather than a guess: do not invent an answer then."},
		handle(t, "ask", domain.RoleReader, t.ask))
	mcp.AddTool(srv, &mcp.Tool{Name: "get_document", Title: "Read a document", Annotations: readOnly,
		Description: "Read one document whole: its text (headings and body), title, canonical type, status, tags, owners and its graph edges."},
		handle(t, "get_document", domain.RoleReader, t.getDocument))
	mcp.AddTool(srv, &mcp.Tool{Name: "graph_neighbours", Title: "Graph neighbours", Annotations: readOnly,
		Description: "List a document's neighbours in the knowledge graph: one hop, both directions, every edge type " +
			"(supersedes, depends_on, decision_for, implements, ...), strongest first."},
		handle(t, "graph_neighbours", domain.RoleReader, t.graph))
	mcp.AddTool(srv, &mcp.Tool{Name: "list_projects", Title: "List projects", Annotations: readOnly,
		Description: "List the projects canon holds (their keys are what the other tools take) with their document, chunk and entity counts."},
		handle(t, "list_projects", domain.RoleReader, t.listProjects))
	mcp.AddTool(srv, &mcp.Tool{Name: "content_gaps", Title: "Content gaps", Annotations: readOnly,
		Description: "List the questions canon could not answer in a project, most asked first: what the documentation is missing."},
		handle(t, "content_gaps", domain.RoleReader, t.gaps))
	mcp.AddTool(srv, &mcp.Tool{Name: "promote", Title: "Promote a document", Annotations: lifecycleAnnotations,
		Description: "Make a document canonical with a type and status (and optionally a retrieval priority); not an entity page " +
			"(person, team, project). Needs an editor key; audited; re-running changes nothing."},
		handle(t, "promote", domain.RoleEditor, t.promote))
	mcp.AddTool(srv, &mcp.Tool{Name: "supersede", Title: "Supersede a document", Annotations: lifecycleAnnotations,
		Description: "Mark old_slug superseded by new_slug: old's status becomes superseded and the edge new -supersedes-> old is added. " +
			"Both must be canonical and of the same type, new accepted or active, neither a rejected approach; one that would close " +
			"a cycle of supersedes is refused. Needs an editor key; audited."},
		handle(t, "supersede", domain.RoleEditor, t.supersede))
	mcp.AddTool(srv, &mcp.Tool{Name: "deprecate", Title: "Deprecate a document", Annotations: lifecycleAnnotations,
		Description: "Set a canonical document's status to deprecated (ranked lower, still found). Needs an editor key; audited."},
		handle(t, "deprecate", domain.RoleEditor, t.setStatus(lifecycle.OpDeprecate)))
	mcp.AddTool(srv, &mcp.Tool{Name: "archive", Title: "Archive a document", Annotations: lifecycleAnnotations,
		Description: "Set a canonical document's status to archived (ranked lowest, still found). Needs an editor key; audited."},
		handle(t, "archive", domain.RoleEditor, t.setStatus(lifecycle.OpArchive)))
	mcp.AddTool(srv, &mcp.Tool{Name: "reject", Title: "Record a rejected approach", Annotations: lifecycleAnnotations,
		Description: "Record a document as an approach rejected for a decision: its type becomes rejected-approach and the edge " +
			"slug -decision_for-> decision is added, so searches that find the decision show it. Refused for an entity page, a " +
			"decision others were rejected in favour of, and a document that supersedes another. Needs an editor key; audited."},
		handle(t, "reject", domain.RoleEditor, t.reject))
	mcp.AddTool(srv, &mcp.Tool{Name: "restore", Title: "Restore a document to its file", Annotations: lifecycleAnnotations,
		Description: "Undo the lifecycle operations on a document since the ingest that last wrote it (a mistaken promote, " +
			"supersede, deprecate, archive or reject): its type, status and priority become what its file says, the edges " +
			"those operations added are removed, and a document restored to raw leaves the graph. Needs an editor key; audited."},
		handle(t, "restore", domain.RoleEditor, t.restore))
}

func (t *tools) search(ctx context.Context, _ domain.Principal, in SearchInput) (SearchOutput, error) {
	res, err := t.s.d.Search.Search(ctx, searchRequest(in))
	if err != nil {
		return SearchOutput{}, err
	}
	return searchOutput(res), nil
}

func (t *tools) ask(ctx context.Context, _ domain.Principal, in AskInput) (AskOutput, error) {
	res, err := t.s.d.Chat.Answer(ctx, chatRequest(in), "", chat.Events{})
	if err != nil {
		return AskOutput{}, err
	}
	return askOutput(in.Project, res), nil
}

func (t *tools) getDocument(ctx context.Context, _ domain.Principal, in DocumentInput) (DocumentOutput, error) {
	return t.s.readDocument(ctx, in.Project, in.Slug)
}

func (t *tools) graph(ctx context.Context, _ domain.Principal, in DocumentInput) (GraphOutput, error) {
	g, err := t.s.lifecycle.Graph(ctx, in.Project, in.Slug)
	if err != nil {
		return GraphOutput{}, err
	}
	return graphOutput(g), nil
}

func (t *tools) listProjects(ctx context.Context, _ domain.Principal, _ struct{}) (ProjectsOutput, error) {
	list, err := project.List(ctx, t.s.d.Pool)
	if err != nil {
		return ProjectsOutput{}, err
	}
	return projectsOutput(list), nil
}

func (t *tools) gaps(ctx context.Context, _ domain.Principal, in GapsInput) (GapsOutput, error) {
	res, err := chatlog.ContentGaps(ctx, t.s.d.Pool, t.s.d.Reads, in.Project, in.Limit)
	if err != nil {
		return GapsOutput{}, err
	}
	return gapsOutput(res), nil
}

func (t *tools) promote(ctx context.Context, p domain.Principal, in PromoteInput) (ChangeOutput, error) {
	return changed(t.s.lifecycle.Promote(ctx, p.Actor(), promoteRequest(in)))
}

func (t *tools) supersede(ctx context.Context, p domain.Principal, in SupersedeInput) (ChangeOutput, error) {
	return changed(t.s.lifecycle.Supersede(ctx, p.Actor(), in.Project, in.OldSlug, in.NewSlug))
}

func (t *tools) setStatus(op string) func(context.Context, domain.Principal, DocumentInput) (ChangeOutput, error) {
	return func(ctx context.Context, p domain.Principal, in DocumentInput) (ChangeOutput, error) {
		if op == lifecycle.OpArchive {
			return changed(t.s.lifecycle.Archive(ctx, p.Actor(), in.Project, in.Slug))
		}
		return changed(t.s.lifecycle.Deprecate(ctx, p.Actor(), in.Project, in.Slug))
	}
}

func (t *tools) reject(ctx context.Context, p domain.Principal, in RejectInput) (ChangeOutput, error) {
	return changed(t.s.lifecycle.Reject(ctx, p.Actor(), in.Project, in.Slug, in.DecisionSlug))
}

func (t *tools) restore(ctx context.Context, p domain.Principal, in DocumentInput) (ChangeOutput, error) {
	return changed(t.s.lifecycle.Restore(ctx, p.Actor(), in.Project, in.Slug))
}

func changed(ch lifecycle.Change, err error) (ChangeOutput, error) {
	if err != nil {
		return ChangeOutput{}, err
	}
	return changeOutput(ch), nil
}

// readResource serves canon://{project}/{slug}: the document as Markdown.
func (t *tools) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	project, slug, ok := parseDocumentURI(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	ctx, _, err := authorize(ctx, t.s.d.Authorizer, t.credential(req.Extra), domain.RoleReader, "reading documents", project)
	if err != nil {
		return nil, err
	}
	d, err := t.s.readDocument(ctx, project, slug)
	if err != nil {
		ce := server.ConnectError(ctx, t.s.d.Logger, "read document", err)
		if ce.Code() == connect.CodeNotFound {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, ce
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: markdownOf(d)}}}, nil
}
