// The web chat against `canon serve` with KB_AUTH=required, in Debian's headless
// Chromium: the page asks for a key, says when one is refused, keeps a good one
// in session storage for the chat and the document view, and a reader key for
// one project cannot read another's documents. Screenshots go to web/test-results/.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import { chromium } from "playwright-core";
import { startCanon } from "./canon.mjs";

const shots = path.resolve(import.meta.dirname, "../test-results");
mkdirSync(shots, { recursive: true });

let canon, browser, platformKey, paymentsKey;
before(async () => {
  canon = await startCanon({ auth: true });
  platformKey = canon.createKey("platform");
  paymentsKey = canon.createKey("payments");
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
});
after(async () => {
  await browser?.close();
  await canon?.stop();
});

const shot = (p, name) => p.screenshot({ path: path.join(shots, `${name}.png`) });
const bearer = (key) => ({ Authorization: `Bearer ${key}` });

test("/api/* and the RPCs answer 401 Unauthenticated without a key; the page itself is public", async () => {
  const routes = [
    ["POST", "/api/chat", { "Content-Type": "application/json" }, JSON.stringify({ project: "platform", messages: [] })],
    ["GET", "/api/doc/platform/dec-cache-v2", {}, undefined],
    ["POST", "/canon.v1.ProjectService/ListProjects", { "Content-Type": "application/json" }, "{}"],
  ];
  for (const [method, route, headers, body] of routes) {
    for (const auth of [{}, bearer("not-a-canon-key")]) {
      const res = await fetch(canon.url + route, { method, headers: { ...headers, ...auth }, body });
      assert.equal(res.status, 401, `${method} ${route} ${auth.Authorization ? "with a bad key" : "without a key"}`);
      assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer/);
      const json = await res.json();
      assert.equal(json.code, "unauthenticated", `${route}: ${JSON.stringify(json)}`);
      assert.ok(json.message, `${route} says why`);
    }
  }
  const page = await fetch(`${canon.url}/app/chat`);
  assert.equal(page.status, 200);
  assert.match(page.headers.get("content-type"), /text\/html/);
});

test("the page asks for a key, says a wrong one was refused, and answers with a right one", async () => {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(20000);
  await page.goto(`${canon.url}/app/chat`);

  // Listing projects answered 401: the dialog asks for a key.
  const dialog = page.getByTestId("key-dialog");
  await dialog.waitFor();
  assert.match(await page.getByTestId("key-error").innerText(), /needs an API key/);
  assert.equal(await page.getByTestId("project-picker").locator("option", { hasText: "platform" }).count(), 0);
  await shot(page, "10-auth-key-dialog");

  // A wrong key: the page tries it, and the dialog comes back saying it was refused.
  // A typo in the last character: well formed, unknown. The last of a key's 43
  // base64url characters carries 4 bits and two zero bits, so only a character
  // with those zero (A, E, ...) keeps the key well formed: "B" made it malformed.
  const typo = platformKey.slice(0, -1) + (platformKey.endsWith("A") ? "E" : "A");
  await page.getByTestId("key-input").fill(typo);
  await page.getByTestId("key-save").click();
  await page.getByTestId("key-error").filter({ hasText: "refused" }).waitFor();
  assert.match(await page.getByTestId("key-error").innerText(), /refused the API key.*unknown API key/);
  await shot(page, "11-auth-wrong-key");

  // The right key: kept in session storage (not local storage), and the projects load.
  await page.getByTestId("key-input").fill(platformKey);
  await page.getByTestId("key-save").click();
  await dialog.waitFor({ state: "detached" });
  assert.equal(await page.evaluate(() => sessionStorage.getItem("canon.apiKey")), platformKey);
  const stored = await page.evaluate(() => JSON.stringify(localStorage));
  assert.ok(!stored.includes(platformKey), "the key leaked into local storage");
  const options = page.getByTestId("project-picker").locator("option");
  await options.filter({ hasText: "platform" }).waitFor({ state: "attached" });
  const projects = await options.allInnerTexts();
  assert.ok(!projects.some((p) => p.includes("payments")), `a platform key lists only its projects: ${projects}`);
  await page.getByTestId("project-picker").selectOption("platform");

  // A question answers with citations.
  await page.getByTestId("question").fill("what cache layer did we standardise on?");
  await page.getByTestId("question").press("Enter");
  await page.getByTestId("assistant-message").first().getByTestId("answer-meter").waitFor();
  assert.equal(await page.getByTestId("chat-error").count(), 0);
  assert.ok((await page.getByTestId("cite").count()) > 0, "the answer has no citation chips");
  await page.getByTestId("cite").first().hover();
  const href = await page.getByTestId("cite-card").getByTestId("cite-link").getAttribute("href");
  assert.match(href, /^\/app\/doc\/platform\/[^/]+\?chunk=\d+$/);
  await shot(page, "12-auth-answer");

  // The document view, in the same tab, reads with the key from session storage.
  await page.goto(canon.url + href);
  await page.getByTestId("cited-chunk").waitFor();
  assert.equal(await page.getByTestId("key-dialog").count(), 0);
  await shot(page, "13-auth-document-view");

  // Another project's document: refused with the reason, nothing of it shown.
  await page.goto(`${canon.url}/app/doc/payments/pay-dec-cache`);
  const refused = page.getByRole("alert");
  await refused.waitFor();
  assert.match(await refused.innerText(), /may not use project "payments"/);
  assert.equal(await page.getByTestId("doc").count(), 0);
  await shot(page, "14-auth-other-project-refused");
  await ctx.close();
});

test("a reader key for one project cannot read another project's documents", async () => {
  const doc = (project, slug, key) => fetch(`${canon.url}/api/doc/${project}/${slug}`, { headers: bearer(key) });

  let res = await doc("payments", "pay-dec-cache", paymentsKey);
  assert.equal(res.status, 200, "the payments key reads its own document");
  assert.equal((await res.json()).slug, "pay-dec-cache");

  res = await doc("payments", "pay-dec-cache", platformKey);
  assert.equal(res.status, 403);
  assert.equal((await res.json()).code, "permission_denied");
  // An unknown project answers like a forbidden one, so keys cannot probe for project names.
  res = await doc("no-such-project", "pay-dec-cache", platformKey);
  assert.equal(res.status, 403);

  res = await doc("platform", "dec-cache-v2", paymentsKey);
  assert.equal(res.status, 403);
  res = await doc("platform", "dec-cache-v2", platformKey);
  assert.equal(res.status, 200);

  // The chat route refuses the other project too, before any model call.
  const requests = canon.model.state.requests;
  res = await fetch(`${canon.url}/api/chat`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...bearer(platformKey) },
    body: JSON.stringify({
      project: "payments",
      messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "which cache did payments choose?" }] }],
    }),
  });
  assert.equal(res.status, 403, await res.text());
  assert.equal(canon.model.state.requests, requests, "a refused chat reached the model");
});
