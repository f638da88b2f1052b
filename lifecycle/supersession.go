package lifecycle

import (
	"context"
	"fmt"
	"strings"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
)

// # Superseded by another document
//
// A document is superseded when its file says so, and also when a document in
// force (accepted, active, or itself superseded later; not a rejected approach)
// supersedes it, whatever its own file says: documents.status is that effective
// status, declared_status what the file or the last operation says, and
// superseded_by the superseding documents (migration 00076). Every reader of
// status (ranking, filters, answers, hits, MCP, API) gets the effective one.
//
// RefreshSupersession keeps superseded_by in step: every transaction that writes
// edges, statuses or documents runs it before it commits (ingest's batches and
// prune, the operations here, reembed), so a file edited, re-ingested or deleted
// on either end, or a superseding document rejected, deprecated or archived,
// leaves the effective status right.

// Supersession is one document whose record of superseding documents changed.
type Supersession struct {
	Slug, SourcePath string
	// DeclaredStatus is what its file (or the last operation) says, Status the
	// effective one.
	DeclaredStatus, Status string
	// Before and After are the superseding documents' slugs.
	Before, After []string
}

// RefreshSupersession takes the project's graph lock (held to the commit) and
// records on each document of the project the documents in force that
// supersede it, in the caller's transaction. It returns the documents it
// changed. Call it after the transaction's writes: a row another transaction
// holds is left to that transaction's own refresh.
func RefreshSupersession(ctx context.Context, q *db.Queries, projectID int64) ([]Supersession, error) {
	if err := q.GraphLock(ctx, projectID); err != nil {
		return nil, fmt.Errorf("graph lock: %w", err)
	}
	rows, err := q.SupersessionRefresh(ctx, db.SupersessionRefreshParams{
		ProjectID: projectID, SupersedingStatuses: domain.SupersedingStatuses()})
	if err != nil {
		return nil, fmt.Errorf("superseded documents: %w", err)
	}
	out := make([]Supersession, len(rows))
	for i, r := range rows {
		out[i] = Supersession{Slug: r.Slug, SourcePath: r.SourcePath, DeclaredStatus: r.DeclaredStatus, Status: r.Status,
			Before: r.SupersededBefore, After: r.SupersededBy}
	}
	return out, nil
}

// Note says what a change means for readers, for the documents whose effective
// status it changed (empty when it did not: a document that says superseded
// anyway, or one whose superseding documents only changed names).
func (s Supersession) Note() string {
	switch {
	case len(s.Before) == 0 && s.Status == "superseded" && s.DeclaredStatus != "superseded":
		return fmt.Sprintf("%s is now treated as superseded: %s supersedes it, although its own status is %s; "+
			"set `status: superseded` in %s", s.Slug, strings.Join(s.After, ", "), show(s.DeclaredStatus), fileOf(s))
	case len(s.After) == 0 && len(s.Before) > 0 && s.DeclaredStatus != "superseded" && s.Status == s.DeclaredStatus &&
		(s.Status == "accepted" || s.Status == "active"):
		return fmt.Sprintf("%s is %s again: %s no longer supersedes it (not in force, or the edge is gone)",
			s.Slug, s.Status, strings.Join(s.Before, ", "))
	}
	return ""
}

func fileOf(s Supersession) string {
	if s.SourcePath != "" {
		return s.SourcePath
	}
	return "its file"
}
