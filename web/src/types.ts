// The payloads of /api/chat's data parts (server/uichat.go writes them).
import type { UIMessage } from "ai";

export type Retrieval = {
  searchMode: string;
  hierarchyReason: string;
  primary: number;
  expanded: number;
  rejected: number;
  docIds: string[];
  retrievalMs: number;
  // Set when a follow-up was searched for with the question asked before it.
  retrievalQuery?: string;
};

export type Citation = {
  n: number;
  sourceId: string;
  docId: string;
  chunkId: number;
  projectKey: string;
  title: string;
  headingPath: string[];
  snippet: string;
  status: string;
  evidenceTier: string;
  tier: string;
  score: number;
  origin: string;
  sourcePath: string;
};

export type Related = {
  n: number;
  docId: string;
  title: string;
  canonicalType: string;
  status: string;
  edgeType: string;
  direction: string;
  fromDocId: string;
  weight: number;
};

export type Answer = { text: string; cited: number[]; dropped: number[]; citationSupport: number };

export type Refusal = {
  reason: string;
  body: string;
  language: string;
  gap: { question: string; normalized: string; projects: string[] };
};

export type Usage = {
  provider: string;
  model: string;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  retrievalMs: number;
  generationMs: number;
  totalMs: number;
};

export type CanonData = {
  retrieval: Retrieval;
  citation: Citation;
  related: { neighbours: Related[] };
  rejected: { approaches: Citation[] };
  answer: Answer;
  refusal: Refusal;
  usage: Usage;
  followups: { questions: string[] };
};

export type CanonMessage = UIMessage<unknown, CanonData>;

export type Filters = {
  tags: string;
  types: string;
  statuses: string;
  dateFrom: string;
  dateTo: string;
};

export const noFilters: Filters = { tags: "", types: "", statuses: "", dateFrom: "", dateTo: "" };

/** What one assistant message carries, read from its parts. */
export type Turn = {
  text: string;
  retrieval?: Retrieval;
  citations: Map<number, Citation>;
  related: Related[];
  rejected: Citation[];
  answer?: Answer;
  refusal?: Refusal;
  usage?: Usage;
  followups: string[];
};

export function readTurn(m: CanonMessage): Turn {
  const t: Turn = { text: "", citations: new Map(), related: [], rejected: [], followups: [] };
  for (const p of m.parts) {
    switch (p.type) {
      case "text":
        t.text += p.text;
        break;
      case "data-retrieval":
        t.retrieval = p.data;
        break;
      case "data-citation":
        t.citations.set(p.data.n, p.data);
        break;
      case "data-related":
        t.related = p.data.neighbours;
        break;
      case "data-rejected":
        t.rejected = p.data.approaches;
        break;
      case "data-answer":
        t.answer = p.data;
        break;
      case "data-refusal":
        t.refusal = p.data;
        break;
      case "data-usage":
        t.usage = p.data;
        break;
      case "data-followups":
        t.followups = p.data.questions;
        break;
    }
  }
  return t;
}

export function messageText(m: CanonMessage): string {
  return m.parts.map((p) => (p.type === "text" ? p.text : "")).join("");
}

const list = (s: string) =>
  s.split(",").map((x) => x.trim()).filter(Boolean);

/** Filters as canon's Filters JSON (proto field names). */
export function filtersJSON(project: string, f: Filters) {
  return {
    project_keys: project ? [project] : [],
    tags: list(f.tags),
    canonical_types: list(f.types),
    statuses: list(f.statuses),
    date_from: f.dateFrom,
    date_to: f.dateTo,
  };
}
