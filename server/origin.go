package server

import (
	"mime"
	"net/http"

	"connectrpc.com/connect"
)

// jsonOnly refuses a body that is not application/json with 415: a browser sends
// JSON to another origin only after a CORS preflight, which canon never grants,
// so a page elsewhere cannot post a chat turn as a form or text/plain.
func jsonOnly(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if t, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || t != "application/json" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnsupportedMediaType)
			w.Write([]byte(`{"code":"` + connect.CodeInvalidArgument.String() + //nolint:errcheck // the client may be gone
				`","message":"send the body as Content-Type: application/json"}`))
			return
		}
		next(w, r)
	}
}
