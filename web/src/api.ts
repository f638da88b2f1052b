// Requests to canon: the API key (when auth is on) comes from session storage;
// a 401 asks the page for one.
const keyName = "canon.apiKey";

export const apiKey = {
  get: () => sessionStorage.getItem(keyName) ?? "",
  set: (k: string) => (k ? sessionStorage.setItem(keyName, k) : sessionStorage.removeItem(keyName)),
};

// A listener hears why the page needs a key (none sent, or the one sent was refused).
type Listener = (reason: string) => void;
const unauthorized = new Set<Listener>();
export function onUnauthorized(l: Listener) {
  unauthorized.add(l);
  return () => unauthorized.delete(l);
}

export function authHeaders(): Record<string, string> {
  const k = apiKey.get();
  return k ? { Authorization: `Bearer ${k}` } : {};
}

/** fetch with the key; a 401 opens the key dialog, saying whether the key was refused. */
export const authFetch: typeof fetch = async (input, init) => {
  const headers = new Headers(init?.headers);
  for (const [k, v] of Object.entries(authHeaders())) headers.set(k, v);
  const res = await fetch(input, { ...init, headers });
  if (res.status === 401) {
    const said = await res
      .json()
      .then((j: { message?: string }) => j.message ?? "")
      .catch(() => "");
    const reason = apiKey.get()
      ? `The server refused the API key saved in this tab${said ? ` (${said})` : ""}: check it and enter it again.`
      : "This server needs an API key: enter one and try again.";
    unauthorized.forEach((l) => l(reason));
    throw new Error(reason);
  }
  return res;
};

/** Calls a Connect RPC with the JSON codec. */
export async function rpc<T>(method: string, body: unknown): Promise<T> {
  const res = await authFetch(`/${method}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(json.message ?? `${method} failed (${res.status})`);
  return json as T;
}

export async function getJSON<T>(url: string): Promise<T> {
  const res = await authFetch(url);
  const json = await res.json();
  if (!res.ok) throw new Error(json.message ?? `${url} failed (${res.status})`);
  return json as T;
}

export const docHref = (project: string, slug: string, chunk?: number) =>
  `/app/doc/${encodeURIComponent(project)}/${encodeURIComponent(slug)}` + (chunk ? `?chunk=${chunk}` : "");
