package chatlog

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/postgres"
)

// Gap is a question canon refused, with how often and when it was asked.
type Gap struct {
	Question            string
	Count               int64
	FirstSeen, LastSeen time.Time
}

// ContentGaps lists a project's refused questions the request's principal may
// see (those every asker's groups allow it), most asked first; limit 0 means 50. A bad limit or a missing project key is a *domain.InvalidError, an
// unknown project a *domain.NotFoundError.
func ContentGaps(ctx context.Context, pool *pgxpool.Pool, reads *postgres.Reads, projectKey string, limit int) ([]Gap, error) {
	var gaps []Gap
	err := reads.Do(ctx, func(ctx context.Context) error {
		var err error
		gaps, err = contentGaps(ctx, postgres.ReadPool(ctx, pool), projectKey, limit)
		return err
	})
	return gaps, err
}

func contentGaps(ctx context.Context, pool *pgxpool.Pool, projectKey string, limit int) ([]Gap, error) {
	if limit == 0 {
		limit = 50
	}
	if limit < 1 || limit > 1000 {
		return nil, &domain.InvalidError{Message: "limit must be between 1 and 1000"}
	}
	if err := domain.ValidateProjectKey(projectKey); err != nil {
		return nil, err
	}
	q := db.New(pool)
	project, err := q.ProjectGetByKey(ctx, projectKey)
	if err != nil {
		return nil, &domain.NotFoundError{Message: fmt.Sprintf("unknown project %s", domain.Quote(projectKey))}
	}
	viewer := domain.PrincipalFrom(ctx)
	rows, err := q.ContentGapList(ctx, db.ContentGapListParams{ProjectID: project.ID, RowLimit: int32(limit),
		AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups()})
	if err != nil {
		return nil, err
	}
	out := make([]Gap, 0, len(rows))
	for _, r := range rows {
		out = append(out, Gap{Question: r.ExampleQuestion, Count: r.Count, FirstSeen: r.FirstSeen, LastSeen: r.LastSeen})
	}
	return out, nil
}

// filtersJSON is the chat_logs.filters document: the applied filters under the
// API's field names (canon.v1.Filters), so log queries read like requests.
func filtersJSON(f domain.Filters) any {
	type doc struct {
		ProjectKeys       []string `json:"project_keys,omitempty"`
		Tags              []string `json:"tags,omitempty"`
		SourceTypes       []string `json:"source_types,omitempty"`
		CanonicalTypes    []string `json:"canonical_types,omitempty"`
		Statuses          []string `json:"statuses,omitempty"`
		EvidenceTiers     []string `json:"evidence_tiers,omitempty"`
		DateFrom          string   `json:"date_from,omitempty"`
		DateTo            string   `json:"date_to,omitempty"`
		DocIDs            []string `json:"doc_ids,omitempty"`
		DocIDsMode        string   `json:"doc_ids_mode,omitempty"`
		IncludeSuperseded bool     `json:"include_superseded"`
	}
	d := doc{ProjectKeys: f.ProjectKeys, Tags: f.Tags, SourceTypes: f.SourceTypes, CanonicalTypes: f.CanonicalTypes,
		Statuses: f.Statuses, EvidenceTiers: f.EvidenceTiers, DocIDs: f.DocIDs, DocIDsMode: f.DocIDsMode(),
		IncludeSuperseded: f.IncludeSuperseded}
	if f.DateFrom != nil {
		d.DateFrom = f.DateFrom.Format(time.DateOnly)
	}
	if f.DateTo != nil {
		d.DateTo = f.DateTo.Format(time.DateOnly)
	}
	return d
}
