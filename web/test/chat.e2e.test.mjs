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

async function freshPage(viewport = { width: 1280, height: 900 }, options = {}) {
  const ctx = await browser.newContext({ viewport, ...options });
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

test("a bare follow-up is read with the question before it, and the answer says so", async () => {
  const p = await freshPage();
  await p.getByText("New chat").click();
  await ask(p, "what cache layer did we standardise on?");
  await answered(p, 1);
  await ask(p, "why?");
  await answered(p, 2);
  const second = p.getByTestId("assistant-message").nth(1);
  assert.equal(await second.getByTestId("refusal").count(), 0);
  const note = second.getByTestId("retrieval-query");
  assert.match(await note.innerText(), /read with your previous question/);
  assert.equal(await note.getAttribute("title"), "searched for: what cache layer did we standardise on? why?");
  assert.equal(await p.getByTestId("assistant-message").first().getByTestId("retrieval-query").count(), 0);
  await shot(p, "16-follow-up");
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

/** The conversation's end (the last message, its sources and follow-ups) is on screen above the composer. */
const lastTurnInView = (p) =>
  p.evaluate(() => {
    const all = document.querySelectorAll('[data-testid="messages"] > .msg');
    const last = all[all.length - 1]?.getBoundingClientRect();
    const composer = document.querySelector(".composer").getBoundingClientRect();
    return !!last && last.top < composer.top && last.bottom <= composer.top + 1;
  });

async function waitInView(p, what) {
  for (let i = 0; i < 30; i++) {
    if (await lastTurnInView(p)) return;
    await sleep(100);
  }
  const at = await p.evaluate(() => ({ scrollY, height: innerHeight, page: document.documentElement.scrollHeight }));
  assert.fail(`${what}: the new turn is not on screen (${JSON.stringify(at)})`);
}

test("each new answer scrolls into view and the page follows it while it streams, unless the reader scrolls up", async () => {
  for (const [name, viewport] of [["desktop", { width: 1280, height: 900 }], ["phone", { width: 390, height: 844 }]]) {
    const p = await freshPage(viewport, name === "phone" ? { isMobile: true, hasTouch: true } : {});
    for (let i = 1; i <= 4; i++) {
      await ask(p, `how do deployment rollbacks work? (${i})`);
      // While it streams, then when it is done.
      await p.getByTestId("assistant-message").nth(i - 1).getByTestId("answer").waitFor();
      await waitInView(p, `${name}, answer ${i} streaming`);
      await answered(p, i);
      await waitInView(p, `${name}, answer ${i}`);
    }
    const y = await p.evaluate(() => scrollY);
    assert.ok(y > 0, `${name}: four answers fit without scrolling; the test proves nothing`);
    await shot(p, `08-scrolled-to-answer-4-${name}`);
    await p.context().close();
  }

  // Scrolling up while an answer streams stops the following; it stays where the reader put it.
  const p = await freshPage({ width: 1280, height: 700 });
  for (let i = 1; i <= 3; i++) {
    await ask(p, `how do deployment rollbacks work? (${i})`);
    await answered(p, i);
  }
  canon.model.state.slow = true;
  try {
    await ask(p, "how do deployment rollbacks work, slowly?");
    const answer = p.getByTestId("assistant-message").nth(3).getByTestId("answer");
    await p.waitForFunction((el) => el.textContent.includes("word2"), await answer.elementHandle());
    await waitInView(p, "slow answer");
    await p.mouse.move(400, 300);
    await p.mouse.wheel(0, -400);
    await sleep(300);
    const up = await p.evaluate(() => scrollY);
    await p.waitForFunction((el) => el.textContent.includes("word8"), await answer.elementHandle());
    assert.equal(await p.evaluate(() => scrollY), up, "the page scrolled back down while the reader was reading above");
    // Back at the end, it follows again.
    await p.evaluate(() => scrollTo(0, document.documentElement.scrollHeight));
    await p.waitForFunction((el) => el.textContent.includes("word13"), await answer.elementHandle());
    await waitInView(p, "after scrolling back down");
    await p.getByTestId("stop").click();
  } finally {
    canon.model.state.slow = false;
  }
  await p.context().close();
});

test("a citation's card opens on click and on tap, stays open, and closes on a second click, Escape or outside", async () => {
  const p = await freshPage();
  await ask(p, "what cache layer did we standardise on?");
  await answered(p, 1);
  const chip = p.getByTestId("cite").first();
  const card = p.getByTestId("cite-card");
  assert.match(await chip.getAttribute("aria-label"), /^Source \d+: \S/);
  await chip.click();
  await sleep(300);
  assert.equal(await card.count(), 1, "a click left the card closed");
  assert.equal(await chip.getAttribute("aria-expanded"), "true");
  assert.equal(await chip.getAttribute("aria-controls"), await card.getAttribute("id"));
  // It stays open when the mouse leaves, until a click outside.
  await p.mouse.move(5, 5);
  await sleep(200);
  assert.equal(await card.count(), 1, "a clicked card closed when the mouse left it");
  await shot(p, "09-citation-clicked");
  await p.mouse.click(5, 5);
  await card.waitFor({ state: "detached" });
  await chip.click();
  await card.waitFor();
  await chip.click();
  await card.waitFor({ state: "detached" });
  assert.equal(await chip.getAttribute("aria-expanded"), "false");
  await chip.click();
  await card.waitFor();
  await p.keyboard.press("Escape");
  await card.waitFor({ state: "detached" });
  // Keyboard: Enter on the focused chip keeps the card open; Escape closes it.
  await chip.focus();
  await p.keyboard.press("Enter");
  await card.waitFor();
  await sleep(200);
  assert.equal(await card.count(), 1);
  await p.keyboard.press("Escape");
  await card.waitFor({ state: "detached" });
  await p.context().close();

  // A phone: one tap opens the card on screen; its link opens the document.
  const m = await freshPage({ width: 375, height: 740 }, { isMobile: true, hasTouch: true });
  await ask(m, "what cache layer did we standardise on?");
  await answered(m, 1);
  await m.getByTestId("cite").first().tap();
  await sleep(300);
  assert.equal(await m.getByTestId("cite-card").count(), 1, "a tap left the card closed");
  const box = await m.getByTestId("cite-card").boundingBox();
  assert.ok(box.x >= 0 && box.x + box.width <= 375 && box.y >= 0 && box.y + box.height <= 740, `card off screen: ${JSON.stringify(box)}`);
  await shot(m, "10-citation-tapped-phone");
  await m.tap("header, .top", { position: { x: 5, y: 5 } }).catch(() => m.touchscreen.tap(5, 5));
  await m.getByTestId("cite-card").waitFor({ state: "detached" });
  await m.getByTestId("cite").first().tap();
  await m.getByTestId("cite-link").tap();
  await m.waitForURL(/\/app\/doc\/platform\//);
  await m.context().close();
});

test("a chat error says what went wrong in words and what to do; the server's reply is under Details", async () => {
  const p = await freshPage({ width: 390, height: 844 });
  await ask(p, "why " + "x".repeat(4096));
  const err = p.getByTestId("chat-error");
  await err.waitFor();
  const text = await err.innerText();
  assert.doesNotMatch(text, /[{}"]|invalid_argument/, `raw JSON shown: ${text}`);
  assert.match(await p.getByTestId("chat-error-message").innerText(), /question is 4100 characters long; the limit is 4000/);
  assert.match(text, /Shorten the question/);
  await waitInView(p, "the error");
  await shot(p, "11-error-long-question-phone");
  await err.getByText("Details").click();
  assert.match(await p.getByTestId("chat-error-details").innerText(), /"code":"invalid_argument"/);
  await p.context().close();

  const d = await freshPage();
  await d.getByTestId("filters-toggle").click();
  await d.getByTestId("filter-from").fill("2026-01-01");
  await d.getByTestId("filter-to").fill("2025-01-01");
  await ask(d, "how do deployment rollbacks work?");
  await d.getByTestId("chat-error").waitFor();
  assert.match(await d.getByTestId("chat-error-message").innerText(), /date_from \(2026-01-01\) is after date_to \(2025-01-01\)/);
  assert.match(await d.getByTestId("chat-error").innerText(), /From and To dates under Filters/);
  await shot(d, "12-error-dates");
  await d.context().close();
});

test("a wide table scrolls sideways inside the answer at phone width; its words are not broken", async () => {
  const p = await freshPage({ width: 375, height: 740 }, { isMobile: true, hasTouch: true });
  await ask(p, "which ingest error codes are there, as a table?");
  await answered(p, 1);
  const box = p.getByTestId("table-scroll");
  await box.waitFor();
  const m = await box.evaluate((el) => {
    const cells = [...el.querySelectorAll("td, th")];
    const oneLine = (c) => {
      const r = document.createRange();
      r.selectNodeContents(c);
      return r.getClientRects().length === 1;
    };
    return {
      scroll: el.scrollWidth,
      client: el.clientWidth,
      page: document.documentElement.scrollWidth,
      broken: cells.filter((c) => /^\S+$/.test(c.textContent.trim()) && !oneLine(c)).map((c) => c.textContent),
    };
  });
  assert.ok(m.scroll > m.client, `the table does not scroll: ${JSON.stringify(m)}`);
  assert.ok(m.page <= 375, `the page itself scrolls sideways: ${JSON.stringify(m)}`);
  assert.deepEqual(m.broken, [], "single words broken across lines");
  await shot(p, "13-table-phone");
  await box.evaluate((el) => (el.scrollLeft = el.scrollWidth));
  await shot(p, "13b-table-phone-scrolled");
  await p.context().close();
});

test("a conversation stays in its project: another project starts a new one, and an edit asks in the original project", async () => {
  const p = await freshPage();
  const bodies = [];
  p.on("request", (r) => r.url().endsWith("/api/chat") && bodies.push(r.postDataJSON()));
  await ask(p, "how do deployment rollbacks work?");
  await answered(p, 1);
  assert.equal(bodies.at(-1).project, "platform");

  await p.getByTestId("project-picker").selectOption("payments");
  await p.getByTestId("project-switch-note").waitFor();
  assert.match(await p.getByTestId("project-switch-note").innerText(), /New conversation in payments.*platform conversation is still in the conversation list/s);
  assert.equal(await p.getByTestId("user-message").count(), 0, "the platform conversation is still shown");
  await shot(p, "14-project-switch");
  await ask(p, "and why was that decided?");
  await p.locator('[data-testid="assistant-message"][aria-busy="false"]').first().waitFor();
  assert.equal(bodies.at(-1).project, "payments");
  assert.equal(bodies.at(-1).messages.length, 1, "the platform history went to payments");

  // Back in the platform conversation the picker says platform, and an edit asks there.
  const picker = p.getByTestId("conversation-picker");
  const platformConv = await picker.locator("option", { hasText: "platform · how do deployment rollbacks" }).getAttribute("value");
  await picker.selectOption(platformConv);
  await p.getByTestId("user-message").first().waitFor();
  assert.equal(await p.getByTestId("project-picker").inputValue(), "platform");
  await p.getByTestId("user-message").first().getByTestId("edit").click();
  await p.getByTestId("edit-input").fill("how is the session store cached?");
  await p.getByTestId("edit-save").click();
  await answered(p, 1);
  assert.equal(bodies.at(-1).project, "platform");
  assert.equal(bodies.at(-1).messages.length, 1);
  await shot(p, "15-edit-in-own-project");
  await p.context().close();
});
