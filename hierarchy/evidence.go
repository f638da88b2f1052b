package hierarchy

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/search"
)

// evidence sets the vector_similarity and keyword_coverage of res's primary and
// runner-up hits against asked's question, in one statement
// (SearchEvidence in db/queries/entity_search.sql). Pass 2 ranks with a Requery
// copy; the refusal gate and the API promise the evidence of the question that
// was asked. The question's terms that are not in stripped (the question without
// the chosen entities' names) count as covered: every hit is linked to one. So
// do its frame verbs' in a hit of the kind they ask for (domain.QuestionFrame).
func (h *Searcher) evidence(ctx context.Context, asked *search.Prepared, res *domain.SearchResult, stripped string) error {
	frame := domain.QuestionFrame(asked.Query())
	ids, hits := search.HitsByChunk(res, nil)
	framed, _ := search.HitsByChunk(res, func(h *domain.Hit) bool { return frame.Fits(h.Kind()) })
	if len(ids) == 0 {
		return nil
	}
	// QueryEmbedding is nil when the vector leg sat the question out.
	embedding := asked.QueryEmbedding()
	viewer := domain.PrincipalFrom(ctx)
	languages, configs := asked.QueryConfigs()
	rows, err := db.New(Session(postgres.ReadPool(ctx, h.pool))).SearchEvidence(ctx, db.SearchEvidenceParams{
		SemanticEnabled: embedding != nil, QueryEmbedding: embedding,
		ProjectIds: asked.ProjectIDs(), ChunkIds: ids, Query: asked.Query(), Stripped: stripped,
		Frame: strings.Join(frame.Verbs, " "), FramedChunkIds: framed,
		Languages: languages, Configs: configs,
		AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups(),
	})
	if err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	for _, r := range rows {
		for _, hit := range hits[r.ChunkID] {
			hit.VectorSimilarity, hit.KeywordCoverage = finite(r.VectorSimilarity), finite(r.KeywordCoverage)
		}
	}
	return nil
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
