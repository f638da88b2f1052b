// Conversations persist in local storage as trees: editing a past question or
// regenerating an answer adds a sibling, and `active` says which sibling each
// branch point shows.
import type { CanonMessage } from "./types";

export type Conversation = {
  id: string;
  title: string;
  /**
   * The project every question of this conversation is asked in (its history
   * belongs there). Set when it starts; conversations saved before it existed
   * take the picker's project at their next question.
   */
  project?: string;
  updatedAt: number;
  nodes: Record<string, { msg: CanonMessage; parent: string }>;
  order: string[];
  active: Record<string, string>;
};

const storeKey = "canon.conversations";
const root = "root";

export function newConversation(project?: string): Conversation {
  return { id: crypto.randomUUID(), title: "New conversation", project, updatedAt: Date.now(), nodes: {}, order: [], active: {} };
}

export function loadConversations(): Conversation[] {
  try {
    const all = JSON.parse(localStorage.getItem(storeKey) ?? "[]") as Conversation[];
    return Array.isArray(all) ? all : [];
  } catch {
    return [];
  }
}

export function saveConversations(all: Conversation[]) {
  try {
    localStorage.setItem(storeKey, JSON.stringify(all.slice(0, 50)));
  } catch {
    // Storage full or disabled: the conversation still works, unsaved.
  }
}

export function children(c: Conversation, parent: string): string[] {
  return c.order.filter((id) => c.nodes[id]?.parent === parent);
}

/** The messages shown: from the root, each branch point's active child. */
export function activePath(c: Conversation): CanonMessage[] {
  const out: CanonMessage[] = [];
  let at = root;
  for (let i = 0; i < 10000; i++) {
    const kids = children(c, at);
    if (kids.length === 0) break;
    const next = c.active[at] && kids.includes(c.active[at]) ? c.active[at] : kids[kids.length - 1];
    out.push(c.nodes[next].msg);
    at = next;
  }
  return out;
}

/** Records what useChat shows as the active path (new messages become nodes). */
export function syncPath(c: Conversation, messages: CanonMessage[]): Conversation {
  const next: Conversation = { ...c, nodes: { ...c.nodes }, order: [...c.order], active: { ...c.active } };
  let parent = root;
  for (const m of messages) {
    if (!next.nodes[m.id]) next.order.push(m.id);
    next.nodes[m.id] = { msg: m, parent };
    next.active[parent] = m.id;
    parent = m.id;
  }
  const first = messages.find((m) => m.role === "user");
  if (first) {
    const text = first.parts.map((p) => (p.type === "text" ? p.text : "")).join("");
    next.title = text.slice(0, 60) || next.title;
  }
  next.updatedAt = Date.now();
  return next;
}

/** The siblings of a message (itself included) and its index among them. */
export function siblings(c: Conversation, id: string): { ids: string[]; index: number; parent: string } {
  const parent = c.nodes[id]?.parent ?? root;
  const ids = children(c, parent);
  return { ids, index: ids.indexOf(id), parent };
}

export function switchTo(c: Conversation, parent: string, child: string): Conversation {
  return { ...c, active: { ...c.active, [parent]: child } };
}

/** The active path up to (not including) the message with this id. */
export function pathBefore(c: Conversation, id: string): CanonMessage[] {
  const path = activePath(c);
  const i = path.findIndex((m) => m.id === id);
  return i < 0 ? path : path.slice(0, i);
}
