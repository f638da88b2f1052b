// Search and a streamed chat answer over gRPC-web from Node, against a live
// `canon serve` (CANON_URL, default http://127.0.0.1:8787) holding the example
// handbook in project "platform". `make test` runs it; it exits non-zero when an
// answer is missing, so it doubles as a test of the generated client.
import { Code, ConnectError } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-node";

import { createCanonClients, withApiKey } from "../src/index.js";

const baseUrl = process.env.CANON_URL ?? "http://127.0.0.1:8787";
const project = process.env.CANON_PROJECT ?? "platform";
// An API key (`canon keys create`), when the server wants one.
const apiKey = process.env.CANON_API_KEY;
const canon = createCanonClients(
  createGrpcWebTransport({ baseUrl, httpVersion: "1.1", interceptors: apiKey ? [withApiKey(apiKey)] : [] }),
);

function fail(message: string): never {
  console.error(`search-and-chat: ${message}`);
  process.exit(1);
}

const { result } = await canon.search.search({
  query: "what cache layer did we standardise on?",
  filters: { projectKeys: [project] },
  options: { limit: 3 },
});
const hits = result?.primary ?? [];
if (hits.length === 0) fail("Search returned no hits");
console.log(`Search (${result?.meta?.searchMode}, ${result?.meta?.retrievalMs.toFixed(1)} ms):`);
for (const h of hits) {
  console.log(`  ${h.score.toFixed(3)}  ${h.docId}  ${h.headingPath.join(" > ")}  [${h.status || "raw"}]`);
}
for (const h of result?.rejected ?? []) console.log(`  rejected approach: ${h.docId}`);
if (hits[0].docId !== "dec-cache-v2") fail(`expected dec-cache-v2 first, got ${hits[0].docId}`);

let retrieved = 0;
let streamed = "";
let citations = 0;
let refusal = "";
for await (const ev of canon.chat.chatStream({
  question: "how do deployment rollbacks work?",
  filters: { projectKeys: [project] },
})) {
  switch (ev.event.case) {
    case "retrieval":
      retrieved = ev.event.value.primaryCount;
      console.log(`\nChatStream: ${retrieved} chunks retrieved (${ev.event.value.docIds.join(", ")})`);
      break;
    case "delta":
      streamed += ev.event.value;
      process.stdout.write(ev.event.value);
      break;
    case "final":
      citations = ev.event.value.citations.length;
      refusal = ev.event.value.refusalReason;
      console.log(`\n-- ${citations} citations: ${ev.event.value.citations.map((c) => `[${c.n}] ${c.docId}`).join(", ")}`);
      break;
  }
}
if (retrieved === 0 || streamed === "" || citations === 0 || refusal !== "") {
  fail(`ChatStream: retrieved=${retrieved} streamed=${streamed.length} chars citations=${citations} refusal=${refusal}`);
}
// A key the server does not know (this one with its last character changed)
// is refused, with a message that says so.
if (apiKey) {
  const unknown = apiKey.slice(0, -1) + (apiKey.endsWith("A") ? "B" : "A");
  const stranger = createCanonClients(
    createGrpcWebTransport({ baseUrl, httpVersion: "1.1", interceptors: [withApiKey(unknown)] }),
  );
  try {
    await stranger.search.search({ query: "cache", filters: { projectKeys: [project] } });
    fail("an unknown key was accepted");
  } catch (err) {
    const e = ConnectError.from(err);
    if (e.code !== Code.Unauthenticated) fail(`an unknown key: ${e.message}, want Unauthenticated`);
    console.log(`unknown key: ${Code[e.code]}: ${e.rawMessage}`);
  }
}
console.log("search-and-chat: ok");
