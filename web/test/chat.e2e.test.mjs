// The chat page as a person uses it, in Debian's headless Chromium driven by
// playwright-core, against a real `canon serve` on the example handbook.
// Screenshots of the main states go to web/test-results/.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, test } from "node:test";
import { chromium } from "playwright-core";
import { startCanon } from "./canon.mjs";

const shots = path.resolve(import.meta.dirname, "../test-results");
mkdirSync(shots, { recursive: true });

let canon, browser, page;
before(async () => {
  canon = await startCanon();
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
});
after(async () => {
  await browser?.close();
  await canon?.stop();
});

async function freshPage(viewport = { width: 1280, height: 900 }) {
  const ctx = await browser.newContext({ viewport });
  const p = await ctx.newPage();
  p.setDefaultTimeout(20000);
  await p.goto(`${canon.url}/app/chat`);
  await p.getByTestId("project-picker").locator("option", { hasText: "platform" }).waitFor({ state: "attached" });
  await p.getByTestId("project-picker").selectOption("platform");
  return p;
}

const shot = (p, name) => p.screenshot({ path: path.join(shots, `${name}.png`) });

async function ask(p, question) {
  await p.getByTestId("question").fill(question);
  await p.getByTestId("question").press("Enter");
}

/** Waits until the last answer is complete (its usage meter arrived). */
async function answered(p, count) {
  await p.getByTestId("assistant-message").nth(count - 1).locator('[data-testid="answer-meter"]').waitFor();
}

test("tokens stream in over several paints; a citation's hover card links to the document", async () => {
  page = await freshPage();
  // Record the answer's text length on every animation frame.
  await page.evaluate(() => {
    window.__paints = [];
    const tick = () => {
      const el = document.querySelector('[data-testid="answer"]');
      const len = el ? el.textContent.length : 0;
      if (len && window.__paints.at(-1) !== len) window.__paints.push(len);
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  await ask(page, "what cache layer did we standardise on?");
  await answered(page, 1);
  const paints = await page.evaluate(() => window.__paints);
  assert.ok(paints.length >= 3, `the answer appeared in ${paints.length} paints: ${paints}`);
  const live = await page.getByTestId("messages").getAttribute("aria-live");
  assert.equal(live, "polite");

  const chip = page.getByTestId("cite").first();
  await chip.hover();
  const card = page.getByTestId("cite-card");
  await card.waitFor();
  const cardText = await card.innerText();
  assert.match(cardText, /evidence|accepted|active|superseded/i);
  // The answer cites the search hits, not the rejected approach shown above it.
  assert.doesNotMatch(cardText, /rejected approach/i);
  const href = await card.getByTestId("cite-link").getAttribute("href");
  assert.match(href, /^\/app\/doc\/platform\/[^/]+\?chunk=\d+$/);
  assert.ok((await page.getByTestId("rejected").innerText()).includes("⚠"));
  await shot(page, "01-answer-hover-card");

  // The document view highlights the cited chunk and lists edges both ways.
  const doc = await browser.newPage();
  await doc.goto(canon.url + href);
  await doc.getByTestId("cited-chunk").waitFor();
  assert.ok((await doc.getByText("Links to").count()) === 1 && (await doc.getByText("Linked from").count()) === 1);
  await doc.screenshot({ path: path.join(shots, "02-document-view.png") });
  await doc.close();
});

test("a follow-up chip asks its question", async () => {
  const chip = page.getByTestId("followup").first();
  const q = (await chip.innerText()).trim();
  await chip.click();
  await answered(page, 2);
  const users = await page.getByTestId("user-text").allInnerTexts();
  assert.equal(users.at(-1).trim(), q);
});

test("an answer's Markdown is rendered: a list with its items, code, emphasis, each citation a chip", async () => {
  const p = await freshPage();
  await ask(p, "how do I roll back a release, as a list?");
  await answered(p, 1);
  const answer = p.getByTestId("answer");
  assert.equal(await answer.locator("li").count(), 2);
  assert.equal(await answer.locator("li code").innerText(), "shipctl rollback");
  assert.equal(await answer.locator("li strong").innerText(), "the dashboard");
  assert.equal(await answer.locator("li").first().getByTestId("cite").count(), 1);
  const text = await answer.innerText();
  assert.doesNotMatch(text, /`|\*\*|^- /m, `Markdown shown as text: ${text}`);
  await shot(p, "01b-markdown-answer");
  await p.context().close();
});

test("a first visit picks the largest project, not the alphabetically first", async () => {
  const ctx = await browser.newContext();
  const p = await ctx.newPage();
  await p.goto(`${canon.url}/app/chat`);
  await p.getByTestId("project-picker").locator("option", { hasText: "payments" }).waitFor({ state: "attached" });
  await p.waitForFunction(() => document.querySelector('[data-testid="project-picker"]').value !== "");
  assert.equal(await p.getByTestId("project-picker").inputValue(), "platform");
  await ctx.close();
});

test("HTML in an answer is shown as text, never run", async () => {
  const p = await freshPage();
  await ask(p, "what do we use for caching, with html?");
  await answered(p, 1);
  const answer = p.getByTestId("answer");
  assert.equal(await answer.locator("img, b").count(), 0);
  assert.match(await answer.innerText(), /<b>bold<\/b>/);
  assert.equal(await p.evaluate(() => window.__pwned), undefined);
  await p.context().close();
});

test("Stop ends the answer mid-stream and the server cancels the model request", async () => {
  canon.model.state.slow = true;
  const before = canon.model.state.cancelled;
  await ask(page, "how do deployment rollbacks work?");
  const answer = page.getByTestId("assistant-message").nth(2).getByTestId("answer");
  await page.waitForFunction((el) => el.textContent.includes("word3"), await answer.elementHandle());
  await page.getByTestId("stop").click();
  await page.getByTestId("send").waitFor();
  const stoppedAt = await answer.innerText();
  for (let i = 0; i < 50 && canon.model.state.cancelled === before; i++) await sleep(100);
  canon.model.state.slow = false;
  assert.equal(canon.model.state.cancelled, before + 1, "the model server did not see the request cancelled");
  await sleep(600);
  assert.equal(await answer.innerText(), stoppedAt, "text kept arriving after Stop");
  assert.ok(!stoppedAt.includes("word199"));
  await shot(page, "03-stopped");
});

test("Regenerate makes a second answer; the branch switcher goes between them", async () => {
  await page.getByTestId("regenerate").click();
  await answered(page, 3);
  const last = page.getByTestId("assistant-message").nth(2);
  assert.equal(await last.getByTestId("branch-position").innerText(), "2/2");
  const regenerated = await last.getByTestId("answer").innerText();
  await last.getByRole("button", { name: "Previous branch" }).click();
  const previous = page.getByTestId("assistant-message").nth(2);
  assert.equal(await previous.getByTestId("branch-position").innerText(), "1/2");
  assert.notEqual(await previous.getByTestId("answer").innerText(), regenerated);
  await previous.getByRole("button", { name: "Next branch" }).click();
});

test("editing a past question branches the conversation; both branches stay reachable", async () => {
  const firstQuestion = page.getByTestId("user-message").first();
  await firstQuestion.getByTestId("edit").click();
  await page.getByTestId("edit-input").fill("how is the session store cached?");
  await page.getByTestId("edit-save").click();
  await answered(page, 1);
  await page.getByTestId("send").waitFor();
  assert.equal(await page.getByTestId("user-message").count(), 1);
  const edited = page.getByTestId("user-message").first();
  assert.equal(await edited.getByTestId("branch-position").innerText(), "2/2");
  assert.equal((await edited.getByTestId("user-text").innerText()).trim(), "how is the session store cached?");
  await shot(page, "04-edited-branch");
  await edited.getByRole("button", { name: "Previous branch" }).click();
  await page.getByTestId("user-message").nth(2).waitFor();
  const texts = await page.getByTestId("user-text").allInnerTexts();
  assert.equal(texts[0].trim(), "what cache layer did we standardise on?");
  assert.equal(texts.length, 3);
  // The conversation survives a reload (local storage).
  await page.reload();
  await page.getByTestId("user-message").nth(2).waitFor();
});

test("an off-topic question gets the refusal card, recorded as a content gap", async () => {
  const p = await freshPage({ width: 375, height: 800 });
  await p.getByText("New chat").click();
  await ask(p, "what is the best banana bread recipe?");
  const card = p.getByTestId("refusal");
  await card.waitFor();
  assert.match(await card.innerText(), /content gap/);
  assert.equal(await p.getByTestId("chat-error").count(), 0);
  await shot(p, "05-refusal-mobile");
  // The chat log writes gaps in the background: look again until it has.
  for (let i = 0; i < 20; i++) {
    await p.goto(`${canon.url}/app/gaps`);
    await p.getByTestId("gaps").locator("table, p:has-text('No unanswered')").first().waitFor();
    if ((await p.getByTestId("gap").count()) > 0) break;
    await sleep(500);
  }
  assert.match(await p.getByTestId("gaps").innerText(), /banana bread/);
  await shot(p, "06-content-gaps-mobile");
  await p.context().close();
});

test("a filter changes the sources; Explain shows each hit's signals", async () => {
  const p = await freshPage();
  await p.getByText("New chat").click();
  const sourcesOf = async (i) =>
    p.getByTestId("assistant-message").nth(i).locator("[data-doc]").evaluateAll((els) => els.map((e) => e.dataset.doc));
  await ask(p, "how do deployment rollbacks work?");
  await answered(p, 1);
  const unfiltered = await sourcesOf(0);
  await p.getByTestId("filters-toggle").click();
  await p.getByTestId("filter-types").fill("decision");
  await p.getByTestId("explain-toggle").check();
  await ask(p, "how do deployment rollbacks work?");
  await answered(p, 2);
  const filtered = await sourcesOf(1);
  assert.notDeepEqual(filtered, unfiltered);
  assert.ok(filtered.every((d) => d.startsWith("dec-") || d.startsWith("rej-")), `filtered sources: ${filtered}`);
  await p.getByTestId("explain").last().waitFor();
  assert.match(await p.getByTestId("explain").last().innerText(), /contribution/);
  await shot(p, "07-filters-explain");
  await p.context().close();
});

/** Presses Tab until the element with the test id has the focus (at most max presses). */
async function tabTo(p, testId, max = 80) {
  for (let i = 0; i < max; i++) {
    await p.keyboard.press("Tab");
    if (await p.evaluate((id) => document.activeElement?.dataset?.testid === id, testId)) return;
  }
  assert.fail(`${testId} never got the focus in ${max} Tab presses`);
}

test("usable by keyboard alone: ask, open a citation's card, follow it to the document", async () => {
  const p = await freshPage();
  await p.getByText("New chat").click();
  await p.locator("body").focus();
  await tabTo(p, "question");
  await p.keyboard.type("what cache layer did we standardise on?");
  await p.keyboard.press("Enter");
  await answered(p, 1);
  // A citation chip is reachable by Tab, and its card opens on focus.
  await p.locator("body").focus();
  await tabTo(p, "cite");
  await p.getByTestId("cite-card").waitFor();
  await tabTo(p, "cite-link", 3);
  await p.keyboard.press("Enter");
  await p.waitForURL(/\/app\/doc\/platform\//);
  await p.getByTestId("cited-chunk").waitFor();
  await p.context().close();
});
