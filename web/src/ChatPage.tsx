import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport } from "ai";
import { useEffect, useMemo, useRef, useState } from "react";
import { authFetch, authHeaders, rpc } from "./api";
import { Message } from "./Message";
import {
  activePath,
  loadConversations,
  newConversation,
  pathBefore,
  saveConversations,
  siblings,
  switchTo,
  syncPath,
  type Conversation,
} from "./store";
import { filtersJSON, noFilters, readTurn, type CanonMessage, type Filters } from "./types";

type Settings = { project: string; filters: Filters; fusion: string; explain: boolean };
const settingsKey = "canon.settings";

function loadSettings(): Settings {
  try {
    return { project: "", filters: noFilters, fusion: "", explain: false, ...JSON.parse(localStorage.getItem(settingsKey) ?? "{}") };
  } catch {
    return { project: "", filters: noFilters, fusion: "", explain: false };
  }
}

export function ChatPage() {
  const [conversations, setConversations] = useState<Conversation[]>(() => {
    const all = loadConversations();
    return all.length ? all : [newConversation()];
  });
  const [currentId, setCurrentId] = useState(() => conversations[0].id);
  const current = conversations.find((c) => c.id === currentId) ?? conversations[0];
  const [settings, setSettings] = useState<Settings>(loadSettings);
  const [projects, setProjects] = useState<string[]>([]);
  const [showFilters, setShowFilters] = useState(false);
  const settingsRef = useRef(settings);
  settingsRef.current = settings;

  useEffect(() => {
    localStorage.setItem(settingsKey, JSON.stringify(settings));
  }, [settings]);
  useEffect(() => {
    rpc<{ projects?: { projectKey: string; documents?: string | number }[] }>("canon.v1.ProjectService/ListProjects", {})
      .then((r) => {
        const list = r.projects ?? [];
        const keys = list.map((p) => p.projectKey);
        setProjects(keys);
        // The project last used, else (a first visit, or it is gone) the largest.
        const largest = list.reduce<(typeof list)[number] | undefined>(
          (best, p) => (!best || Number(p.documents ?? 0) > Number(best.documents ?? 0) ? p : best),
          undefined,
        );
        setSettings((s) => (keys.includes(s.project) || !largest ? s : { ...s, project: largest.projectKey }));
      })
      .catch(() => setProjects([]));
  }, []);

  const transport = useMemo(
    () =>
      new DefaultChatTransport<CanonMessage>({
        api: "/api/chat",
        fetch: authFetch,
        headers: () => authHeaders(),
        body: () => {
          const s = settingsRef.current;
          return { project: s.project, filters: filtersJSON(s.project, s.filters), fusion: s.fusion };
        },
      }),
    [],
  );
  const chat = useChat<CanonMessage>({
    id: current.id,
    messages: activePath(current),
    transport,
    experimental_throttle: 30,
  });
  const { messages, status, error } = chat;
  const busy = status === "submitted" || status === "streaming";

  // useChat's messages are the active path: record them in the tree.
  useEffect(() => {
    setConversations((all) => {
      const i = all.findIndex((c) => c.id === chat.id);
      if (i < 0) return all;
      const next = [...all];
      next[i] = syncPath(all[i], messages);
      if (status === "ready" || status === "error") saveConversations(next);
      return next;
    });
  }, [messages, status, chat.id]);

  const [input, setInput] = useState("");
  const inputRef = useRef<HTMLTextAreaElement>(null);
  const send = (text: string) => {
    const q = text.trim();
    if (!q || busy) return;
    chat.sendMessage({ text: q });
    setInput("");
  };

  const editQuestion = (id: string, text: string) => {
    if (busy) chat.stop();
    // The edited question becomes a sibling of the old one: the old branch stays.
    chat.setMessages(pathBefore(current, id));
    chat.sendMessage({ text });
  };
  const switchBranch = (id: string, delta: number) => {
    const { ids, index, parent } = siblings(current, id);
    const target = ids[index + delta];
    if (!target) return;
    if (busy) chat.stop();
    const next = switchTo(current, parent, target);
    setConversations((all) => all.map((c) => (c.id === next.id ? next : c)));
    chat.setMessages(activePath(next));
  };

  const startNew = () => {
    if (busy) chat.stop();
    const c = newConversation();
    setConversations((all) => [c, ...all]);
    setCurrentId(c.id);
  };

  const totals = useMemo(() => {
    let prompt = 0,
      completion = 0,
      cost = 0;
    for (const node of Object.values(current.nodes)) {
      if (node.msg.role !== "assistant") continue;
      const u = readTurn(node.msg).usage;
      if (u) {
        prompt += u.promptTokens;
        completion += u.completionTokens;
        cost += u.costUsd;
      }
    }
    return { prompt, completion, cost };
  }, [current]);

  const lastAssistant = [...messages].reverse().find((m) => m.role === "assistant");
  const lastTurn = lastAssistant ? readTurn(lastAssistant) : undefined;
  const questionOf = (i: number) => {
    for (let j = i - 1; j >= 0; j--) if (messages[j].role === "user") return messages[j];
    return undefined;
  };

  const setFilter = (k: keyof Filters, v: string) =>
    setSettings((s) => ({ ...s, filters: { ...s.filters, [k]: v } }));
  const activeFilters = Object.values(settings.filters).filter(Boolean).length;

  return (
    <main className="chat-layout">
      <section className="controls" aria-label="Conversation and search settings">
        <div className="row wrap">
          <label>
            <span className="sr-only">Conversation</span>
            <select
              value={current.id}
              onChange={(e) => {
                if (busy) chat.stop();
                setCurrentId(e.target.value);
              }}
              data-testid="conversation-picker"
            >
              {conversations.map((c) => (
                <option key={c.id} value={c.id}>
                  {c.title}
                </option>
              ))}
            </select>
          </label>
          <button type="button" className="secondary" onClick={startNew}>New chat</button>
          <label>
            Project{" "}
            <select
              value={settings.project}
              onChange={(e) => setSettings((s) => ({ ...s, project: e.target.value }))}
              data-testid="project-picker"
            >
              {projects.length === 0 && <option value="">(all)</option>}
              {projects.map((p) => (
                <option key={p} value={p}>
                  {p}
                </option>
              ))}
            </select>
          </label>
          <button
            type="button"
            className="secondary"
            aria-expanded={showFilters}
            aria-controls="filters"
            onClick={() => setShowFilters((v) => !v)}
            data-testid="filters-toggle"
          >
            Filters{activeFilters ? ` (${activeFilters})` : ""}
          </button>
          <label className="toggle">
            <input
              type="checkbox"
              checked={settings.explain}
              onChange={(e) => setSettings((s) => ({ ...s, explain: e.target.checked }))}
              data-testid="explain-toggle"
            />
            Explain
          </label>
          <span className="meter" data-testid="conversation-meter" title="Tokens and cost of this conversation, every branch included">
            Σ {totals.prompt + totals.completion} tokens · ${totals.cost.toFixed(4)}
          </span>
        </div>
        {showFilters && (
          <fieldset id="filters" className="filters">
            <legend>Filters</legend>
            <label>
              Tags <input value={settings.filters.tags} onChange={(e) => setFilter("tags", e.target.value)} placeholder="cache, redis" data-testid="filter-tags" />
            </label>
            <label>
              Types <input value={settings.filters.types} onChange={(e) => setFilter("types", e.target.value)} placeholder="decision, runbook" data-testid="filter-types" />
            </label>
            <label>
              Status <input value={settings.filters.statuses} onChange={(e) => setFilter("statuses", e.target.value)} placeholder="accepted, active" data-testid="filter-status" />
            </label>
            <label>
              From <input type="date" value={settings.filters.dateFrom} onChange={(e) => setFilter("dateFrom", e.target.value)} data-testid="filter-from" />
            </label>
            <label>
              To <input type="date" value={settings.filters.dateTo} onChange={(e) => setFilter("dateTo", e.target.value)} data-testid="filter-to" />
            </label>
            <label>
              Fusion{" "}
              <select value={settings.fusion} onChange={(e) => setSettings((s) => ({ ...s, fusion: e.target.value }))}>
                <option value="">server default</option>
                <option value="weighted">weighted</option>
                <option value="rrf">rrf</option>
                <option value="semantic_only">semantic only</option>
                <option value="keyword_only">keyword only</option>
              </select>
            </label>
            <button type="button" className="secondary" onClick={() => setSettings((s) => ({ ...s, filters: noFilters, fusion: "" }))}>
              Clear
            </button>
          </fieldset>
        )}
      </section>

      <section className="messages" role="log" aria-live="polite" aria-label="Conversation" data-testid="messages">
        {messages.length === 0 && (
          <p className="empty">Ask a question about {settings.project || "your documents"}. Answers cite their sources as [n].</p>
        )}
        {messages.map((m, i) => (
          <Message
            key={m.id}
            message={m}
            project={settings.project}
            streaming={busy && i === messages.length - 1 && m.role === "assistant"}
            branches={siblings(current, m.id)}
            onSwitch={(d) => switchBranch(m.id, d)}
            onEdit={m.role === "user" ? (text) => editQuestion(m.id, text) : undefined}
            onFollowUp={send}
            explain={settings.explain && m.role === "assistant" ? { question: questionOf(i), settings } : undefined}
          />
        ))}
        {status === "submitted" && <p className="thinking" data-testid="thinking">Searching…</p>}
        {error && (
          <div className="error" role="alert" data-testid="chat-error">
            {error.message}
          </div>
        )}
      </section>

      <aside className="side" aria-label="Related documents">
        <h2>Related</h2>
        {lastTurn && lastTurn.related.length > 0 ? (
          <ul className="related" data-testid="related">
            {lastTurn.related.map((r) => (
              <li key={r.n}>
                <span className="edge">{r.edgeType}</span> {r.direction === "incoming" ? "←" : "→"}{" "}
                <a href={`/app/doc/${encodeURIComponent(settings.project || "")}/${encodeURIComponent(r.docId)}`}>{r.title || r.docId}</a>
                {r.status && <span className="badge">{r.status}</span>}
              </li>
            ))}
          </ul>
        ) : (
          <p className="muted">Graph neighbours of the last answer's sources appear here.</p>
        )}
      </aside>

      <form
        className="composer"
        onSubmit={(e) => {
          e.preventDefault();
          send(input);
        }}
      >
        <label htmlFor="question" className="sr-only">
          Question
        </label>
        <textarea
          id="question"
          ref={inputRef}
          value={input}
          rows={2}
          placeholder="Ask a question (Enter sends, Shift+Enter for a new line)"
          onChange={(e) => setInput(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey) {
              e.preventDefault();
              send(input);
            }
            if (e.key === "Escape" && busy) chat.stop();
          }}
          data-testid="question"
        />
        <div className="composer-buttons">
          {busy ? (
            <button type="button" onClick={() => chat.stop()} data-testid="stop">
              Stop
            </button>
          ) : (
            <button type="submit" disabled={!input.trim()} data-testid="send">
              Send
            </button>
          )}
          <button
            type="button"
            className="secondary"
            disabled={busy || messages.length === 0}
            onClick={() => chat.regenerate()}
            data-testid="regenerate"
          >
            Regenerate
          </button>
        </div>
      </form>
    </main>
  );
}
