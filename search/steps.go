package search

import (
	"context"
	"fmt"
	"slices"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/postgres"
)

// WithSteps returns hits with the steps of each document among them whose kind
// fits (a how-question's runbooks): the one chunk of the document that holds a
// numbered list, placed just after the document's first hit, unless a hit of
// the document already holds one or the document has several. A runbook reaches a how-question's page
// through its short sections (its summary, its preamble, "When"), which share
// the title's words, while the longer section with the steps ranks below the
// per-document cap. The steps take their document's first hit's origin and
// score. Documents the caller may not see get none; hits is not modified.
func (s *Searcher) WithSteps(ctx context.Context, hits []*domain.Hit, fits func(domain.DocumentKind) bool) ([]*domain.Hit, error) {
	docOf := func(h *domain.Hit) string { return h.ProjectKey + "\x00" + h.DocID }
	first := map[string]*domain.Hit{}
	hasSteps := map[string]bool{}
	onPage := map[int64]bool{}
	for _, h := range hits {
		onPage[h.ChunkID] = true
		if !fits(h.Kind()) {
			continue
		}
		doc := docOf(h)
		if first[doc] == nil {
			first[doc] = h
		}
		hasSteps[doc] = hasSteps[doc] || holdsSteps(h.Text)
	}
	var keys []string
	var ids []int64
	for doc, h := range first {
		if !hasSteps[doc] {
			ids = append(ids, h.ChunkID)
			if !slices.Contains(keys, h.ProjectKey) {
				keys = append(keys, h.ProjectKey)
			}
		}
	}
	if len(ids) == 0 {
		return hits, nil
	}
	steps := map[int64]readChunk{} // the document's first hit -> its steps
	err := s.Reads.Do(ctx, func(ctx context.Context) error {
		projects, _, err := s.projectIDsOf(ctx, keys)
		if err != nil {
			return err
		}
		viewer := domain.PrincipalFrom(ctx)
		rows, err := db.New(postgres.ReadPool(ctx, s.pool)).DocumentChunksOf(ctx, db.DocumentChunksOfParams{
			ProjectIds: projects, ChunkIds: ids, AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups(),
		})
		lists := map[int64]int{}
		for _, r := range rows {
			if c := readRow(r.DocumentChunkID, r.HeadingPath, r.Text, r.Links, r.LinkTitles); holdsSteps(c.text) {
				lists[r.ChunkID]++
				steps[r.ChunkID] = c
			}
		}
		// Of several procedures ("abort a rollout", "roll back a release"), none is
		// the document's steps: which one applies is the ranking's to say.
		for id, n := range lists {
			if n > 1 || onPage[steps[id].id] {
				delete(steps, id)
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("document steps: %w", err)
	}
	out := make([]*domain.Hit, 0, len(hits)+len(steps))
	for _, h := range hits {
		out = append(out, h)
		if c, ok := steps[h.ChunkID]; ok && first[docOf(h)] == h {
			out = append(out, sameDocument(h, c))
		}
	}
	return out, nil
}

// readChunk is a chunk read beside the ranking's (a summary, steps), its text
// as readText makes it.
type readChunk struct {
	id          int64
	headingPath []string
	text        string
	refs        []string
}

func readRow(id int64, headingPath []string, stored string, links []byte, titles []string) readChunk {
	text, refs := readText(stored, links, titles)
	return readChunk{id: id, headingPath: headingPath, text: text, refs: refs}
}

// sameDocument is another chunk of h's document, with h's origin and score.
func sameDocument(h *domain.Hit, c readChunk) *domain.Hit {
	return &domain.Hit{
		DocID: h.DocID, ChunkID: c.id, Title: h.Title, HeadingPath: c.headingPath, References: c.refs,
		Snippet: domain.Snippet(c.text, nil), Text: c.text, Score: h.Score, Origin: h.Origin,
		CanonicalType: h.CanonicalType, Status: h.Status, Tags: h.Tags, EvidenceTier: h.EvidenceTier,
		ProjectKey: h.ProjectKey, SourcePath: h.SourcePath, Tier: h.Tier, SourceType: h.SourceType, Attended: h.Attended,
		Owners: h.Owners, LinkingEntity: h.LinkingEntity, ParentEntityScore: h.ParentEntityScore,
	}
}

// holdsSteps reports whether a chunk's text holds a numbered list.
func holdsSteps(text string) bool {
	return slices.ContainsFunc(markdown.ParseBlocks(text), func(b markdown.Block) bool {
		return b.Kind == markdown.ListBlock && b.Ordered
	})
}
