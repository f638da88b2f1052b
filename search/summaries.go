package search

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/postgres"
)

// WithSummaries returns hits with the summary chunk of each of their documents
// that has one and does not already have it among hits, placed just before the
// document's first hit: an answer's context then carries what each document is
// about, which its best chunks for the question may not say (an incident's
// chunks "What went wrong" and "Follow-ups" without the summary of what
// happened). A summary takes its document's first hit's origin and score.
// Documents the caller may not see get none; hits is not modified.
func (s *Searcher) WithSummaries(ctx context.Context, hits []*domain.Hit) ([]*domain.Hit, error) {
	var keys []string
	var ids []int64
	docOf := func(h *domain.Hit) string { return h.ProjectKey + "\x00" + h.DocID }
	seen := map[string]bool{}
	for _, h := range hits {
		if h.IsSummary {
			seen[docOf(h)] = true
		}
	}
	first := map[int64]string{} // the chunk asked for -> its document
	for _, h := range hits {
		if doc := docOf(h); !seen[doc] {
			seen[doc] = true
			first[h.ChunkID] = doc
			ids = append(ids, h.ChunkID)
			if !slices.Contains(keys, h.ProjectKey) {
				keys = append(keys, h.ProjectKey)
			}
		}
	}
	if len(ids) == 0 {
		return hits, nil
	}
	summaries := map[int64]readChunk{}
	err := s.Reads.Do(ctx, func(ctx context.Context) error {
		projects, _, err := s.projectIDsOf(ctx, keys)
		if err != nil {
			return err
		}
		viewer := domain.PrincipalFrom(ctx)
		rows, err := db.New(postgres.ReadPool(ctx, s.pool)).DocumentSummariesOf(ctx, db.DocumentSummariesOfParams{
			ProjectIds: projects, ChunkIds: ids, AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups(),
		})
		for _, r := range rows {
			summaries[r.ChunkID] = readRow(r.SummaryChunkID, r.HeadingPath, r.Text, r.Links, r.LinkTitles)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("document summaries: %w", err)
	}
	// A summary derived from the document's first paragraph says nothing the
	// page does not when that paragraph's chunk is on it.
	for id, r := range summaries {
		text := strings.Join(strings.Fields(r.text), " ")
		for _, h := range hits {
			if docOf(h) == first[id] && strings.Contains(strings.Join(strings.Fields(h.Text), " "), text) {
				delete(summaries, id)
				break
			}
		}
	}
	out := make([]*domain.Hit, 0, len(hits)+len(summaries))
	for _, h := range hits {
		if r, ok := summaries[h.ChunkID]; ok {
			summary := sameDocument(h, r)
			summary.IsSummary = true
			out = append(out, summary)
		}
		out = append(out, h)
	}
	return out, nil
}
