// A non-Go MCP client against `canon serve`'s /mcp: the official TypeScript SDK
// lists the tools and calls each one against the example handbook (project
// "platform" in a database of its own: the lifecycle calls change it). Run by
// `make test` through scripts/clients-test.sh; CANON_URL is the server.
import assert from "node:assert/strict";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const baseUrl = process.env.CANON_URL ?? "http://127.0.0.1:8787";
const headers: Record<string, string> = {};
if (process.env.CANON_API_KEY) headers.Authorization = `Bearer ${process.env.CANON_API_KEY}`;

const client = new Client({ name: "canon-node-test", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", baseUrl), { requestInit: { headers } }));

type Structured = Record<string, any>;
async function call(name: string, args: Record<string, unknown> = {}): Promise<Structured> {
  const res = await client.callTool({ name, arguments: args });
  assert.ok(!res.isError, `${name}: ${JSON.stringify(res.content)}`);
  return res.structuredContent as Structured;
}

const { tools } = await client.listTools();
assert.deepEqual(tools.map((t) => t.name).sort(), [
  "archive", "ask", "content_gaps", "deprecate", "get_document", "graph_neighbours", "list_projects",
  "promote", "reject", "restore", "search", "supersede",
]);
for (const t of tools) assert.ok(t.description && t.inputSchema.type === "object", `tool ${t.name} needs a description and a schema`);

const projects = await call("list_projects");
assert.ok(projects.projects.some((p: Structured) => p.project === "platform"), JSON.stringify(projects));

const found = await call("search", { query: "what cache layer did we standardise on?", project: "platform", limit: 5 });
assert.equal(found.hits[0].doc_id, "dec-cache-v2");
assert.ok(found.rejected.some((h: Structured) => h.doc_id === "rej-memcached-2023"), "rejected approaches come along");

const answer = await call("ask", { question: "how do deployment rollbacks work?", project: "platform" });
assert.equal(answer.refused, false);
assert.ok(answer.citations.length > 0);
const refusal = await call("ask", { question: "what is the best banana bread recipe?", project: "platform" });
assert.equal(refusal.refusal_reason, "no_relevant_context");
const gaps = await call("content_gaps", { project: "platform" });
assert.ok(Array.isArray(gaps.gaps));

const doc = await call("get_document", { project: "platform", slug: "dec-cache-v2" });
assert.equal(doc.state.status, "accepted");
assert.match(doc.text, /^# /);
const graph = await call("graph_neighbours", { project: "platform", slug: "dec-cache-v2" });
assert.ok(graph.neighbours.some((n: Structured) => n.doc_id === "dec-cache-v1"));

const resource = await client.readResource({ uri: "canon://platform/dec-cache-v2" });
assert.equal(resource.contents[0].mimeType, "text/markdown");

const lifecycle: [string, Record<string, unknown>][] = [
  // A decision, so that a decision can supersede it (a document is superseded only by one of its own type).
  ["promote", { project: "platform", slug: "note-cache-benchmarks", canonical_type: "decision", status: "draft" }],
  ["supersede", { project: "platform", old_slug: "note-cache-benchmarks", new_slug: "dec-cache-v2" }],
  ["deprecate", { project: "platform", slug: "rb-edge-proxy-upgrade" }],
  ["archive", { project: "platform", slug: "inc-2024-07-ledger-lag" }],
  ["reject", { project: "platform", slug: "note-cache-musings", decision_slug: "dec-cache-v2" }],
  // Undoes the rejection: the note is raw again, as its file says.
  ["restore", { project: "platform", slug: "note-cache-musings" }],
];
for (const [name, args] of lifecycle) {
  const change = await call(name, args);
  assert.equal(change.operation, name);
  assert.equal(typeof change.changed, "boolean");
}

// A bad argument is a tool error with the Connect code and message.
const bad = await client.callTool({ name: "search", arguments: { query: "cache", project: "platform", fusion: "magic" } });
assert.equal(bad.isError, true);
assert.match(JSON.stringify(bad.content), /invalid_argument: unknown fusion/);

await client.close();
console.log(`mcp (node, @modelcontextprotocol/sdk): ${tools.length} tools called: ok`);
