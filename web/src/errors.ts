// A chat failure in words: useChat hands over a 4xx/5xx body as the error's
// message ({"code","message"} JSON from the server), a stream's `error` chunk as
// its text, and a network failure as the browser's own words.

export type ChatProblem = { title: string; message: string; hint: string; details: string };

const hints: Record<string, { title: string; hint: string }> = {
  invalid_argument: { title: "The server could not take this question", hint: "Change the question or the filters, then send it again." },
  out_of_range: { title: "The server could not take this question", hint: "Change the question or the filters, then send it again." },
  failed_precondition: { title: "The server could not answer", hint: "Ask whoever runs canon; the server log has details." },
  resource_exhausted: { title: "Too many answers at once", hint: "Wait until your other chats finish, then press Regenerate." },
  unavailable: { title: "The server is unavailable right now", hint: "Wait a moment, then press Regenerate." },
  deadline_exceeded: { title: "The answer took too long", hint: "Press Regenerate to try again." },
  permission_denied: { title: "Your API key may not ask in this project", hint: "Pick a project your key can read, or enter another key." },
  unauthenticated: { title: "The server needs an API key", hint: "Enter one with the API key button, then press Regenerate." },
  not_found: { title: "Not found", hint: "Pick another project, then ask again." },
  internal: { title: "Something went wrong on the server", hint: "Press Regenerate to try again; if it keeps failing, the server log has details." },
};

export function describeChatError(err: Error): ChatProblem {
  const raw = err.message || String(err);
  let code = "";
  let message = raw;
  try {
    const j = JSON.parse(raw) as { code?: unknown; message?: unknown; error?: unknown };
    if (j && typeof j === "object") {
      if (typeof j.code === "string") code = j.code;
      if (typeof j.message === "string") message = j.message;
      else if (typeof j.error === "string") message = j.error;
    }
  } catch {
    // Not JSON: a stream's error text or the browser's words.
  }
  if (!code && /failed to fetch|networkerror|load failed|network error/i.test(raw)) {
    return {
      title: "Could not reach the server",
      message: "The connection to canon failed or was cut.",
      hint: "Check that the server is running and your network is up, then press Regenerate.",
      details: raw,
    };
  }
  const known = hints[code] ?? (code ? hints.internal : undefined);
  let hint = known?.hint ?? "Press Regenerate to try again.";
  if (/characters long; the limit is/.test(message)) hint = "Shorten the question, then send it again.";
  else if (/date_from .* is after date_to/.test(message)) hint = "Fix the From and To dates under Filters, then press Regenerate.";
  else if (/press Regenerate/i.test(message)) hint = "";
  return { title: known?.title ?? "The answer failed", message, hint, details: raw };
}
