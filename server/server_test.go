package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/auth"
	"github.com/canonkb/canon/chat"
	"github.com/canonkb/canon/chatlog"
	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
	"github.com/canonkb/canon/hierarchy"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/llm"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/search"
	"github.com/canonkb/canon/server"
)

func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv, _ := newServerWith(t, auth.Config{})
	return srv
}

// newServerWith serves the handbook as project "platform" behind the given guard settings.
func newServerWith(t *testing.T, cfg auth.Config) (*httptest.Server, *pgxpool.Pool) {
	t.Helper()
	files, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		t.Fatal(err)
	}
	return newServerOver(t, cfg, map[string][]ingest.File{"platform": files})
}

// newServerOver is newServerWith over other files: each project's files (a
// file's frontmatter may still name another project).
func newServerOver(t testing.TB, cfg auth.Config, projects map[string][]ingest.File) (*httptest.Server, *pgxpool.Pool) {
	t.Helper()
	pool := dbtest.FreshPool(t)
	emb := embed.NewHash(384)
	in := ingest.New(pool, emb, markdown.Options{})
	for _, project := range slices.Sorted(maps.Keys(projects)) {
		res, err := in.Ingest(context.Background(), projects[project], ingest.Options{Project: project})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Errors) > 0 {
			t.Fatalf("ingest %s: %v", project, res.Errors)
		}
	}
	searcher := search.New(pool, emb, search.Config{Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed),
		Profile: domain.ProfileHashKeywordLed, Graph: search.DefaultGraphConfig()})
	// Wired as `canon serve` wires it: SearchService and chat retrieval go through
	// the two-pass entity search.
	twoPass := hierarchy.New(pool, searcher, hierarchy.DefaultConfig())
	prompt, _ := domain.ParsePrompt(domain.DefaultPromptTemplate())
	logger := chatlog.New(pool, 10, nil)
	t.Cleanup(func() { logger.Close(context.Background()) })
	svc := chat.New(twoPass, llm.NewExtractive(), prompt, logger, chat.Config{
		Gate: domain.Gate{MinSimilarity: 0.26, MinKeywordCoverage: 0.70}, SupportThreshold: 0.5})
	h := server.Handler(server.Deps{Pool: pool, Searcher: searcher, SearchService: twoPass, Ingester: in, Chat: svc, Auth: cfg})
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.Config.Protocols = server.Protocols()
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, pool
}

// h2cClient speaks HTTP/2 without TLS, as gRPC clients do against `canon serve`.
func h2cClient() *http.Client {
	p := &http.Protocols{}
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: p}}
}

func TestSearchOverConnectGRPCAndGRPCWeb(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	clients := map[string]canonv1connect.SearchServiceClient{
		"connect":  canonv1connect.NewSearchServiceClient(srv.Client(), srv.URL),
		"grpc":     canonv1connect.NewSearchServiceClient(h2cClient(), srv.URL, connect.WithGRPC()),
		"grpc-web": canonv1connect.NewSearchServiceClient(srv.Client(), srv.URL, connect.WithGRPCWeb()),
	}
	for name, c := range clients {
		t.Run(name, func(t *testing.T) {
			res, err := c.Search(context.Background(), connect.NewRequest(&canonv1.SearchRequest{
				Query:   "what cache layer did we standardise on?",
				Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}},
			}))
			if err != nil {
				t.Fatal(err)
			}
			r := res.Msg.GetResult()
			if p := r.GetPrimary(); len(p) == 0 || p[0].GetDocId() != "dec-cache-v2" {
				t.Fatalf("primary = %v", p)
			}
			// The worked example end to end: the session store comes in through
			// depends_on, the rejected Memcached approach with its cosine.
			var expanded, rejected bool
			for _, h := range r.GetExpanded() {
				if h.GetDocId() == "mod-session-store" && h.GetEdge().GetEdgeType() == "depends_on" && h.GetOrigin() == "graph_expansion" {
					expanded = true
				}
			}
			for _, h := range r.GetRejected() {
				if h.GetDocId() == "rej-memcached-2023" && h.GetOrigin() == "rejected_approach" && h.GetSimilarity() > 0 {
					rejected = true
				}
			}
			if !expanded || !rejected {
				t.Errorf("expanded %v / rejected %v: want mod-session-store via depends_on and rej-memcached-2023 with its cosine",
					r.GetExpanded(), r.GetRejected())
			}
		})
	}
}

func TestErrorsAreTypedConnectCodes(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	mega := strings.Repeat("d", 1_000_000)
	c := canonv1connect.NewSearchServiceClient(srv.Client(), srv.URL)
	cases := []struct {
		req  *canonv1.SearchRequest
		code connect.Code
	}{
		{&canonv1.SearchRequest{Query: " ", Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}}}, connect.CodeInvalidArgument},
		{&canonv1.SearchRequest{Query: "x", Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}}, Options: &canonv1.SearchOptions{Limit: 500}}, connect.CodeInvalidArgument},
		{&canonv1.SearchRequest{Query: "x", Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}}, Options: &canonv1.SearchOptions{Fusion: "magic"}}, connect.CodeInvalidArgument},
		{&canonv1.SearchRequest{Query: "x", Filters: &canonv1.Filters{ProjectKeys: []string{"nope"}}}, connect.CodeNotFound},
		// A megabyte value is refused or quoted cut short, never echoed whole.
		{&canonv1.SearchRequest{Query: "x", Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}, DateFrom: mega}}, connect.CodeInvalidArgument},
		{&canonv1.SearchRequest{Query: "x", Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}, Statuses: []string{mega}}}, connect.CodeInvalidArgument},
		{&canonv1.SearchRequest{Query: "x", Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}, Tags: []string{mega}}}, connect.CodeInvalidArgument},
		{&canonv1.SearchRequest{Query: "x", Filters: &canonv1.Filters{ProjectKeys: []string{mega}}}, connect.CodeInvalidArgument},
		{&canonv1.SearchRequest{Query: "x", Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}}, Options: &canonv1.SearchOptions{Fusion: mega}}, connect.CodeInvalidArgument},
		// A source type no document declares (nor a format) would find nothing.
		{&canonv1.SearchRequest{Query: "x", Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}, SourceTypes: []string{"bogus"}}}, connect.CodeInvalidArgument},
	}
	for _, tc := range cases {
		_, err := c.Search(context.Background(), connect.NewRequest(tc.req))
		var ce *connect.Error
		if !errors.As(err, &ce) || ce.Code() != tc.code || ce.Message() == "" || len(ce.Message()) > 500 {
			t.Errorf("%.300v: got %.300v, want %v with a short message", tc.req, err, tc.code)
		}
	}

	// Connect's JSON form refuses a field the message does not have, as
	// /api/kb/chat does, and names it: a misspelt "filter" must not run the
	// search without its filters.
	for _, tc := range []struct{ body, status, want string }{
		{`{"query":"rollbacks","filters":{"project_keys":["platform"]}}`, "200 OK", `"primary"`},
		{`{"query":"rollbacks","filter":{"project_keys":["platform"]}}`, "400 Bad Request", `unknown field \"filter\"`},
		{`{"query":"rollbacks","filters":{"project_keys":["platform"],"status":["active"]}}`, "400 Bad Request", `unknown field \"status\"`},
		{``, "400 Bad Request", "the request body is empty"},
		// A decode error reads as a person's message: the message and the field by
		// their API names, and where, without the library's or Go's names.
		{`{"query":123}`, "400 Bad Request", `the request body is not valid JSON for canon.v1.SearchRequest: invalid value for string field query: 123 (line 1, column 10)`},
		{`{"query":`, "400 Bad Request", `the request body is not valid JSON for canon.v1.SearchRequest: it ends before the JSON does`},
		{`[1]`, "400 Bad Request", `unexpected token [ (line 1, column 1)`},
	} {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost,
			srv.URL+"/"+canonv1connect.SearchServiceName+"/Search", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.Status != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: %s %s, want %s with %s", tc.body, res.Status, b, tc.status, tc.want)
		}
		if res.Status != "200 OK" && !strings.Contains(string(b), `"code":"invalid_argument"`) {
			t.Errorf("%s: %s, want the code invalid_argument", tc.body, b)
		}
		for _, internal := range []string{"proto:", "canonv1.", "unmarshal into"} {
			if strings.Contains(string(b), internal) {
				t.Errorf("%s: %s names the implementation (%s)", tc.body, b, internal)
			}
		}
	}
}

func TestChatStreamOrder(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	c := canonv1connect.NewChatServiceClient(srv.Client(), srv.URL)
	stream, err := c.ChatStream(context.Background(), connect.NewRequest(&canonv1.ChatRequest{
		Question: "how do deployment rollbacks work?", Filters: &canonv1.Filters{ProjectKeys: []string{"platform"}}}))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var final *canonv1.ChatResponse
	for stream.Receive() {
		switch e := stream.Msg().GetEvent().(type) {
		case *canonv1.ChatStreamResponse_Retrieval:
			kinds = append(kinds, "retrieval")
		case *canonv1.ChatStreamResponse_Delta:
			if len(kinds) == 0 || kinds[len(kinds)-1] != "delta" {
				kinds = append(kinds, "delta")
			}
		case *canonv1.ChatStreamResponse_Final:
			kinds = append(kinds, "final")
			final = e.Final
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(kinds, ",") != "retrieval,delta,final" {
		t.Fatalf("event order = %v", kinds)
	}
	if len(final.GetCitations()) == 0 || final.GetMeta().GetProvider() != "extractive" {
		t.Errorf("final = %+v", final)
	}
}

// TestEntityQuestionOverChatAndSearch: "what has Dana been working on?" through
// SearchService, ChatService (unary and stream) and POST /api/kb/chat retrieves
// in two passes and answers from Dana's documents; the options turn it off; an
// off-topic question naming her is still refused.
func TestEntityQuestionOverChatAndSearch(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	ctx := context.Background()
	q := "What has Dana been working on?"
	platform := &canonv1.Filters{ProjectKeys: []string{"platform"}}
	sres, err := canonv1connect.NewSearchServiceClient(srv.Client(), srv.URL).Search(ctx,
		connect.NewRequest(&canonv1.SearchRequest{Query: q, Filters: platform}))
	if err != nil {
		t.Fatal(err)
	}
	danas := map[string]bool{}
	for _, h := range append(sres.Msg.GetResult().GetPrimary(), sres.Msg.GetResult().GetRunnerUp()...) {
		if h.GetLinkingEntity() == "dana" {
			danas[h.GetDocId()] = true
		}
	}
	if m := sres.Msg.GetResult().GetMeta(); m.GetSearchMode() != "two_pass" || len(danas) == 0 {
		t.Fatalf("SearchService: %s (%s), Dana's documents %v", m.GetSearchMode(), m.GetHierarchyReason(), danas)
	}

	chatc := canonv1connect.NewChatServiceClient(srv.Client(), srv.URL)
	res, err := chatc.Chat(ctx, connect.NewRequest(&canonv1.ChatRequest{Question: q, Filters: platform}))
	if err != nil {
		t.Fatal(err)
	}
	m := res.Msg.GetMeta()
	if res.Msg.GetRefusalReason() != "" || m.GetSearchMode() != "two_pass" || m.GetHierarchyReason() != "confident_entities" ||
		len(m.GetPass1Entities()) == 0 || m.GetPass1Entities()[0].GetEntityId() != "dana" {
		t.Fatalf("Chat: refusal %q, %s (%s), entities %v", res.Msg.GetRefusalReason(), m.GetSearchMode(),
			m.GetHierarchyReason(), m.GetPass1Entities())
	}
	for _, c := range res.Msg.GetCitations() {
		if !danas[c.GetDocId()] {
			t.Errorf("Chat cites %s, not one of Dana's documents %v", c.GetDocId(), danas)
		}
	}

	stream, err := chatc.ChatStream(ctx, connect.NewRequest(&canonv1.ChatRequest{Question: q, Filters: platform}))
	if err != nil {
		t.Fatal(err)
	}
	var summary *canonv1.RetrievalSummary
	for stream.Receive() {
		if r := stream.Msg().GetRetrieval(); r != nil {
			summary = r
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if summary.GetSearchMode() != "two_pass" || summary.GetHierarchyReason() != "confident_entities" {
		t.Errorf("ChatStream retrieval summary: %s (%s)", summary.GetSearchMode(), summary.GetHierarchyReason())
	}

	post := func(body string) (int, map[string]any) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/api/kb/chat", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		r, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(r.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return r.StatusCode, out
	}
	for _, tc := range []struct {
		body, mode, reason, refusal string
		status                      int
	}{
		{`{"question":"What has Dana been working on?","project_key":"platform"}`, "two_pass", "confident_entities", "", 200},
		{`{"question":"What has Dana been working on?","project_key":"platform","options":{"hierarchy":false}}`, "flat", "disabled", "", 200},
		{`{"question":"what is Dana's favourite pizza?","project_key":"platform"}`, "two_pass", "confident_entities", "no_relevant_context", 200},
		{`{"question":"What has Dana been working on?","project_key":"platform","options":{"hierarchy_alpha":2}}`, "", "", "", 400},
	} {
		status, out := post(tc.body)
		if status != tc.status {
			t.Errorf("%s: status %d, want %d: %v", tc.body, status, tc.status, out)
			continue
		}
		if status != 200 {
			continue
		}
		meta, _ := out["meta"].(map[string]any)
		if meta["search_mode"] != tc.mode || meta["hierarchy_reason"] != tc.reason || out["refusal_reason"] != tc.refusal {
			t.Errorf("%s: %v (%v), refusal %q", tc.body, meta["search_mode"], meta["hierarchy_reason"], out["refusal_reason"])
		}
	}
}

func TestJSONChatEndpoint(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	post := func(body string, header ...string) (int, map[string]any) {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/api/kb/chat", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("not JSON: %s", b)
		}
		return res.StatusCode, out
	}
	// The legacy body: {question, project_key}.
	status, out := post(`{"question":"how do deployment rollbacks work?","project_key":"platform"}`)
	if status != 200 || out["answer"] == "" || out["citations"] == nil || out["refusal_reason"] != "" {
		t.Fatalf("legacy body: %d %v", status, out)
	}
	meta := out["meta"].(map[string]any)
	if _, ok := meta["retrieval_ms"]; !ok {
		t.Errorf("fields must be snake_case: %v", meta)
	}
	// A refusal is a 200 with a machine-readable reason, in the asked language.
	status, out = post(`{"question":"how do I knit a scarf?","filters":{"project_keys":["platform"]}}`, "Accept-Language", "de")
	if status != 200 || out["refusal_reason"] != "no_relevant_context" || len(out["citations"].([]any)) != 0 {
		t.Fatalf("refusal: %d %v", status, out)
	}
	if !strings.Contains(out["answer"].(string), "Dokumenten") {
		t.Errorf("want the German refusal text, got %q", out["answer"])
	}
	// Bad input: 400 with a typed code and a message.
	for body, want := range map[string]string{
		`{"question":""}`: "question is empty",
		`not json`:        "the request body is not valid JSON for canon.v1.ChatRequest: invalid value not (line 1, column 1)",
		`{"question":"x","project_key":"platform","history":[{"role":"robot","content":"x"}]}`: "history[0].role must be user or assistant",
		`{"question":["x"]}`: "the request body is not valid JSON for canon.v1.ChatRequest: invalid value for string field question: [ (line 1, column 13)",
		"{\"question\":\"cache \xff?\",\"project_key\":\"platform\"}": "invalid UTF-8",
	} {
		status, out = post(body)
		if status != 400 || out["code"] != "invalid_argument" || !strings.Contains(fmt.Sprint(out["message"]), want) {
			t.Errorf("%s: %d %v, want 400 with %q", body, status, out, want)
		}
	}
	status, out = post(`{"question":"x","project_key":"nope"}`)
	if status != 404 || out["code"] != "not_found" {
		t.Errorf("unknown project: %d %v", status, out)
	}
}

func TestIngestAndProjectsRPC(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	ic := canonv1connect.NewIngestServiceClient(srv.Client(), srv.URL)
	res, err := ic.Ingest(context.Background(), connect.NewRequest(&canonv1.IngestRequest{
		ProjectKey: "rpc",
		Files: []*canonv1.IngestFile{
			{Path: "a.md", Content: []byte("# Alpha\n\nThe alpha service.\n")},
			{Path: "b.md", Content: []byte("---\ntype: nonsense\n---\n# B\n")},
			{Path: "c\x00.md", Content: []byte("# C\n")},
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	errs := res.Msg.GetErrors()
	if res.Msg.GetCreated() != 1 || len(errs) != 2 || errs[0].GetLine() != 2 {
		t.Fatalf("%+v", res.Msg)
	}
	// A path the slug cannot come from says what is wrong with it.
	if r := errs[1].GetReason(); !strings.Contains(r, `slug "c\x00" contains a NUL character (U+0000)`) {
		t.Errorf("NUL in a path: %s", r)
	}
	_, err = ic.Ingest(context.Background(), connect.NewRequest(&canonv1.IngestRequest{ProjectKey: "Bad Key"}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("bad project key: %v", err)
	}
	// A path outside the knowledge root, or named twice, is refused by name.
	for _, paths := range [][]string{{"../../etc/passwd.md"}, {"/abs/x.md"}, {"x.md", "./x.md"}} {
		var files []*canonv1.IngestFile
		for _, p := range paths {
			files = append(files, &canonv1.IngestFile{Path: p, Content: []byte("# X\n\nText.\n")})
		}
		_, err = ic.Ingest(context.Background(), connect.NewRequest(&canonv1.IngestRequest{ProjectKey: "rpc", Files: files}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), paths[len(paths)-1]) {
			t.Errorf("paths %q: %v", paths, err)
		}
	}
	// Prune with no files would empty the project: refused, for a known project
	// and an unknown one alike, and neither is created nor emptied.
	for _, project := range []string{"rpc", "nosuchproj"} {
		_, err = ic.Ingest(context.Background(), connect.NewRequest(&canonv1.IngestRequest{ProjectKey: project, Prune: true}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "would delete every document") {
			t.Errorf("prune with no files in %s: %v", project, err)
		}
	}
	pc := canonv1connect.NewProjectServiceClient(srv.Client(), srv.URL)
	list, err := pc.ListProjects(context.Background(), connect.NewRequest(&canonv1.ListProjectsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]int64{}
	for _, p := range list.Msg.GetProjects() {
		keys[p.GetProjectKey()] = p.GetDocuments()
	}
	if _, ok := keys["nosuchproj"]; ok || keys["rpc"] != 1 || keys["platform"] < 40 || keys["payments"] < 5 {
		t.Errorf("projects = %v", keys)
	}
}

func TestContentGapsRPC(t *testing.T) {
	srv := newServer(t)
	chatc := canonv1connect.NewChatServiceClient(srv.Client(), srv.URL)
	for _, q := range []string{"How do I knit a scarf?", "how do i knit a scarf", "best banana bread recipe"} {
		res, err := chatc.Chat(context.Background(), connect.NewRequest(&canonv1.ChatRequest{Question: q, ProjectKey: "platform"}))
		if err != nil || res.Msg.GetRefusalReason() == "" {
			t.Fatalf("%q should be refused: %v", q, err)
		}
	}
	var gaps []*canonv1.ContentGap
	for i := 0; i < 50; i++ { // the log is written off the request path
		res, err := chatc.ContentGaps(context.Background(), connect.NewRequest(&canonv1.ContentGapsRequest{ProjectKey: "platform"}))
		if err != nil {
			t.Fatal(err)
		}
		if gaps = res.Msg.GetGaps(); len(gaps) == 2 && gaps[0].GetCount() == 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(gaps) != 2 || gaps[0].GetCount() != 2 || gaps[1].GetCount() != 1 {
		t.Fatalf("gaps = %v; want the scarf question twice, most asked first", gaps)
	}
	_, err := chatc.ContentGaps(context.Background(), connect.NewRequest(&canonv1.ContentGapsRequest{ProjectKey: "nope"}))
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("unknown project: %v", err)
	}
}

// TestHealthFollowsTheDatabase: /healthz and gRPC health (Check, for the whole
// server and for each service) say the same: serving while the database
// answers, not serving while it is down, serving again once it is back.
func TestHealthFollowsTheDatabase(t *testing.T) {
	url := dbtest.FreshURL(t)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newPGProxy(t, u.Host)
	u.Host = proxy.addr
	pool, err := postgres.Connect(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	srv := httptest.NewUnstartedServer(server.Handler(server.Deps{Pool: pool}))
	srv.EnableHTTP2 = true
	srv.Config.Protocols = server.Protocols()
	srv.Start()
	defer srv.Close()
	client := h2cClient()
	defer client.CloseIdleConnections()
	health := grpchealth.NewClient(client, srv.URL, connect.WithGRPC())
	check := func(t *testing.T, wantServing bool) {
		t.Helper()
		want, wantHTTP := grpchealth.StatusServing, http.StatusOK
		if !wantServing {
			want, wantHTTP = grpchealth.StatusNotServing, http.StatusServiceUnavailable
		}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/healthz", nil)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != wantHTTP {
			t.Errorf("/healthz: %s, want %d", res.Status, wantHTTP)
		}
		for _, service := range []string{"", canonv1connect.SearchServiceName, canonv1connect.ChatServiceName} {
			got, err := health.Check(context.Background(), &grpchealth.CheckRequest{Service: service})
			if err != nil || got.Status != want {
				t.Errorf("gRPC health of %q: %v %v, want %v", service, got, err, want)
			}
		}
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	watch := health.Watch(watchCtx, &grpchealth.CheckRequest{})
	watched := func(t *testing.T, want grpchealth.Status) {
		t.Helper()
		select {
		case ev := <-watch:
			if ev.Err != nil || ev.Response.Status != want {
				t.Errorf("watch: %+v, want %v", ev, want)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("watch: no %v within 15 s", want)
		}
	}
	t.Run("database up", func(t *testing.T) {
		check(t, true)
		watched(t, grpchealth.StatusServing)
	})
	proxy.down()
	t.Run("database down", func(t *testing.T) {
		check(t, false)
		watched(t, grpchealth.StatusNotServing)
	})
	proxy.up(t)
	t.Run("database back", func(t *testing.T) {
		check(t, true)
		watched(t, grpchealth.StatusServing)
	})
	stopWatch()
	_, err = health.Check(context.Background(), &grpchealth.CheckRequest{Service: "no.such.Service"})
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("an unknown service: %v, want NotFound", err)
	}
}

// A malformed Canon-Read-After is refused as invalid_argument, on Connect calls
// and plain routes alike; a well-formed one is accepted (its routing is
// cmd/canon's TestReadReplicas, with a replica).
func TestReadAfterHeader(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	c := canonv1connect.NewSearchServiceClient(srv.Client(), srv.URL)
	for _, tc := range []struct {
		value string
		code  connect.Code
	}{
		{"0/16B3748", 0},
		{"1A/0", 0},
		{"16B3748", connect.CodeInvalidArgument},
		{"0/xyz", connect.CodeInvalidArgument},
		{"-1/0", connect.CodeInvalidArgument},
	} {
		req := connect.NewRequest(&canonv1.SearchRequest{Query: "cache layer", ProjectKey: "platform"})
		req.Header().Set(server.ReadAfterHeader, tc.value)
		_, err := c.Search(context.Background(), req)
		if connect.CodeOf(err) != tc.code && !(tc.code == 0 && err == nil) {
			t.Errorf("%s %q: %v; want %v", server.ReadAfterHeader, tc.value, err, tc.code)
		}
		if tc.code != 0 && (err == nil || !strings.Contains(err.Error(), "not a WAL position such as 0/16B3748")) {
			t.Errorf("%s %q: the message %v does not say what is expected", server.ReadAfterHeader, tc.value, err)
		}
	}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/api/kb/chat",
		strings.NewReader(`{"question":"how do deployment rollbacks work?","project_key":"platform"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(server.ReadAfterHeader, "yesterday")
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != 400 || out["code"] != "invalid_argument" {
		t.Errorf("/api/kb/chat with a malformed %s: %d %v %v", server.ReadAfterHeader, res.StatusCode, out, err)
	}
	// Without replicas canon names no position after a write.
	dep, err := canonv1connect.NewCanonServiceClient(srv.Client(), srv.URL).Deprecate(context.Background(),
		connect.NewRequest(&canonv1.DeprecateRequest{ProjectKey: "platform", Slug: "std-go-database-access"}))
	if err != nil || dep.Header().Get(server.ReadAfterHeader) != "" {
		t.Errorf("deprecate without replicas: %v, %s %q", err, server.ReadAfterHeader, dep.Header().Get(server.ReadAfterHeader))
	}
}
