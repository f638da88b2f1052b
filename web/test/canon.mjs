// Test fixture: a fresh database on the cluster in $DATABASE_URL with the
// example handbook ingested, a fake OpenAI-compatible model server in this
// process, and a real `bin/canon serve` talking to both.
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import http from "node:http";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

export const repo = path.resolve(import.meta.dirname, "../..");
const canonBin = path.join(repo, "bin/canon");

/**
 * The numbers of the first two passages under the prompt's "## Context" (the
 * search hits; rejected approaches and related context come before them), as a
 * model answering from the results would cite them.
 */
function contextNumbers(body) {
  const prompt = (body?.messages ?? []).map((m) => (typeof m.content === "string" ? m.content : "")).join("\n");
  const context = prompt.slice(Math.max(prompt.indexOf("## Context"), 0));
  const numbers = [...context.matchAll(/^\[(\d+)\] doc_id:/gm)].map((m) => m[1]);
  return [numbers[0] ?? "1", numbers[1] ?? numbers[0] ?? "2"];
}

/**
 * The fake model streams an answer citing the first two search hits, one word per `delay`
 * ms, numbering its answers so a regenerated one differs. `slow` makes it
 * crawl (for Stop); `cancelled` counts requests whose client left mid-stream.
 */
export async function startFakeModel() {
  const state = { delay: 40, slow: false, requests: 0, cancelled: 0, lastBody: null };
  const server = http.createServer(async (req, res) => {
    if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) {
      res.writeHead(404).end();
      return;
    }
    let body = "";
    for await (const part of req) body += part;
    state.lastBody = JSON.parse(body);
    const n = ++state.requests;
    const [first, second] = contextNumbers(state.lastBody);
    const asked = (state.lastBody.messages ?? []).filter((m) => m.role === "user").at(-1)?.content;
    const text = state.slow
      ? Array.from({ length: 200 }, (_, i) => `word${i} `).join("")
      : typeof asked === "string" && asked.includes("with html")
      ? `Answer ${n}: <img src=x onerror="window.__pwned=1"> <b>bold</b> [${first}].`
      : typeof asked === "string" && asked.includes("as a list")
      ? `Answer ${n}, the steps [${first}]:\n\n- Run \`shipctl rollback\` first [${first}].\n- Then watch **the dashboard** [${second}].\n`
      : typeof asked === "string" && asked.includes("as a table")
      ? `Answer ${n}, the codes [${first}]:\n\n| Code | Severity | Meaning | Runbook |\n|---|---|---|---|\n` +
        `| ORC-101 | critical | the ingest worker lost its lease on the partition | rb-ingest-error-codes [${first}] |\n` +
        `| ORC-107 | warning | a backfill overlaps the nightly window | rb-backfill [${second}] |\n`
      : `Answer ${n}: the team standardised on the option in the first source [${first}]. ` +
        `It builds on the related context described in the second source [${second}], ` +
        `which the handbook keeps current.`;
    const words = text.match(/\S+\s*/g);
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
    let finished = false;
    res.on("close", () => {
      if (!finished) state.cancelled++;
    });
    const send = (obj) => res.write(`data: ${typeof obj === "string" ? obj : JSON.stringify(obj)}\n\n`);
    const chunk = (delta, finish = null) => ({
      id: `cmpl-${n}`, object: "chat.completion.chunk", created: 1, model: "fake-model",
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    for (const w of words) {
      if (res.destroyed) return;
      send(chunk({ content: w }));
      await sleep(state.slow ? 250 : state.delay);
    }
    send(chunk({}, "stop"));
    send({ id: `cmpl-${n}`, object: "chat.completion.chunk", created: 1, model: "fake-model", choices: [],
      usage: { prompt_tokens: 1500 + n, completion_tokens: words.length, total_tokens: 1500 + n + words.length } });
    send("[DONE]");
    finished = true;
    res.end();
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { state, url: `http://127.0.0.1:${server.address().port}/v1`, close: () => server.close() };
}

function psql(url, sql) {
  execFileSync("psql", [url, "-v", "ON_ERROR_STOP=1", "-qc", sql], {
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, PGOPTIONS: "-c client_min_messages=warning" },
  });
}

/**
 * Starts the whole fixture; call stop() when done (drops the database). With
 * auth, canon serve runs with KB_AUTH=required and createKey makes keys with
 * `canon keys create`.
 */
export async function startCanon({ auth = false } = {}) {
  const base = process.env.DATABASE_URL;
  if (!base) throw new Error("DATABASE_URL is not set: run the browser tests through `make web-test`");
  const dbName = `canon_webtest_${process.pid}`;
  const admin = new URL(base);
  const dbURL = new URL(base);
  dbURL.pathname = `/${dbName}`;
  psql(admin.href, `DROP DATABASE IF EXISTS ${dbName}`);
  psql(admin.href, `CREATE DATABASE ${dbName}`);
  const model = await startFakeModel();
  const env = {
    ...process.env,
    DATABASE_URL: dbURL.href,
    KB_LLM_PROVIDER: "openai",
    KB_LLM_BASE_URL: model.url,
    KB_LLM_MODEL: "fake-model",
    KB_LLM_API_KEY: "",
    KB_LLM_PRICES: "fake-model=0.5/1.5",
    KB_LLM_MAX_RETRIES: "0",
    KB_AUTH: auth ? "required" : "off",
  };
  const run = (...args) => execFileSync(canonBin, args, { env, cwd: repo, stdio: ["ignore", "ignore", "inherit"] });
  /** A new API key (its secret) for one project and role. */
  const createKey = (project, role = "reader") =>
    JSON.parse(
      execFileSync(canonBin, ["keys", "create", "--project", project, "--role", role, "--name", `web-${project}`, "--json"], {
        env, cwd: repo, stdio: ["ignore", "pipe", "inherit"],
      }),
    ).key;
  let serve;
  const stop = async () => {
    if (serve && serve.exitCode === null) {
      serve.kill("SIGTERM");
      await Promise.race([once(serve, "exit"), sleep(5000)]);
    }
    model.close();
    try {
      psql(admin.href, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    } catch (e) {
      console.error(`could not drop ${dbName}: ${e.message}`);
    }
  };
  try {
    run("migrate", "up");
    run("ingest", "examples/handbook", "--project", "platform");
    serve = spawn(canonBin, ["serve", "--addr", "127.0.0.1:0"], { env, cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
    const log = [];
    serve.stderr.on("data", (d) => log.push(String(d)));
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`canon serve did not start:\n${log.join("")}`)), 30000);
      let out = "";
      serve.stdout.on("data", (d) => {
        out += d;
        const m = out.match(/listening on (http:\/\/\S+)/);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      serve.on("exit", (code) => reject(new Error(`canon serve exited (${code}):\n${log.join("")}`)));
    });
    return { url, model, stop, log, createKey };
  } catch (e) {
    await stop();
    throw e;
  }
}
