package server

import (
	"errors"
	"net/http"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"

	"github.com/canonkb/canon/auth"
	"github.com/canonkb/canon/domain"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
)

// policies is who may call each procedure. The guard refuses a procedure missing
// here, and TestEveryRouteIsProtected fails for it, so a new RPC cannot slip through.
var policies = map[string]auth.Policy{
	canonv1connect.SearchServiceSearchProcedure:                           {Role: domain.RoleReader},
	canonv1connect.ChatServiceChatProcedure:                               {Role: domain.RoleReader},
	canonv1connect.ChatServiceChatStreamProcedure:                         {Role: domain.RoleReader},
	canonv1connect.ChatServiceContentGapsProcedure:                        {Role: domain.RoleReader},
	canonv1connect.CanonServiceShowGraphProcedure:                         {Role: domain.RoleReader},
	canonv1connect.ProjectServiceListProjectsProcedure:                    {Role: domain.RoleReader},
	canonv1connect.IngestServiceIngestProcedure:                           {Role: domain.RoleEditor, Audit: true},
	canonv1connect.CanonServicePromoteProcedure:                           {Role: domain.RoleEditor, Audit: true},
	canonv1connect.CanonServiceSupersedeProcedure:                         {Role: domain.RoleEditor, Audit: true},
	canonv1connect.CanonServiceDeprecateProcedure:                         {Role: domain.RoleEditor, Audit: true},
	canonv1connect.CanonServiceArchiveProcedure:                           {Role: domain.RoleEditor, Audit: true},
	canonv1connect.CanonServiceRejectProcedure:                            {Role: domain.RoleEditor, Audit: true},
	canonv1connect.CanonServiceRestoreProcedure:                           {Role: domain.RoleEditor, Audit: true},
	canonv1connect.KeyServiceCreateKeyProcedure:                           {Role: domain.RoleAdmin, Audit: true},
	canonv1connect.KeyServiceListKeysProcedure:                            {Role: domain.RoleAdmin},
	canonv1connect.KeyServiceRevokeKeyProcedure:                           {Role: domain.RoleAdmin, Audit: true},
	"/" + grpchealth.HealthV1ServiceName + "/Check":                       {Public: true},
	"/" + grpchealth.HealthV1ServiceName + "/Watch":                       {Public: true},
	"/" + grpcreflect.ReflectV1ServiceName + "/ServerReflectionInfo":      {Role: domain.RoleReader},
	"/" + grpcreflect.ReflectV1AlphaServiceName + "/ServerReflectionInfo": {Role: domain.RoleReader},
}

// Policies returns a copy of the procedure policies, for tests that walk them.
func Policies() map[string]auth.Policy {
	out := make(map[string]auth.Policy, len(policies))
	for k, v := range policies {
		out[k] = v
	}
	return out
}

// requestScope names the projects (and the document) a request message touches.
func requestScope(msg any) auth.Scope {
	switch m := msg.(type) {
	case *canonv1.SearchRequest:
		return auth.Scope{Projects: filterProjects(m.GetFilters(), m.GetProjectKey())}
	case *canonv1.ChatRequest:
		return auth.Scope{Projects: filterProjects(m.GetFilters(), m.GetProjectKey())}
	case *canonv1.ContentGapsRequest:
		return auth.Scope{Projects: []string{m.GetProjectKey()}}
	case *canonv1.ShowGraphRequest:
		return auth.Scope{Projects: []string{m.GetProjectKey()}, Document: m.GetSlug()}
	case *canonv1.IngestRequest:
		return auth.Scope{Projects: []string{m.GetProjectKey()}}
	case *canonv1.PromoteRequest:
		return auth.Scope{Projects: []string{m.GetProjectKey()}, Document: m.GetSlug()}
	case *canonv1.SupersedeRequest:
		return auth.Scope{Projects: []string{m.GetProjectKey()}, Document: m.GetOldSlug()}
	case *canonv1.DeprecateRequest:
		return auth.Scope{Projects: []string{m.GetProjectKey()}, Document: m.GetSlug()}
	case *canonv1.ArchiveRequest:
		return auth.Scope{Projects: []string{m.GetProjectKey()}, Document: m.GetSlug()}
	case *canonv1.RejectRequest:
		return auth.Scope{Projects: []string{m.GetProjectKey()}, Document: m.GetSlug()}
	case *canonv1.RestoreRequest:
		return auth.Scope{Projects: []string{m.GetProjectKey()}, Document: m.GetSlug()}
	case *canonv1.CreateKeyRequest:
		return auth.Scope{Projects: m.GetProjectKeys()}
	case *canonv1.RevokeKeyRequest:
		return auth.Scope{Document: m.GetId()}
	}
	return auth.Scope{}
}

// filterProjects is every project a search or chat request names (its handler
// rejects a request that names none).
func filterProjects(f *canonv1.Filters, legacy string) []string {
	out := append([]string{}, f.GetProjectKeys()...)
	for _, p := range []string{f.GetProjectKey(), legacy} {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// authorizeHTTP applies a procedure's role and the projects a plain HTTP route
// names (the JSON and web routes share the RPC's policy); false means it answered.
func authorizeHTTP(w http.ResponseWriter, r *http.Request, procedure string, projects ...string) bool {
	err := auth.Authorize(r.Context(), policies[procedure].Role, projects...)
	if err == nil {
		return true
	}
	writeConnectError(w, err)
	return false
}

// writeConnectError answers a plain HTTP route with a Connect error's code and
// message as JSON (an error of another type is internal: its text stays in the log).
func writeConnectError(w http.ResponseWriter, err error) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		ce = connect.NewError(connect.CodeInternal, errors.New("internal error"))
	}
	writeJSONError(w, ce.Code(), ce.Message())
}
