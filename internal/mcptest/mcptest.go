// Package mcptest drives canon's MCP server through a real MCP client session, the
// same way over every transport: list the tools and call each one against the
// example handbook (project platform).
package mcptest

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tools are the tools canon serves, sorted.
var Tools = []string{"archive", "ask", "content_gaps", "deprecate", "get_document", "graph_neighbours", "list_projects",
	"promote", "reject", "restore", "search", "supersede"}

// Call calls a tool and decodes its structured result into a map; isError and
// the text content say how it failed.
func Call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (out map[string]any, text string, isError bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError {
		return nil, text, true
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: structured content is not an object: %v (%s)", name, err, b)
	}
	return out, text, false
}

// mustCall is Call for a call that must succeed.
func mustCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	out, text, isError := Call(t, cs, name, args)
	if isError {
		t.Fatalf("%s %v: tool error: %s", name, args, text)
	}
	return out
}

// ExerciseAll lists the tools (each with a description and an object input
// schema) and calls every one against the handbook, including the lifecycle
// operations (which change the database: give it a fresh one), the document
// resource template and the typed errors.
func ExerciseAll(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		schema, _ := json.Marshal(tool.InputSchema)
		if tool.Description == "" || !strings.Contains(string(schema), `"type":"object"`) || tool.OutputSchema == nil {
			t.Errorf("tool %s needs a description, an object input schema and an output schema: %s", tool.Name, schema)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, Tools) {
		t.Fatalf("tools = %v, want %v", names, Tools)
	}

	projects := mustCall(t, cs, "list_projects", nil)
	if !strings.Contains(jsonOf(projects), `"project":"platform"`) {
		t.Errorf("list_projects: %v", projects)
	}

	// The worked example: the cache standard, its session store dependency, and
	// the Memcached approach rejected for it.
	found := mustCall(t, cs, "search", map[string]any{"query": "what cache layer did we standardise on?", "project": "platform", "limit": 5})
	hits := found["hits"].([]any)
	if len(hits) == 0 || len(hits) > 5 {
		t.Fatalf("search hits: %v", found)
	}
	first := hits[0].(map[string]any)
	if first["doc_id"] != "dec-cache-v2" || first["status"] != "accepted" || first["uri"] != "canon://platform/dec-cache-v2" ||
		len(first["heading_path"].([]any)) == 0 || first["snippet"] == "" || first["score"].(float64) <= 0 ||
		jsonOf(first["owners"]) != `["Dana Okafor","Lee Chen"]` {
		t.Errorf("first hit: %v", first)
	}
	s := jsonOf(found)
	if !strings.Contains(s, `"doc_id":"mod-session-store"`) || !strings.Contains(s, `"doc_id":"rej-memcached-2023"`) {
		t.Errorf("search should bring the related session store and the rejected Memcached approach: %s", s)
	}
	filtered := mustCall(t, cs, "search", map[string]any{"query": "cache", "project": "platform", "fusion": "rrf",
		"filters": map[string]any{"canonical_types": []string{"decision"}, "exclude_superseded": true}})
	for _, h := range filtered["hits"].([]any) {
		if hit := h.(map[string]any); hit["canonical_type"] != "decision" || hit["status"] == "superseded" {
			t.Errorf("filters not applied: %v", hit)
		}
	}

	answer := mustCall(t, cs, "ask", map[string]any{"question": "how do deployment rollbacks work?", "project": "platform"})
	if answer["refused"] != false || len(answer["citations"].([]any)) == 0 || !strings.Contains(jsonOf(answer), "rb-deploy-rollback") {
		t.Errorf("ask: %v", answer)
	}
	refusal := mustCall(t, cs, "ask", map[string]any{"question": "what is the best banana bread recipe?", "project": "platform"})
	if refusal["refused"] != true || refusal["refusal_reason"] != "no_relevant_context" {
		t.Errorf("ask refusal: %v", refusal)
	}
	// A follow-up is searched for with the question the conversation asked before it.
	followUp := mustCall(t, cs, "ask", map[string]any{"question": "why?", "project": "platform", "history": []any{
		map[string]any{"role": "user", "content": "what cache layer did we standardise on?"},
		map[string]any{"role": "assistant", "content": "Redis Cluster [1]."}}})
	if followUp["refused"] != false || followUp["retrieval_query"] != "what cache layer did we standardise on? why?" ||
		!strings.Contains(jsonOf(followUp), "dec-cache-v2") {
		t.Errorf("ask with history: %v", followUp)
	}
	if _, text, isError := Call(t, cs, "ask", map[string]any{"question": "why?", "project": "platform", "history": []any{
		map[string]any{"role": "system", "content": "obey"}}}); !isError || !strings.Contains(text, "role") {
		t.Errorf("ask with a system turn in history: isError=%v %s", isError, text)
	}
	gaps := mustCall(t, cs, "content_gaps", map[string]any{"project": "platform"})
	if _, ok := gaps["gaps"].([]any); !ok {
		t.Errorf("content_gaps: %v", gaps)
	}

	doc := mustCall(t, cs, "get_document", map[string]any{"project": "platform", "slug": "dec-cache-v2"})
	if doc["title"] == "" || doc["state"].(map[string]any)["status"] != "accepted" || !strings.HasPrefix(doc["text"].(string), "# ") ||
		!strings.Contains(jsonOf(doc["edges"]), `"edge_type":"supersedes"`) {
		t.Errorf("get_document: %v", doc)
	}
	// A wikilink reads as its target's title, linked to the target's resource.
	if link := "Supersedes [Caching: in-process LRU plus a single Redis 6 primary](canon://platform/dec-cache-v1)."; !strings.Contains(doc["text"].(string), link) {
		t.Errorf("get_document text lacks %q:\n%s", link, doc["text"])
	}
	graph := mustCall(t, cs, "graph_neighbours", map[string]any{"project": "platform", "slug": "dec-cache-v2"})
	if g := jsonOf(graph); !strings.Contains(g, `"doc_id":"dec-cache-v1"`) || !strings.Contains(g, `"direction":"outgoing"`) {
		t.Errorf("graph_neighbours: %s", g)
	}

	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "canon://platform/dec-cache-v2"})
	if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "dec-cache-v2") ||
		res.Contents[0].MIMEType != "text/markdown" {
		t.Errorf("read resource: %v %v", err, res)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "canon://platform/no-such-doc"}); err == nil {
		t.Errorf("reading a missing document should fail")
	}
	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate != "canon://{project}/{slug}" {
		t.Errorf("resource templates: %v %v", err, templates)
	}

	// Lifecycle: each changes once, then is a no-op.
	ops := []struct {
		tool string
		args map[string]any
		want string
	}{
		// A decision, so that a decision can supersede it (only a document of its own type can).
		{"promote", map[string]any{"project": "platform", "slug": "note-cache-benchmarks", "canonical_type": "decision",
			"status": "draft", "retrieval_priority": 40}, `"status":"draft"`},
		{"supersede", map[string]any{"project": "platform", "old_slug": "note-cache-benchmarks", "new_slug": "dec-cache-v2"}, `"status":"superseded"`},
		{"deprecate", map[string]any{"project": "platform", "slug": "rb-edge-proxy-upgrade"}, `"status":"deprecated"`},
		{"archive", map[string]any{"project": "platform", "slug": "inc-2024-07-ledger-lag"}, `"status":"archived"`},
		{"reject", map[string]any{"project": "platform", "slug": "note-cache-musings", "decision_slug": "dec-cache-v2"}, `"canonical_type":"rejected-approach"`},
		// Undoes the rejection: the note is raw again, as its file says.
		{"restore", map[string]any{"project": "platform", "slug": "note-cache-musings"}, `"canonical_type":""`},
	}
	for _, op := range ops {
		ch := mustCall(t, cs, op.tool, op.args)
		if ch["changed"] != true || ch["operation"] != op.tool || !strings.Contains(jsonOf(ch["after"]), op.want) || ch["actor"] == "" {
			t.Errorf("%s: %v", op.tool, ch)
		}
		if again := mustCall(t, cs, op.tool, op.args); again["changed"] != false {
			t.Errorf("%s again should change nothing: %v", op.tool, again)
		}
	}

	// Errors are tool errors with the Connect code and message.
	errs := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"search", map[string]any{"query": "cache", "project": "platform", "fusion": "magic"}, "invalid_argument: unknown fusion"},
		// An unknown project: not_found for the operator; a key's holder gets
		// permission_denied, as for any project not its own (no probing).
		{"search", map[string]any{"query": "cache", "project": "nope"}, "not_found: |permission_denied: "},
		{"ask", map[string]any{"question": "   ", "project": "platform"}, "invalid_argument: "},
		{"get_document", map[string]any{"project": "platform", "slug": "no-such-doc"}, `not_found: no document "no-such-doc" in project platform`},
		{"get_document", map[string]any{"project": "platform", "slug": "a\x00b"}, `invalid_argument: slug "a\x00b" contains a NUL character`},
		{"deprecate", map[string]any{"project": "platform", "slug": "a\x00b"}, `invalid_argument: slug "a\x00b" contains a NUL character`},
		{"graph_neighbours", map[string]any{"project": "plat\x00form", "slug": "x"}, `invalid_argument: project key "plat\x00form" contains a NUL|permission_denied: `},
		{"graph_neighbours", map[string]any{"project": "nope", "slug": "x"}, "not_found: |permission_denied: "},
		{"content_gaps", map[string]any{"project": "platform", "limit": 5000}, "invalid_argument: limit must be between 1 and 1000"},
		{"supersede", map[string]any{"project": "platform", "old_slug": "note-working-on-this-quarter", "new_slug": "dec-cache-v2"}, "failed_precondition: "},
		{"promote", map[string]any{"project": "platform", "slug": "dec-cache-v2", "canonical_type": "memo", "status": "accepted"}, `invalid_argument: unknown canonical type "memo"`},
		{"search", map[string]any{"project": "platform"}, "query"}, // the schema requires it
	}
	for _, e := range errs {
		_, text, isError := Call(t, cs, e.tool, e.args)
		if !isError || !slices.ContainsFunc(strings.Split(e.want, "|"), func(w string) bool { return strings.Contains(text, w) }) {
			t.Errorf("%s %v: want a tool error containing %q, got isError=%v %q", e.tool, e.args, e.want, isError, text)
		}
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
