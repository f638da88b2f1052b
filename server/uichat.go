package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/canonkb/canon/auth"
	"github.com/canonkb/canon/chat"
	"github.com/canonkb/canon/domain"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
	"github.com/canonkb/canon/telemetry"
)

// POST /api/chat speaks the Vercel AI SDK UI message stream (v1), so the web
// page's useChat (@ai-sdk/react) works unchanged. Spec: the `ai` npm package's
// uiMessageChunkSchema; web/test/protocol.test.mjs parses this stream with it.

// uiStreamHeader marks the body as a UI message stream for the AI SDK client.
const uiStreamHeader = "x-vercel-ai-ui-message-stream"

// maxUIChatBody bounds a /api/chat body: useChat resends the whole conversation,
// data parts (citations with snippets) included.
const maxUIChatBody = 8 << 20

// uiChatRequest is useChat's default body (id, messages, trigger, messageId)
// plus canon's own fields.
type uiChatRequest struct {
	ID        string      `json:"id"`
	Messages  []uiMessage `json:"messages"`
	Trigger   string      `json:"trigger"`
	MessageID string      `json:"messageId"`
	Project   string      `json:"project"`
	// Filters is canon's Filters message in its JSON form (snake_case or camelCase).
	Filters  json.RawMessage `json:"filters"`
	Fusion   string          `json:"fusion"`
	Limit    int32           `json:"limit"`
	Language string          `json:"language"`
}

type uiMessage struct {
	ID    string   `json:"id"`
	Role  string   `json:"role"`
	Parts []uiPart `json:"parts"`
}

// uiPart keeps the fields of the parts the server reads back: text, and a
// refusal's body (so a refused turn is history too).
type uiPart struct {
	Type string          `json:"type"`
	Text string          `json:"text"`
	Data json.RawMessage `json:"data"`
}

type uiChatHandler struct {
	chat *chat.Service
	log  *slog.Logger
	// streams caps a key's open streams, this route's and ChatStream's together.
	streams *auth.Guard
}

func (h *uiChatHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, maxUIChatBody)
	if !ok {
		return
	}
	creq, err := decodeUIChat(body)
	if err != nil {
		writeJSONError(w, connect.CodeInvalidArgument, err.Error())
		return
	}
	projects := filterProjects(creq.GetFilters(), creq.GetProjectKey())
	telemetry.SetProject(r.Context(), strings.Join(projects, ","))
	if !authorizeHTTP(w, r, canonv1connect.ChatServiceChatStreamProcedure, projects...) {
		return
	}
	release, err := h.streams.AcquireStream(domain.PrincipalFrom(r.Context()))
	if err != nil {
		writeConnectError(w, err)
		return
	}
	defer release()
	s := &uiStream{w: w}
	s.flusher, _ = w.(http.Flusher)
	messageID := newUIID("msg")
	ev := uiEvents(s, messageID, creq.GetQuestion())
	res, err := h.chat.Answer(r.Context(), ChatRequest(creq), r.Header.Get("Accept-Language"), ev.events)
	if err != nil {
		h.fail(r.Context(), s, err)
		return
	}
	if err := ev.finish(res); err != nil {
		h.lost(r.Context(), err)
	}
}

// lost records a stream whose client left before its end: canceled.
func (h *uiChatHandler) lost(ctx context.Context, err error) {
	telemetry.SetCode(ctx, connect.CodeCanceled)
	if ctx.Err() == nil {
		h.log.WarnContext(ctx, "web chat: write failed", "err", err)
	}
}

// fail answers a failure before the stream started as a JSON error with its
// HTTP status, and after it as an `error` chunk; either way the request's
// log line and metrics carry its code (the stream's status is 200).
func (h *uiChatHandler) fail(ctx context.Context, s *uiStream, err error) {
	if ctx.Err() != nil && !shuttingDown(ctx) {
		h.lost(ctx, err) // the client left (Stop): nobody to tell
		return
	}
	var ce *connect.Error
	if !errors.As(chatError(ctx, h.log, err), &ce) {
		ce = connect.NewError(connect.CodeInternal, errors.New("chat failed; the server log has details"))
	}
	telemetry.SetCode(ctx, ce.Code())
	if !s.started {
		writeJSONError(s.w, ce.Code(), ce.Message())
		return
	}
	msg := ce.Message()
	if ce.Code() == connect.CodeUnavailable {
		msg += " (press Regenerate to retry)"
	}
	s.send(map[string]any{"type": "error", "errorText": msg}) //nolint:errcheck // the client may be gone
	s.done()                                                  //nolint:errcheck // as above
}

// decodeUIChat reads useChat's body into a ChatRequest: the last message is the
// question, the ones before it the history (its most recent chat.MaxHistory turns).
func decodeUIChat(body []byte) (*canonv1.ChatRequest, error) {
	// encoding/json would read each stray byte as U+FFFD: the question would be
	// answered, and logged, as other text than the one sent.
	if !utf8.Valid(body) {
		return nil, errors.New("the request body holds invalid UTF-8: send the conversation as UTF-8 JSON")
	}
	var in uiChatRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("request body is not the JSON useChat sends ({id, messages, trigger, ...}): %s", jsonProblem(err))
	}
	if len(in.Messages) == 0 {
		return nil, errors.New("messages is empty: send the conversation, the question last")
	}
	var turns []*canonv1.Turn
	for i, m := range in.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, fmt.Errorf("messages[%d].role must be user or assistant (got %s)", i, domain.Quote(m.Role))
		}
		text := messageText(m)
		if text == "" && i < len(in.Messages)-1 {
			continue // an answer stopped before its first word says nothing to the model
		}
		turns = append(turns, &canonv1.Turn{Role: m.Role, Content: text})
	}
	// The question itself, even empty: chat's validation says what is wrong with it.
	if in.Messages[len(in.Messages)-1].Role != "user" {
		return nil, errors.New("the last message must be the user's question")
	}
	history := turns[:len(turns)-1]
	if len(history) > chat.MaxHistory {
		history = history[len(history)-chat.MaxHistory:]
	}
	req := &canonv1.ChatRequest{Question: turns[len(turns)-1].GetContent(), History: history,
		Options: &canonv1.ChatOptions{Fusion: in.Fusion, Limit: in.Limit, Language: in.Language},
		Filters: &canonv1.Filters{}}
	if len(in.Filters) > 0 && string(in.Filters) != "null" {
		if err := (protojson.UnmarshalOptions{}).Unmarshal(in.Filters, req.Filters); err != nil {
			return nil, protoJSONError("filters", req.Filters, err)
		}
	}
	if in.Project != "" && len(req.Filters.GetProjectKeys()) == 0 {
		req.Filters.ProjectKeys = []string{in.Project}
	}
	return req, nil
}

// jsonProblem words a JSON decode error by the field as the body spells it and
// the types involved: encoding/json's own text names Go types
// ("uiChatRequest.messages of type []server.uiMessage").
func jsonProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "the body"
		}
		return fmt.Sprintf("%s must be %s, not %s (byte %d)", field, jsonKind(typeErr.Type), jsonValue(typeErr.Value),
			typeErr.Offset)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("%v (byte %d)", syntaxErr, syntaxErr.Offset)
	}
	return err.Error()
}

// jsonKind is what JSON a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another kind of value"
}

// jsonValue names the JSON value an UnmarshalTypeError describes ("string",
// "number 1.5").
func jsonValue(v string) string {
	kind, literal, _ := strings.Cut(v, " ")
	if literal != "" {
		return literal
	}
	switch kind {
	case "array", "object":
		return "an " + kind
	case "bool":
		return "a boolean"
	}
	return "a " + kind
}

// messageText is a message's text parts joined; a refusal stands for its body.
func messageText(m uiMessage) string {
	var b strings.Builder
	for _, p := range m.Parts {
		switch p.Type {
		case "text":
			b.WriteString(p.Text)
		case "data-refusal":
			var d struct {
				Body string `json:"body"`
			}
			if json.Unmarshal(p.Data, &d) == nil {
				b.WriteString(d.Body)
			}
		}
	}
	return strings.TrimSpace(b.String())
}

// uiStream writes UI message stream frames, sending the headers with the first.
type uiStream struct {
	w       http.ResponseWriter
	flusher http.Flusher
	started bool
}

func (s *uiStream) send(chunk any) error {
	b, err := json.Marshal(chunk)
	if err != nil {
		return err
	}
	return s.frame(b)
}

func (s *uiStream) frame(payload []byte) error {
	if !s.started {
		s.started = true
		hd := s.w.Header()
		hd.Set("Content-Type", "text/event-stream")
		hd.Set("Cache-Control", "no-cache")
		hd.Set("Connection", "keep-alive")
		hd.Set("X-Accel-Buffering", "no") // proxies must not buffer the stream
		hd.Set(uiStreamHeader, "v1")
		s.w.WriteHeader(http.StatusOK)
	}
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", payload); err != nil {
		return err
	}
	if s.flusher != nil {
		s.flusher.Flush()
	}
	return nil
}

func (s *uiStream) done() error { return s.frame([]byte("[DONE]")) }

func newUIID(prefix string) string {
	b := make([]byte, 8)
	rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}

// uiTurn maps one chat turn onto UI message chunks. Everything that translates
// chat results into the wire lives here and in the data types below.
type uiTurn struct {
	s         *uiStream
	messageID string
	question  string
	textID    string
	texting   bool
	passages  []*domain.Hit
	events    chat.Events
}

func uiEvents(s *uiStream, messageID, question string) *uiTurn {
	t := &uiTurn{s: s, messageID: messageID, question: question, textID: messageID + "_text"}
	t.events = chat.Events{
		Retrieval: func(sum domain.RetrievalSummary) error {
			if err := s.send(map[string]any{"type": "start", "messageId": messageID}); err != nil {
				return err
			}
			return t.data("retrieval", "", retrievalData{
				SearchMode: sum.SearchMode, HierarchyReason: sum.HierarchyReason,
				Primary: int32(sum.PrimaryCount), Expanded: int32(sum.ExpandedCount), Rejected: int32(sum.RejectedCount),
				DocIDs: nonNil(sum.DocIDs), RetrievalMs: sum.RetrievalMs, RetrievalQuery: sum.RetrievalQuery,
			})
		},
		Passages: t.sources,
		Cite:     t.cite,
		Delta: func(d string) error {
			if !t.texting {
				t.texting = true
				if err := s.send(map[string]any{"type": "text-start", "id": t.textID}); err != nil {
					return err
				}
			}
			return s.send(map[string]any{"type": "text-delta", "id": t.textID, "delta": d})
		},
	}
	return t
}

func (t *uiTurn) data(name, id string, v any) error {
	chunk := map[string]any{"type": "data-" + name, "data": v}
	if id != "" {
		chunk["id"] = id
	}
	return t.s.send(chunk)
}

// sources sends every passage the answer may cite as a source-document, then
// the graph neighbours and the rejected approaches among them. Citations come
// later, one per passage the answer cites (cite).
func (t *uiTurn) sources(passages []*domain.Hit) error {
	t.passages = passages
	var related []relatedData
	var rejected []citationData
	for i, h := range passages {
		c := newCitationData(i+1, h)
		if err := t.s.send(map[string]any{"type": "source-document", "sourceId": c.SourceID,
			"mediaType": "text/markdown", "title": h.Title, "filename": h.SourcePath}); err != nil {
			return err
		}
		e := h.Edge
		if e == nil {
			e = &domain.Edge{}
		}
		switch {
		case h.Origin == domain.OriginGraphExpansion || (e.EdgeType != "" && h.Origin != domain.OriginRejectedApproach):
			related = append(related, relatedData{N: c.N, DocID: h.DocID, Title: h.Title,
				CanonicalType: h.CanonicalType, Status: h.Status, EdgeType: e.EdgeType,
				Direction: e.Direction, FromDocID: e.FromDocID, Weight: e.Weight})
		case h.Origin == domain.OriginRejectedApproach:
			rejected = append(rejected, c)
		}
	}
	if err := t.data("related", "", map[string]any{"neighbours": nonNil(related)}); err != nil {
		return err
	}
	return t.data("rejected", "", map[string]any{"approaches": nonNil(rejected)})
}

// cite sends a data-citation for a passage the answer cites, numbered as the
// answer numbers it ([1] first), before the text that carries its marker; its
// sourceId is the passage's source-document.
func (t *uiTurn) cite(n int, h *domain.Hit) error {
	c := newCitationData(n, h)
	if i := slices.Index(t.passages, h); i >= 0 {
		c.SourceID = sourceID(i + 1)
	}
	return t.data("citation", c.SourceID, c)
}

// finish sends what the final response adds: the refusal, or the checked answer,
// its usage and follow-ups; then finish and [DONE].
func (t *uiTurn) finish(res *domain.ChatResponse) error {
	meta := res.Meta
	if !t.s.started { // Answer ends before retrieval only by an error; keep the stream whole regardless
		if err := t.s.send(map[string]any{"type": "start", "messageId": t.messageID}); err != nil {
			return err
		}
	}
	if res.RefusalReason != "" {
		if err := t.data("refusal", "", refusalData{Reason: res.RefusalReason, Body: res.Answer,
			Language: meta.Language, Gap: gapData{Question: t.question, Normalized: domain.NormalizeQuestion(t.question),
				Projects: nonNil(meta.Filters.ProjectKeys)},
			BestVectorSimilarity: meta.BestVectorSimilarity, BestKeywordCoverage: meta.BestKeywordCoverage}); err != nil {
			return err
		}
	} else {
		if t.texting {
			if err := t.s.send(map[string]any{"type": "text-end", "id": t.textID}); err != nil {
				return err
			}
		}
		cited := []int32{}
		for _, c := range res.Citations {
			cited = append(cited, int32(c.N))
		}
		if err := t.data("answer", "", answerData{Text: res.Answer, Cited: cited,
			Dropped: int32s(meta.DroppedMarkers), CitationSupport: meta.CitationSupport}); err != nil {
			return err
		}
	}
	var usage domain.Usage
	if meta.Usage != nil {
		usage = *meta.Usage
	}
	if err := t.data("usage", "", usageData{Provider: meta.Provider, Model: meta.Model,
		PromptTokens: int32(usage.PromptTokens), CompletionTokens: int32(usage.CompletionTokens),
		CostUSD: meta.CostUSD, RetrievalMs: meta.RetrievalMs, GenerationMs: meta.GenerationMs,
		TotalMs: meta.TotalMs}); err != nil {
		return err
	}
	if err := t.data("followups", "", map[string]any{"questions": nonNil(meta.FollowUps)}); err != nil {
		return err
	}
	if err := t.s.send(map[string]any{"type": "finish", "finishReason": "stop"}); err != nil {
		return err
	}
	return t.s.done()
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// The data parts' payloads, as the page (web/src/types.ts) reads them.

type retrievalData struct {
	SearchMode      string   `json:"searchMode"`
	HierarchyReason string   `json:"hierarchyReason"`
	Primary         int32    `json:"primary"`
	Expanded        int32    `json:"expanded"`
	Rejected        int32    `json:"rejected"`
	DocIDs          []string `json:"docIds"`
	RetrievalMs     float64  `json:"retrievalMs"`
	RetrievalQuery  string   `json:"retrievalQuery,omitempty"`
}

type citationData struct {
	N            int      `json:"n"`
	SourceID     string   `json:"sourceId"`
	DocID        string   `json:"docId"`
	ChunkID      int64    `json:"chunkId"`
	ProjectKey   string   `json:"projectKey"`
	Title        string   `json:"title"`
	HeadingPath  []string `json:"headingPath"`
	Snippet      string   `json:"snippet"`
	Status       string   `json:"status"`
	EvidenceTier string   `json:"evidenceTier"`
	Tier         string   `json:"tier"`
	Score        float64  `json:"score"`
	Origin       string   `json:"origin"`
	SourcePath   string   `json:"sourcePath"`
}

func newCitationData(n int, h *domain.Hit) citationData {
	return citationData{N: n, SourceID: sourceID(n), DocID: h.DocID, ChunkID: h.ChunkID,
		ProjectKey: h.ProjectKey, Title: h.Title, HeadingPath: nonNil(h.HeadingPath),
		Snippet: h.Snippet, Status: h.Status, EvidenceTier: h.EvidenceTier, Tier: h.Tier,
		Score: h.Score, Origin: h.Origin, SourcePath: h.SourcePath}
}

// sourceID names the source-document of the n-th passage of the prompt.
func sourceID(n int) string { return fmt.Sprintf("c%d", n) }

type relatedData struct {
	N             int     `json:"n"`
	DocID         string  `json:"docId"`
	Title         string  `json:"title"`
	CanonicalType string  `json:"canonicalType"`
	Status        string  `json:"status"`
	EdgeType      string  `json:"edgeType"`
	Direction     string  `json:"direction"`
	FromDocID     string  `json:"fromDocId"`
	Weight        float64 `json:"weight"`
}

type answerData struct {
	// Text is the answer as checked: markers that pointed at no passage removed.
	Text            string  `json:"text"`
	Cited           []int32 `json:"cited"`
	Dropped         []int32 `json:"dropped"`
	CitationSupport float64 `json:"citationSupport"`
}

// gapData is the content gap a refusal recorded (chatlog rolls refusals up by
// normalized question, per project).
type gapData struct {
	Question   string   `json:"question"`
	Normalized string   `json:"normalized"`
	Projects   []string `json:"projects"`
}

type refusalData struct {
	Reason               string  `json:"reason"`
	Body                 string  `json:"body"`
	Language             string  `json:"language"`
	Gap                  gapData `json:"gap"`
	BestVectorSimilarity float64 `json:"bestVectorSimilarity"`
	BestKeywordCoverage  float64 `json:"bestKeywordCoverage"`
}

type usageData struct {
	Provider         string  `json:"provider"`
	Model            string  `json:"model"`
	PromptTokens     int32   `json:"promptTokens"`
	CompletionTokens int32   `json:"completionTokens"`
	CostUSD          float64 `json:"costUsd"`
	RetrievalMs      float64 `json:"retrievalMs"`
	GenerationMs     float64 `json:"generationMs"`
	TotalMs          float64 `json:"totalMs"`
}
