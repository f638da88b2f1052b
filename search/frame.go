package search

import (
	"context"
	"fmt"
	"strings"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/postgres"
)

// framed raises the keyword coverage of res's hits of the kind the question's
// verbs ask for (domain.QuestionFrame: "decide" in "what did we decide about
// secrets?") to SearchEvidence's, which counts the verbs' terms as held by such
// a chunk: ADR-012 on secrets need not say "decide" to answer it. The ranking
// statement counts only the words a chunk holds, and ranking does not read
// coverage; the refusal gate and the graph step's seeds do. One statement, only
// for a question with such verbs and hits of that kind that miss a term.
func (s *Searcher) framed(ctx context.Context, p *plan, res *domain.SearchResult) error {
	frame := domain.QuestionFrame(p.params.Query)
	if len(frame.Verbs) == 0 {
		return nil
	}
	ids, hits := HitsByChunk(res, func(h *domain.Hit) bool { return h.KeywordCoverage < 1 && frame.Fits(h.Kind()) })
	if len(ids) == 0 {
		return nil
	}
	viewer := domain.PrincipalFrom(ctx)
	// Stripped is the question itself: no term counts as covered by a link.
	rows, err := db.New(postgres.ReadPool(ctx, s.pool)).SearchEvidence(ctx, db.SearchEvidenceParams{
		ProjectIds: p.projectIDs, ChunkIds: ids, FramedChunkIds: ids, Query: p.params.Query, Stripped: p.params.Query,
		Frame: strings.Join(frame.Verbs, " "), Languages: p.params.Languages, Configs: p.params.Configs,
		AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups(),
	})
	if err != nil {
		return fmt.Errorf("framed coverage: %w", err)
	}
	for _, r := range rows {
		for _, h := range hits[r.ChunkID] {
			h.KeywordCoverage = max(h.KeywordCoverage, r.KeywordCoverage)
		}
	}
	return nil
}
