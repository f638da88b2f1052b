package server

import (
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/auth"
	"github.com/canonkb/canon/document"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
	"github.com/canonkb/canon/lifecycle"
	"github.com/canonkb/canon/telemetry"
	"github.com/canonkb/canon/web"
)

// mountWeb adds the browser surface: the chat page and document view under
// /app/ (embedded, built from web/), POST /api/chat (the AI SDK UI message
// stream) and GET /api/doc/{project}/{slug}.
func mountWeb(mux *routeMux, d Deps, guard *auth.Guard) {
	mux.HandleFunc("POST /api/chat", jsonOnly((&uiChatHandler{chat: d.Chat, log: d.Logger, streams: guard}).ServeHTTP))
	graph := lifecycle.New(d.Pool)
	graph.Reads = d.Reads
	docs := &docHandler{pool: d.Pool, graph: graph, log: d.Logger}
	mux.HandleFunc("GET /api/doc/{project}/{slug}", docs.serve)
	app := appHandler(web.Assets())
	mux.Handle("GET /app/", app)
	mux.Handle("GET /{$}", http.RedirectHandler("/app/chat", http.StatusFound))
}

// appHandler serves the built assets, and index.html for every page route
// (/app/chat, /app/doc/..., /app/gaps): the app routes on the client.
func appHandler(assets fs.FS) http.Handler {
	files := http.StripPrefix("/app/", http.FileServerFS(assets))
	index, err := fs.ReadFile(assets, "index.html")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/app/assets/") {
			// File names carry a content hash, so they never change.
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
			files.ServeHTTP(w, r)
			return
		}
		if err != nil {
			http.Error(w, "the web app is not built into this binary", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Write(index) //nolint:errcheck // a client that left needs no answer
	})
}

type docHandler struct {
	pool  *pgxpool.Pool
	graph *lifecycle.Service
	log   *slog.Logger
}

// docView is GET /api/doc/{project}/{slug}: the document, its canonical fields,
// its edges both ways and its chunks (the page highlights the one cited).
type docView struct {
	ProjectKey    string         `json:"projectKey"`
	Slug          string         `json:"slug"`
	Title         string         `json:"title"`
	SourcePath    string         `json:"sourcePath"`
	SourceType    string         `json:"sourceType"`
	Tags          []string       `json:"tags"`
	EffectiveDate string         `json:"effectiveDate"`
	CanonicalType string         `json:"canonicalType"`
	Status        string         `json:"status"`
	Tier          string         `json:"tier"`
	EvidenceTier  string         `json:"evidenceTier"`
	Summary       string         `json:"summary"`
	Edges         []docEdge      `json:"edges"`
	Chunks        []docViewChunk `json:"chunks"`
}

type docEdge struct {
	DocID         string  `json:"docId"`
	Title         string  `json:"title"`
	CanonicalType string  `json:"canonicalType"`
	Status        string  `json:"status"`
	EdgeType      string  `json:"edgeType"`
	Weight        float64 `json:"weight"`
	Direction     string  `json:"direction"`
	Provenance    string  `json:"provenance"`
}

type docViewChunk struct {
	ID          int64    `json:"id"`
	Ordinal     int32    `json:"ordinal"`
	HeadingPath []string `json:"headingPath"`
	Text        string   `json:"text"`
	IsSummary   bool     `json:"isSummary"`
	// Parts is Text cut at its wikilinks to documents the reader may see, for
	// the page to link them; absent when it has none.
	Parts []docTextPart `json:"parts,omitempty"`
}

// docTextPart is a piece of a chunk's text: a wikilink (DocID, the target's
// slug) or text.
type docTextPart struct {
	Text  string `json:"text"`
	DocID string `json:"docId,omitempty"`
}

func textParts(c document.Chunk) []docTextPart {
	var out []docTextPart
	for _, p := range c.Parts() {
		out = append(out, docTextPart{Text: p.Text, DocID: p.Target})
	}
	return out
}

func (h *docHandler) serve(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	project, slug := r.PathValue("project"), r.PathValue("slug")
	telemetry.SetProject(ctx, project)
	if !authorizeHTTP(w, r, canonv1connect.CanonServiceShowGraphProcedure, project) {
		return
	}
	d, err := document.Read(ctx, h.pool, project, slug)
	if err != nil {
		h.internal(w, r, err)
		return
	}
	out := docView{ProjectKey: project, Slug: d.Slug, Title: d.Title, SourcePath: d.SourcePath,
		SourceType: d.SourceType, Tags: d.Tags, CanonicalType: d.CanonicalType, Status: d.Status,
		Tier: d.Tier, EvidenceTier: d.EvidenceTier, Summary: d.Summary, Edges: []docEdge{}, Chunks: []docViewChunk{}}
	if d.EffectiveDate != nil {
		out.EffectiveDate = d.EffectiveDate.Format(time.DateOnly)
	}
	g, err := h.graph.Graph(ctx, project, slug)
	if err != nil {
		h.internal(w, r, err)
		return
	}
	for _, n := range g.Neighbours {
		out.Edges = append(out.Edges, docEdge{DocID: n.Slug, Title: n.Title, CanonicalType: n.CanonicalType,
			Status: n.Status, EdgeType: n.EdgeType, Weight: n.Weight, Direction: n.Direction, Provenance: n.Provenance})
	}
	for _, c := range d.Chunks {
		out.Chunks = append(out.Chunks, docViewChunk{ID: c.ID, Ordinal: int32(c.Ordinal), HeadingPath: c.HeadingPath,
			Text: c.Text, IsSummary: c.IsSummary, Parts: textParts(c)})
	}
	writeJSON(w, out)
}

func (h *docHandler) internal(w http.ResponseWriter, r *http.Request, err error) {
	writeConnectError(w, toConnect(r.Context(), h.log, "document view", err))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v) //nolint:errcheck // a client that left needs no answer
}
