import { useEffect, useRef, useState } from "react";
import { apiKey } from "./api";

// Asks for the API key when a request answered 401 (reason says why); kept in
// session storage only. onSaved lets the page load again with the new key.
export function KeyDialog({ reason, onSaved, onClose }: { reason: string; onSaved: () => void; onClose: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const [key, setKey] = useState(apiKey.get());
  useEffect(() => {
    ref.current?.showModal();
  }, []);
  return (
    <dialog ref={ref} className="dialog" aria-labelledby="key-title" onClose={onClose} data-testid="key-dialog">
      <form
        method="dialog"
        onSubmit={() => {
          apiKey.set(key.trim());
          onSaved();
        }}
      >
        <h2 id="key-title">API key</h2>
        {reason && (
          <p className="error" role="alert" data-testid="key-error">
            {reason}
          </p>
        )}
        <p>This server asks for an API key. It stays in this tab (session storage) and is sent as a bearer token.</p>
        <label>
          Key
          <input type="password" value={key} autoFocus onChange={(e) => setKey(e.target.value)} autoComplete="off" data-testid="key-input" />
        </label>
        <div className="row">
          <button type="submit" data-testid="key-save">Save</button>
          <button type="button" className="secondary" onClick={() => ref.current?.close()}>Cancel</button>
        </div>
      </form>
    </dialog>
  );
}
