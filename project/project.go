// Package project lists the projects the request's principal may use, with the
// size of what it may see in each: the API, the CLI and the MCP server share it,
// so the list is scoped in one place.
package project

import (
	"context"
	"fmt"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
)

// Summary is one project as its viewer sees it.
type Summary struct {
	Key                string
	Documents          int64
	Chunks             int64
	CanonicalDocuments int64
	Entities           int64
}

// List returns the projects the principal in ctx may use, by key; the counts
// leave out documents its access lists hide.
func List(ctx context.Context, q db.DBTX) ([]Summary, error) {
	viewer := domain.PrincipalFrom(ctx)
	rows, err := db.New(q).ProjectList(ctx, db.ProjectListParams{AllProjects: viewer.AllProjects,
		ProjectKeys: append([]string{}, viewer.Projects...), AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups()})
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	out := make([]Summary, len(rows))
	for i, r := range rows {
		out[i] = Summary{Key: r.ProjectKey, Documents: r.Documents, Chunks: r.Chunks,
			CanonicalDocuments: r.CanonicalDocuments, Entities: r.Entities}
	}
	return out, nil
}
