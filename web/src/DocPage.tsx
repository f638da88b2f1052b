import { useEffect, useState } from "react";
import { docHref, getJSON } from "./api";

type Doc = {
  projectKey: string;
  slug: string;
  title: string;
  sourcePath: string;
  tags: string[];
  effectiveDate: string;
  canonicalType: string;
  status: string;
  tier: string;
  evidenceTier: string;
  summary: string;
  edges: { docId: string; title: string; status: string; edgeType: string; direction: string; provenance: string }[];
  // parts: the text cut at its wikilinks to documents the reader may see (docId), when it has any.
  chunks: { id: number; headingPath: string[]; text: string; isSummary: boolean; parts?: { text: string; docId?: string }[] }[];
};

// The document a citation points at: its state, its edges both ways and its
// chunks, the cited one (?chunk=) highlighted.
export function DocPage({ project, slug }: { project: string; slug: string }) {
  const [doc, setDoc] = useState<Doc | null>(null);
  const [err, setErr] = useState("");
  const cited = Number(new URLSearchParams(location.search).get("chunk") ?? 0);
  useEffect(() => {
    getJSON<Doc>(`/api/doc/${encodeURIComponent(project)}/${encodeURIComponent(slug)}`).then(setDoc, (e: Error) => setErr(e.message));
  }, [project, slug]);
  useEffect(() => {
    if (doc && cited) document.getElementById(`chunk-${cited}`)?.scrollIntoView({ block: "center" });
  }, [doc, cited]);
  if (err) return <main className="page"><p className="error" role="alert">{err}</p></main>;
  if (!doc) return <main className="page"><p className="muted">Loading…</p></main>;
  const out = doc.edges.filter((e) => e.direction !== "incoming");
  const inc = doc.edges.filter((e) => e.direction === "incoming");
  const edgeList = (edges: Doc["edges"], label: string) => (
    <section aria-label={label}>
      <h2>{label}</h2>
      {edges.length === 0 ? (
        <p className="muted">none</p>
      ) : (
        <ul>
          {edges.map((e) => (
            <li key={e.direction + e.edgeType + e.docId}>
              <span className="edge">{e.edgeType}</span> <a href={docHref(project, e.docId)}>{e.title || e.docId}</a>
              {e.status && <span className="badge">{e.status}</span>}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
  return (
    <main className="page doc" data-testid="doc">
      <h1>{doc.title || doc.slug}</h1>
      <p className="badges">
        {doc.canonicalType && <span className="badge">{doc.canonicalType}</span>}
        {doc.status && <span className="badge" data-testid="doc-status">{doc.status}</span>}
        {doc.evidenceTier && <span className="badge">evidence: {doc.evidenceTier}</span>}
        <span className="badge">{doc.tier}</span>
        {doc.effectiveDate && <span className="badge">{doc.effectiveDate}</span>}
        {doc.tags.map((t) => <span key={t} className="badge tag">#{t}</span>)}
      </p>
      <p className="muted small">{project} / {doc.sourcePath}</p>
      <div className="edges">
        {edgeList(out, "Links to")}
        {edgeList(inc, "Linked from")}
      </div>
      <section aria-label="Content">
        {doc.chunks.map((c) => (
          <div key={c.id} id={`chunk-${c.id}`} className={c.id === cited ? "chunk cited" : "chunk"} data-testid={c.id === cited ? "cited-chunk" : undefined}>
            {c.headingPath.length > 0 && <h3>{c.headingPath.join(" › ")}</h3>}
            {c.isSummary && <p className="muted small">summary</p>}
            <p className="chunk-text">
              {c.parts
                ? c.parts.map((p, i) => (p.docId ? <a key={i} href={docHref(project, p.docId)}>{p.text}</a> : p.text))
                : c.text}
            </p>
          </div>
        ))}
      </section>
    </main>
  );
}
