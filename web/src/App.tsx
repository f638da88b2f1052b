import { useEffect, useState } from "react";
import { ChatPage } from "./ChatPage";
import { DocPage } from "./DocPage";
import { GapsPage } from "./GapsPage";
import { KeyDialog } from "./KeyDialog";
import { onUnauthorized } from "./api";

// The app routes on the client: /app/chat, /app/gaps, /app/doc/{project}/{slug}.
export function App() {
  const [path, setPath] = useState(location.pathname);
  const [askKey, setAskKey] = useState(false);
  useEffect(() => {
    const pop = () => setPath(location.pathname);
    addEventListener("popstate", pop);
    const off = onUnauthorized(() => setAskKey(true));
    return () => {
      removeEventListener("popstate", pop);
      off();
    };
  }, []);
  const doc = path.match(/^\/app\/doc\/([^/]+)\/([^/]+)\/?$/);
  let page;
  if (doc) page = <DocPage project={decodeURIComponent(doc[1])} slug={decodeURIComponent(doc[2])} />;
  else if (path.startsWith("/app/gaps")) page = <GapsPage />;
  else page = <ChatPage />;
  return (
    <>
      <header className="top">
        <a className="brand" href="/app/chat">canon</a>
        <nav aria-label="Pages">
          <a href="/app/chat" aria-current={path.startsWith("/app/chat") ? "page" : undefined}>Chat</a>
          <a href="/app/gaps" aria-current={path.startsWith("/app/gaps") ? "page" : undefined}>Content gaps</a>
          <button type="button" className="link" onClick={() => setAskKey(true)}>API key</button>
        </nav>
      </header>
      {page}
      {askKey && <KeyDialog onClose={() => setAskKey(false)} />}
    </>
  );
}
