package server

import (
	"context"
	"errors"
	"log/slog"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/domain"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/lifecycle"
	"github.com/canonkb/canon/postgres"
)

// canonHandler serves CanonService: lifecycle operations and graph show.
type canonHandler struct {
	svc *lifecycle.Service
	log *slog.Logger
}

func newCanonHandler(pool *pgxpool.Pool, reads *postgres.Reads, log *slog.Logger) *canonHandler {
	svc := lifecycle.New(pool)
	svc.Reads = reads
	return &canonHandler{svc: svc, log: log}
}

func (h *canonHandler) Promote(ctx context.Context, req *connect.Request[canonv1.PromoteRequest]) (*connect.Response[canonv1.PromoteResponse], error) {
	m := req.Msg
	var priority *int
	if m.RetrievalPriority != nil {
		p := int(m.GetRetrievalPriority())
		priority = &p
	}
	actor := domain.PrincipalFrom(ctx).Actor()
	ch, err := h.svc.Promote(ctx, actor, lifecycle.PromoteRequest{
		Project: m.GetProjectKey(), Slug: m.GetSlug(), Type: m.GetCanonicalType(), Status: m.GetStatus(), Priority: priority,
	})
	if err != nil {
		return nil, h.lifecycleError(ctx, "promote", err)
	}
	return connect.NewResponse(&canonv1.PromoteResponse{Change: ChangeProto(ch)}), nil
}

func (h *canonHandler) Supersede(ctx context.Context, req *connect.Request[canonv1.SupersedeRequest]) (*connect.Response[canonv1.SupersedeResponse], error) {
	actor := domain.PrincipalFrom(ctx).Actor()
	m := req.Msg
	ch, err := h.svc.Supersede(ctx, actor, m.GetProjectKey(), m.GetOldSlug(), m.GetNewSlug())
	if err != nil {
		return nil, h.lifecycleError(ctx, "supersede", err)
	}
	return connect.NewResponse(&canonv1.SupersedeResponse{Change: ChangeProto(ch)}), nil
}

func (h *canonHandler) Deprecate(ctx context.Context, req *connect.Request[canonv1.DeprecateRequest]) (*connect.Response[canonv1.DeprecateResponse], error) {
	actor := domain.PrincipalFrom(ctx).Actor()
	ch, err := h.svc.Deprecate(ctx, actor, req.Msg.GetProjectKey(), req.Msg.GetSlug())
	if err != nil {
		return nil, h.lifecycleError(ctx, "deprecate", err)
	}
	return connect.NewResponse(&canonv1.DeprecateResponse{Change: ChangeProto(ch)}), nil
}

func (h *canonHandler) Archive(ctx context.Context, req *connect.Request[canonv1.ArchiveRequest]) (*connect.Response[canonv1.ArchiveResponse], error) {
	actor := domain.PrincipalFrom(ctx).Actor()
	ch, err := h.svc.Archive(ctx, actor, req.Msg.GetProjectKey(), req.Msg.GetSlug())
	if err != nil {
		return nil, h.lifecycleError(ctx, "archive", err)
	}
	return connect.NewResponse(&canonv1.ArchiveResponse{Change: ChangeProto(ch)}), nil
}

func (h *canonHandler) Reject(ctx context.Context, req *connect.Request[canonv1.RejectRequest]) (*connect.Response[canonv1.RejectResponse], error) {
	actor := domain.PrincipalFrom(ctx).Actor()
	m := req.Msg
	ch, err := h.svc.Reject(ctx, actor, m.GetProjectKey(), m.GetSlug(), m.GetDecisionSlug())
	if err != nil {
		return nil, h.lifecycleError(ctx, "reject", err)
	}
	return connect.NewResponse(&canonv1.RejectResponse{Change: ChangeProto(ch)}), nil
}

func (h *canonHandler) Restore(ctx context.Context, req *connect.Request[canonv1.RestoreRequest]) (*connect.Response[canonv1.RestoreResponse], error) {
	actor := domain.PrincipalFrom(ctx).Actor()
	ch, err := h.svc.Restore(ctx, actor, req.Msg.GetProjectKey(), req.Msg.GetSlug())
	if err != nil {
		return nil, h.lifecycleError(ctx, "restore", err)
	}
	return connect.NewResponse(&canonv1.RestoreResponse{Change: ChangeProto(ch)}), nil
}

func (h *canonHandler) ShowGraph(ctx context.Context, req *connect.Request[canonv1.ShowGraphRequest]) (*connect.Response[canonv1.ShowGraphResponse], error) {
	g, err := h.svc.Graph(ctx, req.Msg.GetProjectKey(), req.Msg.GetSlug())
	if err != nil {
		return nil, h.lifecycleError(ctx, "show graph", err)
	}
	return connect.NewResponse(GraphProto(g)), nil
}

// lifecycleError adds FailedPrecondition (the document's state does not allow the
// operation) to the common mapping.
func (h *canonHandler) lifecycleError(ctx context.Context, op string, err error) error {
	var state *lifecycle.StateError
	if errors.As(err, &state) {
		return connect.NewError(connect.CodeFailedPrecondition, errors.New(state.Message))
	}
	return toConnect(ctx, h.log, op, err)
}

func stateProto(s lifecycle.State) *canonv1.CanonicalState {
	return &canonv1.CanonicalState{CanonicalType: s.CanonicalType, Status: s.Status, RetrievalPriority: int32(s.RetrievalPriority)}
}

// ChangeProto converts a lifecycle change to its wire form (the CLI prints the same).
func ChangeProto(ch lifecycle.Change) *canonv1.LifecycleChange {
	out := &canonv1.LifecycleChange{
		Operation: ch.Operation, ProjectKey: ch.Project, DocId: ch.Slug, Before: stateProto(ch.Before),
		After: stateProto(ch.After), Changed: ch.Changed, AuditId: ch.AuditID, Actor: ch.Actor,
	}
	for _, e := range ch.EdgesAdded {
		out.EdgesAdded = append(out.EdgesAdded, &canonv1.GraphEdge{FromDocId: e.From, ToDocId: e.To, EdgeType: e.EdgeType, Weight: e.Weight})
	}
	for _, e := range ch.EdgesRemoved {
		out.EdgesRemoved = append(out.EdgesRemoved, &canonv1.GraphEdge{FromDocId: e.From, ToDocId: e.To, EdgeType: e.EdgeType, Weight: e.Weight})
	}
	return out
}

// GraphProto converts a document's graph to its wire form (the CLI prints the same).
func GraphProto(g lifecycle.Graph) *canonv1.ShowGraphResponse {
	out := &canonv1.ShowGraphResponse{ProjectKey: g.Project, DocId: g.Slug, Title: g.Title, State: stateProto(g.State)}
	for _, n := range g.Neighbours {
		out.Neighbours = append(out.Neighbours, &canonv1.GraphNeighbour{
			DocId: n.Slug, Title: n.Title, CanonicalType: n.CanonicalType, Status: n.Status, EdgeType: n.EdgeType,
			Weight: n.Weight, Direction: n.Direction, Provenance: n.Provenance, DeclaredBy: n.DeclaredBy,
		})
	}
	return out
}
