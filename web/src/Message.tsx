import { Children, createElement, useEffect, useId, useRef, useState, type ReactNode } from "react";
import Markdown, { type Components } from "react-markdown";
import remarkGfm from "remark-gfm";
import { docHref, rpc } from "./api";
import { filtersJSON, messageText, readTurn, type CanonMessage, type Citation, type Filters } from "./types";

type Props = {
  message: CanonMessage;
  project: string;
  streaming: boolean;
  branches: { ids: string[]; index: number };
  onSwitch: (delta: number) => void;
  onEdit?: (text: string) => void;
  onFollowUp: (q: string) => void;
  explain?: { question?: CanonMessage; settings: { project: string; filters: Filters; fusion: string } };
};

export function Message(p: Props) {
  const { message: m } = p;
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState("");
  const switcher =
    p.branches.ids.length > 1 ? (
      <span className="branches" role="group" aria-label="Branches" data-testid="branch-switcher">
        <button type="button" className="icon" aria-label="Previous branch" disabled={p.branches.index <= 0} onClick={() => p.onSwitch(-1)}>
          ‹
        </button>
        <span data-testid="branch-position">
          {p.branches.index + 1}/{p.branches.ids.length}
        </span>
        <button
          type="button"
          className="icon"
          aria-label="Next branch"
          disabled={p.branches.index >= p.branches.ids.length - 1}
          onClick={() => p.onSwitch(1)}
        >
          ›
        </button>
      </span>
    ) : null;

  if (m.role === "user") {
    const text = messageText(m);
    return (
      <article className="msg user" data-testid="user-message">
        {editing ? (
          <form
            className="edit"
            onSubmit={(e) => {
              e.preventDefault();
              if (draft.trim()) {
                setEditing(false);
                p.onEdit?.(draft.trim());
              }
            }}
          >
            <label className="sr-only" htmlFor={`edit-${m.id}`}>
              Edit question
            </label>
            <textarea
              id={`edit-${m.id}`}
              value={draft}
              autoFocus
              rows={2}
              onChange={(e) => setDraft(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === "Escape") setEditing(false);
                if (e.key === "Enter" && !e.shiftKey) {
                  e.preventDefault();
                  e.currentTarget.form?.requestSubmit();
                }
              }}
              data-testid="edit-input"
            />
            <div className="row">
              <button type="submit" data-testid="edit-save">Save &amp; ask</button>
              <button type="button" className="secondary" onClick={() => setEditing(false)}>
                Cancel
              </button>
            </div>
          </form>
        ) : (
          <>
            <p className="question" data-testid="user-text">{text}</p>
            <div className="msg-tools">
              {switcher}
              {p.onEdit && (
                <button
                  type="button"
                  className="link"
                  onClick={() => {
                    setDraft(text);
                    setEditing(true);
                  }}
                  data-testid="edit"
                >
                  Edit
                </button>
              )}
            </div>
          </>
        )}
      </article>
    );
  }

  const t = readTurn(m);
  const project = p.project;
  const text = t.answer?.text ?? t.text;
  return (
    <article className="msg assistant" data-testid="assistant-message" aria-busy={p.streaming}>
      {t.rejected.length > 0 && (
        <div className="warning" role="note" data-testid="rejected">
          <strong>⚠ Rejected approaches</strong>
          <ul>
            {t.rejected.map((r) => (
              <li key={r.n}>
                <a href={docHref(r.projectKey || project, r.docId, r.chunkId)}>{r.title || r.docId}</a>
                {r.snippet && <span className="muted"> — {r.snippet}</span>}
              </li>
            ))}
          </ul>
        </div>
      )}
      {t.refusal ? (
        <div className="refusal" role="status" data-testid="refusal">
          <strong>No answer in the documents</strong>
          <p>{t.refusal.body}</p>
          <p className="muted">
            This question was recorded as a content gap
            {t.refusal.gap.projects.length > 0 && <> for {t.refusal.gap.projects.join(", ")}</>} so the team can write it
            down. <a href="/app/gaps">See content gaps</a>
          </p>
        </div>
      ) : (
        <div className="answer" data-testid="answer">
          <AnswerText text={text} citations={t.citations} project={project} />
          {p.streaming && <span className="cursor" aria-hidden="true">▍</span>}
        </div>
      )}
      <div className="msg-tools">
        {switcher}
        {t.usage && (
          <span className="meter" data-testid="answer-meter" title={`${t.usage.provider} ${t.usage.model}`}>
            {t.refusal
              ? "no model call"
              : `${t.usage.promptTokens} in · ${t.usage.completionTokens} out · $${t.usage.costUsd.toFixed(4)}`}{" "}
            · {Math.round(t.usage.totalMs)} ms
          </span>
        )}
        {t.retrieval && (
          <span className="muted small" data-testid="retrieval">
            {t.retrieval.primary} hits, {t.retrieval.expanded} related, {t.retrieval.rejected} rejected ({t.retrieval.searchMode})
            {t.retrieval.retrievalQuery && (
              <span data-testid="retrieval-query" title={`searched for: ${t.retrieval.retrievalQuery}`}>
                {" "}
                · read with your previous question
              </span>
            )}
          </span>
        )}
      </div>
      {t.citations.size > 0 && (
        <details className="sources">
          <summary>Sources ({t.citations.size})</summary>
          <ol data-testid="sources">
            {[...t.citations.values()].map((c) => (
              <li key={c.n} value={c.n} data-doc={c.docId}>
                <a href={docHref(c.projectKey || project, c.docId, c.chunkId)}>{c.title || c.docId}</a>
                {c.headingPath.length > 0 && <span className="muted"> › {c.headingPath.join(" › ")}</span>}
              </li>
            ))}
          </ol>
        </details>
      )}
      {t.followups.length > 0 && (
        <div className="followups" role="group" aria-label="Suggested follow-ups">
          {t.followups.map((q) => (
            <button key={q} type="button" className="chip" onClick={() => p.onFollowUp(q)} data-testid="followup">
              {q}
            </button>
          ))}
        </div>
      )}
      {p.explain?.question && !p.streaming && <Explain question={messageText(p.explain.question)} settings={p.explain.settings} />}
    </article>
  );
}

/**
 * The answer as Markdown (paragraphs, lists, tables, code; raw HTML is never
 * rendered), each [n] in its text a chip that opens the source's card.
 */
function AnswerText({ text, citations, project }: { text: string; citations: Map<number, Citation>; project: string }) {
  const chips = (children: ReactNode) =>
    Children.map(children, (child) => (typeof child === "string" ? withChips(child, citations, project) : child));
  const components: Components = {
    ...Object.fromEntries(
      ["p", "li", "td", "th", "strong", "em"].map((tag) => [
        tag,
        ({ node, children, ...rest }: { node?: unknown; children?: ReactNode }) => createElement(tag, rest, chips(children)),
      ]),
    ),
    // A wide table scrolls sideways inside the answer instead of squeezing its cells.
    table: ({ node, ...rest }) => (
      <div className="table-scroll" role="region" aria-label="Table (scrolls sideways)" tabIndex={0} data-testid="table-scroll">
        <table {...rest} />
      </div>
    ),
  };
  return (
    <div className="answer-text">
      <Markdown remarkPlugins={[remarkGfm]} components={components}>
        {text}
      </Markdown>
    </div>
  );
}

/** text with each [n] that names a citation as its chip. */
function withChips(text: string, citations: Map<number, Citation>, project: string): ReactNode[] {
  const out: ReactNode[] = [];
  const re = /\[(\d+)\]/g;
  let last = 0;
  let k = 0;
  for (let match = re.exec(text); match; match = re.exec(text)) {
    out.push(text.slice(last, match.index));
    const c = citations.get(Number(match[1]));
    out.push(c ? <CitationChip key={`c${k++}`} c={c} project={project} /> : match[0]);
    last = match.index + match[0].length;
  }
  out.push(text.slice(last));
  return out;
}

/**
 * A citation chip and its card. A mouse over it shows the card while it stays;
 * a click, a tap, Enter or Space opens it until a second one, Escape, or a
 * click or tap outside; Tab onto it shows it too (and Tab goes on to its link).
 */
function CitationChip({ c, project }: { c: Citation; project: string }) {
  // How the card is open: "click" holds it open; "hover" and "focus" last while they do.
  const [open, setOpen] = useState<null | "hover" | "focus" | "click">(null);
  const id = useId();
  const wrap = useRef<HTMLSpanElement>(null);
  useEffect(() => {
    if (!open) return;
    const outside = (e: Event) => {
      if (!wrap.current?.contains(e.target as Node)) setOpen(null);
    };
    const escape = (e: KeyboardEvent) => {
      if (e.key === "Escape") setOpen(null);
    };
    document.addEventListener("pointerdown", outside);
    document.addEventListener("keydown", escape);
    return () => {
      document.removeEventListener("pointerdown", outside);
      document.removeEventListener("keydown", escape);
    };
  }, [open]);
  const label = `Source ${c.n}: ${c.title || c.docId}`;
  return (
    <span
      className="cite"
      ref={wrap}
      onPointerEnter={(e) => e.pointerType === "mouse" && setOpen((o) => o ?? "hover")}
      onPointerLeave={(e) => e.pointerType === "mouse" && setOpen((o) => (o === "hover" ? null : o))}
      onBlur={(e) => {
        if (!wrap.current?.contains(e.relatedTarget as Node)) setOpen((o) => (o === "hover" ? o : null));
      }}
    >
      <button
        type="button"
        className="cite-chip"
        aria-label={label}
        aria-expanded={open !== null}
        aria-controls={open ? id : undefined}
        onFocus={(e) => e.currentTarget.matches(":focus-visible") && setOpen((o) => o ?? "focus")}
        // The first click (or tap) on a card shown by hover or focus keeps it open; a second closes it.
        onClick={() => setOpen((o) => (o === "click" ? null : "click"))}
        data-testid="cite"
      >
        {c.n}
      </button>
      {open && (
        <span className="card" role="group" aria-label={label} id={id} data-testid="cite-card">
          <strong className="card-title">{c.title || c.docId}</strong>
          {c.headingPath.length > 0 && <span className="muted">{c.headingPath.join(" › ")}</span>}
          <span className="snippet">{c.snippet}</span>
          <span className="badges">
            {c.status && <span className="badge">{c.status}</span>}
            {c.evidenceTier && <span className="badge">evidence: {c.evidenceTier}</span>}
            {c.origin !== "primary" && <span className="badge">{c.origin.replace("_", " ")}</span>}
          </span>
          <a href={docHref(c.projectKey || project, c.docId, c.chunkId)} data-testid="cite-link">
            Open document
          </a>
        </span>
      )}
    </span>
  );
}

type ExplainHit = {
  docId: string;
  title: string;
  score: number;
  explain?: { contributions?: { signal: string; weight: number; value: number; contribution: number }[] };
};

/** Explain: the same question through SearchService with explain on, each hit's signals. */
function Explain({ question, settings }: { question: string; settings: { project: string; filters: Filters; fusion: string } }) {
  const [hits, setHits] = useState<ExplainHit[] | null>(null);
  const [err, setErr] = useState("");
  const key = JSON.stringify([question, settings]);
  useEffect(() => {
    let live = true;
    rpc<{ result?: { primary?: ExplainHit[] } }>("canon.v1.SearchService/Search", {
      query: question,
      filters: filtersJSON(settings.project, settings.filters),
      options: { explain: true, fusion: settings.fusion },
    })
      .then((r) => live && setHits(r.result?.primary ?? []))
      .catch((e: Error) => live && setErr(e.message));
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);
  if (err) return <p className="error">Explain failed: {err}</p>;
  if (!hits) return <p className="muted">Explaining…</p>;
  return (
    <details className="explain" open data-testid="explain">
      <summary>Why these sources (signal breakdown)</summary>
      {hits.map((h, i) => (
        <div key={i} className="explain-hit">
          <div>
            <strong>{h.title || h.docId}</strong> <span className="muted">score {h.score.toFixed(4)}</span>
          </div>
          <table>
            <thead>
              <tr>
                <th scope="col">signal</th>
                <th scope="col">value</th>
                <th scope="col">weight</th>
                <th scope="col">contribution</th>
              </tr>
            </thead>
            <tbody>
              {(h.explain?.contributions ?? []).map((c) => (
                <tr key={c.signal}>
                  <td>{c.signal}</td>
                  <td>{(c.value ?? 0).toFixed(3)}</td>
                  <td>{(c.weight ?? 0).toFixed(3)}</td>
                  <td>{(c.contribution ?? 0).toFixed(4)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
    </details>
  );
}
