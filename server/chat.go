package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/canonkb/canon/auth"
	"github.com/canonkb/canon/chat"
	"github.com/canonkb/canon/chatlog"
	"github.com/canonkb/canon/domain"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
	"github.com/canonkb/canon/llm"
	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/telemetry"
)

type chatHandler struct {
	chat  *chat.Service
	pool  *pgxpool.Pool
	reads *postgres.Reads
	log   *slog.Logger
}

func (h *chatHandler) Chat(ctx context.Context, req *connect.Request[canonv1.ChatRequest]) (*connect.Response[canonv1.ChatResponse], error) {
	res, err := h.chat.Answer(ctx, ChatRequest(req.Msg), req.Header().Get("Accept-Language"), chat.Events{})
	if err != nil {
		return nil, chatError(ctx, h.log, err)
	}
	return connect.NewResponse(ChatResponseProto(res)), nil
}

func (h *chatHandler) ChatStream(ctx context.Context, req *connect.Request[canonv1.ChatRequest], stream *connect.ServerStream[canonv1.ChatStreamResponse]) error {
	res, err := h.chat.Answer(ctx, ChatRequest(req.Msg), req.Header().Get("Accept-Language"), chat.Events{
		Retrieval: func(s domain.RetrievalSummary) error {
			return stream.Send(&canonv1.ChatStreamResponse{Event: &canonv1.ChatStreamResponse_Retrieval{Retrieval: RetrievalSummaryProto(s)}})
		},
		Delta: func(d string) error {
			return stream.Send(&canonv1.ChatStreamResponse{Event: &canonv1.ChatStreamResponse_Delta{Delta: d}})
		},
	})
	if err != nil {
		return chatError(ctx, h.log, err)
	}
	return stream.Send(&canonv1.ChatStreamResponse{Event: &canonv1.ChatStreamResponse_Final{Final: ChatResponseProto(res)}})
}

func (h *chatHandler) ContentGaps(ctx context.Context, req *connect.Request[canonv1.ContentGapsRequest]) (*connect.Response[canonv1.ContentGapsResponse], error) {
	gaps, err := chatlog.ContentGaps(ctx, h.pool, h.reads, req.Msg.GetProjectKey(), int(req.Msg.GetLimit()))
	if err != nil {
		return nil, toConnect(ctx, h.log, "content gaps", err)
	}
	return connect.NewResponse(ContentGapsProto(gaps)), nil
}

// chatError maps a turn's failure: the language model's by what it asks of
// the caller (the provider's own words only for a rejected request: a 401's
// may quote part of the key), anything else as toConnect does.
func chatError(ctx context.Context, log *slog.Logger, err error) error {
	var pe *llm.ProviderError
	switch {
	case errors.As(err, &pe) && pe.Failure == llm.FailureCredentials:
		log.ErrorContext(ctx, "the language model provider refused canon's credentials", "err", err)
		hint := "check KB_LLM_API_KEY"
		if pe.StatusCode == http.StatusForbidden {
			hint += " and its access to the model KB_LLM_MODEL names"
		}
		return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf(
			"the language model provider refused canon's credentials (%s); %s", pe.Reason(), hint))
	case errors.As(err, &pe) && pe.Failure == llm.FailureRejected:
		log.WarnContext(ctx, "the language model provider rejected the request", "err", err)
		msg := fmt.Sprintf("the language model provider rejected the request (%s)", pe.Reason())
		if pe.Detail != "" {
			msg += ": " + pe.Detail
		}
		return connect.NewError(connect.CodeFailedPrecondition, errors.New(msg))
	case errors.As(err, &pe) && pe.Failure == llm.FailureRateLimited:
		log.WarnContext(ctx, "the language model provider is rate-limiting canon", "err", err)
		return connect.NewError(connect.CodeUnavailable, fmt.Errorf(
			"the language model provider is rate-limiting canon (%s); try again in a minute", pe.Reason()))
	case chat.IsUnavailable(err):
		log.WarnContext(ctx, "language model unavailable", "err", err)
		return connect.NewError(connect.CodeUnavailable, errors.New("the language model is unavailable; try again shortly"))
	}
	return toConnect(ctx, log, "chat", err)
}

// maxJSONBody bounds POST /api/kb/chat bodies (history of 50 long turns fits).
const maxJSONBody = 2 << 20

// jsonChat serves POST /api/kb/chat: the ChatService contract as plain JSON with
// snake_case fields. The legacy body {question, project_key} works as is.
func (h *chatHandler) jsonChat(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, maxJSONBody)
	if !ok {
		return
	}
	var req canonv1.ChatRequest
	if err := (protojson.UnmarshalOptions{}).Unmarshal(body, &req); err != nil {
		writeJSONError(w, connect.CodeInvalidArgument, protoJSONError("the request body", &req, err).Error())
		return
	}
	projects := filterProjects(req.GetFilters(), req.GetProjectKey())
	telemetry.SetProject(r.Context(), strings.Join(projects, ","))
	if !authorizeHTTP(w, r, canonv1connect.ChatServiceChatProcedure, projects...) {
		return
	}
	res, err := h.chat.Answer(r.Context(), ChatRequest(&req), r.Header.Get("Accept-Language"), chat.Events{})
	if err != nil {
		writeConnectError(w, chatError(r.Context(), h.log, err))
		return
	}
	b, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(ChatResponseProto(res))
	if err != nil {
		writeJSONError(w, connect.CodeInternal, "chat failed")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b) //nolint:errcheck // a client that left cannot be told
}

func writeJSONError(w http.ResponseWriter, code connect.Code, msg string) {
	auth.WriteJSONError(w, code, msg)
}

// readBody reads a plain HTTP route's body, at most limit bytes; false means
// it answered: 413 for a longer body (as the guard answers one declared
// longer), 400 for one that cannot be read.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		auth.WriteBodyTooLarge(w, &auth.BodyTooLargeError{Limit: tooLarge.Limit})
		return nil, false
	case err != nil:
		writeJSONError(w, connect.CodeInvalidArgument, "request body is unreadable: "+err.Error())
		return nil, false
	}
	return body, true
}
