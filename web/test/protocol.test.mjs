// /api/chat's wire format, read by the `ai` package's own client code: the
// transport useChat uses (DefaultChatTransport: header check, SSE parsing,
// uiMessageChunkSchema validation) and readUIMessageStream. A drift in chunk
// names or fields fails here.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { DefaultChatTransport, parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from "ai";
import { startCanon } from "./canon.mjs";

let canon;
before(async () => {
  canon = await startCanon();
});
after(async () => {
  await canon?.stop();
});

const userMessage = (text) => ({ id: `u${Math.random()}`, role: "user", parts: [{ type: "text", text }] });

async function ask(text, extra = {}) {
  const transport = new DefaultChatTransport({
    api: `${canon.url}/api/chat`,
    body: { project: "platform", ...extra },
  });
  const chunks = await transport.sendMessages({
    chatId: "protocol-test",
    messages: [userMessage(text)],
    trigger: "submit-message",
    messageId: undefined,
    abortSignal: undefined,
  });
  let last;
  for await (const message of readUIMessageStream({ stream: chunks, onError: (e) => assert.fail(e) })) last = message;
  return last;
}

const partsOf = (m, type) => m.parts.filter((p) => p.type === type);

test("a grounded answer reads back as a UIMessage with sources, citations, text and usage", async () => {
  const m = await ask("what cache layer did we standardise on?");
  assert.equal(m.role, "assistant");
  assert.match(m.id, /^msg_/);
  const types = [...new Set(m.parts.map((p) => p.type))];
  for (const t of ["data-retrieval", "source-document", "data-citation", "data-related", "data-rejected", "text",
    "data-answer", "data-usage", "data-followups"]) {
    assert.ok(types.includes(t), `missing ${t} in ${types}`);
  }
  const text = partsOf(m, "text")[0];
  assert.equal(text.state, "done");
  assert.match(text.text, /\[1\]/);
  // A citation for each passage the answer cites, numbered from [1] as the text
  // numbers them, pointing at its source-document.
  const citations = partsOf(m, "data-citation").map((p) => p.data);
  const markers = [...new Set([...text.text.matchAll(/\[(\d+)\]/g)].map((x) => Number(x[1])))];
  assert.deepEqual(citations.map((c) => c.n).sort(), markers.sort());
  const sources = partsOf(m, "source-document").map((p) => p.sourceId);
  assert.ok(citations.every((c) => sources.includes(c.sourceId)), JSON.stringify(citations.map((c) => c.sourceId)));
  const first = citations.find((c) => c.n === 1);
  for (const k of ["docId", "chunkId", "title", "headingPath", "snippet", "status", "evidenceTier", "score", "origin"]) {
    assert.ok(k in first, `citation lacks ${k}`);
  }
  assert.ok(partsOf(m, "data-rejected")[0].data.approaches.some((a) => a.docId === "rej-memcached-2023"));
  const usage = partsOf(m, "data-usage")[0].data;
  assert.ok(usage.promptTokens > 0 && usage.completionTokens > 0 && usage.costUsd > 0, JSON.stringify(usage));
});

test("a refusal is a data-refusal part and no text", async () => {
  const m = await ask("what is the best banana bread recipe?");
  assert.equal(partsOf(m, "text").length, 0);
  const refusal = partsOf(m, "data-refusal")[0].data;
  assert.equal(refusal.reason, "no_relevant_context");
  assert.deepEqual(refusal.gap.projects, ["platform"]);
});

test("every frame validates against uiMessageChunkSchema, in the documented order", async () => {
  const res = await fetch(`${canon.url}/api/chat`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ id: "c", messages: [userMessage("how do deployment rollbacks work?")], trigger: "submit-message", project: "platform" }),
  });
  assert.equal(res.headers.get("x-vercel-ai-ui-message-stream"), "v1");
  assert.match(res.headers.get("content-type"), /^text\/event-stream/);
  const order = [];
  const reader = parseJsonEventStream({ stream: res.body, schema: uiMessageChunkSchema }).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    assert.ok(value.success, `invalid chunk: ${value.error}`);
    if (order.at(-1) !== value.value.type) order.push(value.value.type);
  }
  assert.deepEqual(order.slice(0, 6), ["start", "data-retrieval", "source-document", "data-related", "data-rejected",
    "text-start"]);
  assert.deepEqual(order.slice(-5), ["text-end", "data-answer", "data-usage", "data-followups", "finish"]);
  // Between them, the text and a data-citation just before each first marker.
  const middle = order.slice(6, -5);
  assert.ok(middle.every((t) => t === "text-delta" || t === "data-citation"), middle.join(","));
  assert.ok(middle.includes("data-citation"), middle.join(","));
});

test("a bad body is a 400 with a message", async () => {
  const res = await fetch(`${canon.url}/api/chat`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: '{"messages":[]}',
  });
  assert.equal(res.status, 400);
  assert.match((await res.json()).message, /messages is empty/);
});

test("a body that is not JSON (a cross-site form or text/plain post) is a 415", async () => {
  // fetch sends a string body as text/plain: a "simple" request no CORS preflight guards.
  const res = await fetch(`${canon.url}/api/chat`, { method: "POST", body: '{"messages":[]}' });
  assert.equal(res.status, 415);
  assert.match((await res.json()).message, /application\/json/);
});
