import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport } from "ai";
import { useEffect, useMemo, useRef, useState } from "react";
import { authFetch, authHeaders, rpc } from "./api";
import { describeChatError } from "./errors";
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
  // A conversation belongs to one project: its questions (an edited one too)
  // are asked there whatever the picker said since; a new one takes the picker's.
  const project = current.project || settings.project;
  const projectRef = useRef(project);
  projectRef.current = project;
  // Said once the picker started a new conversation because the old one is in another project.
  const [switchNote, setSwitchNote] = useState<{ from: string; fromId: string; to: string; id: string } | null>(null);

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
          const p = projectRef.current;
          return { project: p, filters: filtersJSON(p, s.filters), fusion: s.fusion };
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
      if (messages.length > 0 && !next[i].project) next[i] = { ...next[i], project: projectRef.current };
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

  const startNew = (inProject = project) => {
    if (busy) chat.stop();
    const c = newConversation(inProject || undefined);
    setConversations((all) => [c, ...all]);
    setCurrentId(c.id);
    setSwitchNote(null);
    return c;
  };

  // Another project: a conversation with questions in it stays where it is and
  // a new one starts (said above it); an empty one just moves.
  const pickProject = (next: string) => {
    setSettings((s) => ({ ...s, project: next }));
    if (next === project) return;
    if (messages.length === 0 && Object.keys(current.nodes).length === 0) {
      setConversations((all) => all.map((c) => (c.id === current.id ? { ...c, project: next } : c)));
      return;
    }
    const from = { from: project, fromId: current.id };
    const c = startNew(next);
    setSwitchNote({ ...from, to: next, id: c.id });
  };
  const pickConversation = (id: string) => {
    if (busy) chat.stop();
    setCurrentId(id);
    setSwitchNote(null);
    const c = conversations.find((x) => x.id === id);
    if (c?.project) setSettings((s) => ({ ...s, project: c.project! }));
  };

  // Scrolling: a new turn scrolls into view, and the page follows the answer
  // as it streams until the reader scrolls up (back at the end, it follows again).
  const endRef = useRef<HTMLDivElement>(null);
  const composerRef = useRef<HTMLFormElement>(null);
  const follow = useRef(true);
  /** How far below the visible area (above the sticky composer) the conversation ends. */
  const belowFold = () => {
    const end = endRef.current;
    if (!end) return 0;
    const visibleBottom = window.innerHeight - (composerRef.current?.offsetHeight ?? 0);
    return end.getBoundingClientRect().bottom - visibleBottom;
  };
  useEffect(() => {
    let lastY = window.scrollY;
    const onScroll = () => {
      const y = window.scrollY;
      if (belowFold() <= 48) follow.current = true;
      else if (y < lastY - 1) follow.current = false;
      lastY = y;
    };
    const onWheel = (e: WheelEvent) => {
      if (e.deltaY < 0) follow.current = false;
    };
    window.addEventListener("scroll", onScroll, { passive: true });
    window.addEventListener("wheel", onWheel, { passive: true });
    return () => {
      window.removeEventListener("scroll", onScroll);
      window.removeEventListener("wheel", onWheel);
    };
  }, []);
  useEffect(() => {
    if (status === "submitted") follow.current = true;
  }, [status]);
  useEffect(() => {
    if (!follow.current) return;
    const by = belowFold();
    if (by > 0) window.scrollBy({ top: by + 8, behavior: "instant" });
  }, [messages, status, error]);

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
              onChange={(e) => pickConversation(e.target.value)}
              data-testid="conversation-picker"
            >
              {conversations.map((c) => (
                <option key={c.id} value={c.id}>
                  {c.project ? `${c.project} · ` : ""}
                  {c.title}
                </option>
              ))}
            </select>
          </label>
          <button type="button" className="secondary" onClick={() => startNew()}>New chat</button>
          <label>
            Project{" "}
            <select
              value={project}
              onChange={(e) => pickProject(e.target.value)}
              title="A conversation stays in one project: choosing another starts a new conversation"
              data-testid="project-picker"
            >
              {projects.length === 0 && <option value="">(all)</option>}
              {project && projects.length > 0 && !projects.includes(project) && <option value={project}>{project}</option>}
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
        {switchNote && switchNote.id === current.id && (
          <p className="notice" role="status" data-testid="project-switch-note">
            New conversation in <strong>{switchNote.to}</strong>: a conversation stays in one project. The{" "}
            <strong>{switchNote.from || "earlier"}</strong> conversation is still in the conversation list.{" "}
            <button type="button" className="link" onClick={() => pickConversation(switchNote.fromId)}>
              Back to it
            </button>
          </p>
        )}
        {messages.length === 0 && (
          <p className="empty">Ask a question about {project || "your documents"}. Answers cite their sources as [n].</p>
        )}
        {messages.map((m, i) => (
          <Message
            key={m.id}
            message={m}
            project={project}
            streaming={busy && i === messages.length - 1 && m.role === "assistant"}
            branches={siblings(current, m.id)}
            onSwitch={(d) => switchBranch(m.id, d)}
            onEdit={m.role === "user" ? (text) => editQuestion(m.id, text) : undefined}
            onFollowUp={send}
            explain={settings.explain && m.role === "assistant" ? { question: questionOf(i), settings: { ...settings, project } } : undefined}
          />
        ))}
        {status === "submitted" && <p className="thinking" data-testid="thinking">Searching…</p>}
        {error && <ChatError error={error} />}
        <div ref={endRef} aria-hidden="true" />
      </section>

      <aside className="side" aria-label="Related documents">
        <h2>Related</h2>
        {lastTurn && lastTurn.related.length > 0 ? (
          <ul className="related" data-testid="related">
            {lastTurn.related.map((r) => (
              <li key={r.n}>
                <span className="edge">{r.edgeType}</span> {r.direction === "incoming" ? "←" : "→"}{" "}
                <a href={`/app/doc/${encodeURIComponent(project || "")}/${encodeURIComponent(r.docId)}`}>{r.title || r.docId}</a>
                {r.status && <span className="badge">{r.status}</span>}
              </li>
            ))}
          </ul>
        ) : (
          <p className="muted">Graph neighbours of the last answer's sources appear here.</p>
        )}
      </aside>

      <form
        ref={composerRef}
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

/** A failed turn: what happened in words, what to do, and the server's reply under Details. */
function ChatError({ error }: { error: Error }) {
  const e = describeChatError(error);
  return (
    <div className="error" role="alert" data-testid="chat-error">
      <strong data-testid="chat-error-title">{e.title}</strong>
      <p data-testid="chat-error-message">{e.message}</p>
      {e.hint && <p className="muted">{e.hint}</p>}
      {e.details !== e.message && (
        <details className="small">
          <summary>Details</summary>
          <code data-testid="chat-error-details">{e.details}</code>
        </details>
      )}
    </div>
  );
}
