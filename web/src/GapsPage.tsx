import { useEffect, useState } from "react";
import { rpc } from "./api";

type Gap = { question: string; count: string | number; firstSeen: string; lastSeen: string };

// Content gaps: the questions canon refused, most asked first (ChatService.ContentGaps).
export function GapsPage() {
  const [projects, setProjects] = useState<string[]>([]);
  const [project, setProject] = useState("");
  const [gaps, setGaps] = useState<Gap[] | null>(null);
  const [err, setErr] = useState("");
  useEffect(() => {
    rpc<{ projects?: { projectKey: string }[] }>("canon.v1.ProjectService/ListProjects", {}).then((r) => {
      const keys = (r.projects ?? []).map((p) => p.projectKey);
      setProjects(keys);
      let saved = "";
      try {
        saved = JSON.parse(localStorage.getItem("canon.settings") ?? "{}").project ?? "";
      } catch {
        saved = "";
      }
      setProject((p) => p || (keys.includes(saved) ? saved : keys[0]) || "");
    }, (e: Error) => setErr(e.message));
  }, []);
  useEffect(() => {
    if (!project) return;
    setGaps(null);
    rpc<{ gaps?: Gap[] }>("canon.v1.ChatService/ContentGaps", { projectKey: project, limit: 100 }).then(
      (r) => setGaps(r.gaps ?? []),
      (e: Error) => setErr(e.message),
    );
  }, [project]);
  return (
    <main className="page" data-testid="gaps">
      <h1>Content gaps</h1>
      <p className="muted">Questions canon could not answer from the documents, most asked first.</p>
      <label>
        Project{" "}
        <select value={project} onChange={(e) => setProject(e.target.value)}>
          {projects.map((p) => <option key={p}>{p}</option>)}
        </select>
      </label>
      {err && <p className="error" role="alert">{err}</p>}
      {gaps && gaps.length === 0 && <p>No unanswered questions yet.</p>}
      {gaps && gaps.length > 0 && (
        <table className="gaps">
          <thead>
            <tr><th scope="col">Question</th><th scope="col">Asked</th><th scope="col">Last asked</th></tr>
          </thead>
          <tbody>
            {gaps.map((g) => (
              <tr key={g.question} data-testid="gap">
                <td>
                  <div className="gap-question" title={g.question}>
                    {g.question}
                  </div>
                </td>
                <td>{String(g.count)}</td>
                <td>{g.lastSeen.slice(0, 10)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}
