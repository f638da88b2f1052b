import { Fragment, useEffect, useState } from "react";
import { ChatPage } from "./ChatPage";
import { DocPage } from "./DocPage";
import { GapsPage } from "./GapsPage";
import { KeyDialog } from "./KeyDialog";
import { onUnauthorized } from "./api";

// The app routes on the client: /app/chat, /app/gaps, /app/doc/{project}/{slug}.
export function App() {
  const [path, setPath] = useState(location.pathname);
  // askKey is why the key dialog is open (null: closed); keyVersion remounts the
  // page when a key is saved, so it loads again with it.
  const [askKey, setAskKey] = useState<string | null>(null);
  const [keyVersion, setKeyVersion] = useState(0);
  useEffect(() => {
    const pop = () => setPath(location.pathname);
    addEventListener("popstate", pop);
    const off = onUnauthorized((reason) => setAskKey(reason));
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
          <button type="button" className="link" onClick={() => setAskKey("")}>API key</button>
        </nav>
      </header>
      <Fragment key={keyVersion}>{page}</Fragment>
      {askKey !== null && (
        <KeyDialog key={askKey} reason={askKey} onSaved={() => setKeyVersion((v) => v + 1)} onClose={() => setAskKey(null)} />
      )}
    </>
  );
}
