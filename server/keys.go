package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/canonkb/canon/auth"
	"github.com/canonkb/canon/domain"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
)

// keyHandler serves KeyService. The guard has checked the admin role and, for
// CreateKey, the projects; an admin manages only keys within its own projects.
type keyHandler struct {
	store *auth.Store
	log   *slog.Logger
}

func (h *keyHandler) CreateKey(ctx context.Context, req *connect.Request[canonv1.CreateKeyRequest]) (*connect.Response[canonv1.CreateKeyResponse], error) {
	m := req.Msg
	p := domain.PrincipalFrom(ctx)
	for _, g := range m.GetGroups() {
		// A group opens access-restricted documents: a key may hand out only what it sees.
		if domain.ValidGroup(g) && !p.AllDocuments && !slices.Contains(p.Groups, g) {
			return nil, connect.NewError(connect.CodePermissionDenied,
				fmt.Errorf("this key may not grant group %q: it is not in that group", g))
		}
	}
	// The guard let only projects the caller may use through, so naming the
	// missing ones tells it nothing about projects it cannot see.
	unknown, err := h.store.UnknownProjects(ctx, m.GetProjectKeys())
	if err != nil {
		return nil, toConnect(ctx, h.log, "create key", err)
	}
	if len(unknown) > 0 {
		return nil, connect.NewError(connect.CodeNotFound, errors.New(unknownProjects(unknown)+
			" (canon projects lists them; for a project its first ingest will create, the operator runs canon keys create)"))
	}
	key, info, err := h.store.Create(ctx, auth.NewKeyRequest{Name: m.GetName(), Projects: m.GetProjectKeys(),
		Role: m.GetRole(), Groups: m.GetGroups()})
	if err != nil {
		return nil, toConnect(ctx, h.log, "create key", err)
	}
	return connect.NewResponse(&canonv1.CreateKeyResponse{Key: key, Info: KeyProto(info)}), nil
}

func (h *keyHandler) ListKeys(ctx context.Context, _ *connect.Request[canonv1.ListKeysRequest]) (*connect.Response[canonv1.ListKeysResponse], error) {
	keys, err := h.store.List(ctx)
	if err != nil {
		return nil, toConnect(ctx, h.log, "list keys", err)
	}
	p := domain.PrincipalFrom(ctx)
	out := &canonv1.ListKeysResponse{}
	for _, k := range keys {
		if managesKey(p, k) {
			out.Keys = append(out.Keys, KeyProto(k))
		}
	}
	return connect.NewResponse(out), nil
}

func (h *keyHandler) RevokeKey(ctx context.Context, req *connect.Request[canonv1.RevokeKeyRequest]) (*connect.Response[canonv1.RevokeKeyResponse], error) {
	p := domain.PrincipalFrom(ctx)
	k, err := h.store.Get(ctx, req.Msg.GetId())
	var notFound *domain.NotFoundError
	if (err == nil && !managesKey(p, k)) || (errors.As(err, &notFound) && !p.AllProjects) {
		// A key outside the admin's projects and no key at all look the same.
		return nil, connect.NewError(connect.CodePermissionDenied, fmt.Errorf("this key may not manage key %s", domain.Quote(req.Msg.GetId())))
	}
	if err != nil {
		return nil, toConnect(ctx, h.log, "revoke key", err)
	}
	k, err = h.store.Revoke(ctx, k.ID)
	if err != nil {
		return nil, toConnect(ctx, h.log, "revoke key", err)
	}
	return connect.NewResponse(&canonv1.RevokeKeyResponse{Info: KeyProto(k)}), nil
}

// unknownProjects names projects that do not exist: `unknown project "a"`,
// `unknown projects "a", "b"`.
func unknownProjects(keys []string) string {
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = strconv.Quote(k)
	}
	if len(keys) == 1 {
		return "unknown project " + quoted[0]
	}
	return "unknown projects " + strings.Join(quoted, ", ")
}

// managesKey: an admin manages a key when every project of the key is its own.
func managesKey(p domain.Principal, k auth.KeyInfo) bool {
	for _, project := range k.Projects {
		if !p.MayUse(project) {
			return false
		}
	}
	return true
}

// KeyProto converts a key's description to its wire form (the CLI prints the same).
func KeyProto(k auth.KeyInfo) *canonv1.APIKey {
	out := &canonv1.APIKey{Id: k.ID, Name: k.Name, Prefix: k.Prefix, ProjectKeys: k.Projects, Role: string(k.Role),
		Groups: k.Groups, CreatedAt: k.CreatedAt.UTC().Format(time.RFC3339)}
	if k.LastUsedAt != nil {
		out.LastUsedAt = k.LastUsedAt.UTC().Format(time.RFC3339)
	}
	if k.RevokedAt != nil {
		out.RevokedAt = k.RevokedAt.UTC().Format(time.RFC3339)
	}
	return out
}
