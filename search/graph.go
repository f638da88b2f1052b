package search

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/pgvector/pgvector-go"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
)

// GraphConfig configures the graph step that follows ranking: expansion of the
// primary page one hop through the knowledge graph, and injection of rejected
// approaches. A request's options.graph_expansion and options.rejected_injection
// override the two switches.
type GraphConfig struct {
	// Expansion walks one hop of kb_edges, both directions, from the canonical
	// documents on the primary page (KB_GRAPH_EXPANSION_ENABLED).
	Expansion bool
	// EdgeTypes is the allow-list of edge types the walk follows
	// (KB_GRAPH_EXPANSION_EDGE_TYPES).
	EdgeTypes []string
	// MaxNodes caps the expanded section (KB_GRAPH_EXPANSION_MAX_NODES).
	MaxNodes int
	// MaxPerSeed caps the neighbours one seed brings, its strongest edges first
	// (KB_GRAPH_EXPANSION_MAX_PER_SEED); 0 leaves only MaxNodes.
	MaxPerSeed int
	// HubTypes are node types that link to everything (a project index): they are
	// never seeds and never expanded to (KB_GRAPH_EXPANSION_HUB_TYPES).
	HubTypes []string
	// SeedGate is the refusal gate's evidence test (KB_REFUSAL_MIN_SIMILARITY,
	// KB_REFUSAL_MIN_KEYWORD_COVERAGE): only primary hits that pass it are seeds,
	// and a page without one gets neither expansion nor rejected approaches. The
	// zero Gate lets every hit through.
	SeedGate domain.Gate
	// IncludeArchived lets archived neighbours and rejected approaches in; they are
	// skipped by default. A request whose statuses filter names "archived" gets
	// them too.
	IncludeArchived bool
	// RejectedInjection adds rejected approaches close to the question or linked to
	// a decision on the page (KB_REJECTED_INJECTION_ENABLED).
	RejectedInjection bool
	// RejectedMaxDocs caps the rejected approaches found by similarity; those
	// linked to a primary decision come on top (KB_REJECTED_INJECTION_MAX_DOCS).
	RejectedMaxDocs int
	// RejectedMinSimilarity is the cosine a rejected approach's summary needs to be
	// injected by similarity (KB_REJECTED_MIN_SIMILARITY; calibrated for the hash
	// embedder, see the README).
	RejectedMinSimilarity float64
}

// DefaultGraphConfig is the configuration canon ships (the defaults of the KB_*
// variables above).
func DefaultGraphConfig() GraphConfig {
	return GraphConfig{
		Expansion: true,
		EdgeTypes: []string{"depends_on", "implements", "decision_for", "related_to", "supersedes",
			"invalidated_by", "documented_by"},
		MaxNodes:              20,
		MaxPerSeed:            DefaultGraphMaxPerSeed,
		HubTypes:              []string{"project-index"},
		SeedGate:              domain.DefaultGate(),
		RejectedInjection:     true,
		RejectedMaxDocs:       3,
		RejectedMinSimilarity: DefaultRejectedMinSimilarity,
	}
}

// DefaultGraphMaxPerSeed is the default of KB_GRAPH_EXPANSION_MAX_PER_SEED.
const DefaultGraphMaxPerSeed = 5

// DefaultRejectedMinSimilarity is the default of KB_REJECTED_MIN_SIMILARITY,
// calibrated on the example handbook with the hash embedder: questions about a
// rejected option scored 0.22–0.53 against its summary (median 0.37), unrelated
// questions at most 0.24; 0.30 keeps 16 of 20 on-topic questions and no
// unrelated one.
const DefaultRejectedMinSimilarity = 0.30

// graph runs the graph step on a ranked page and fills the expanded and rejected
// sections and their meta. With both features off, or no relevant hit on the page
// (cfg.SeedGate), it sends nothing to the database; a project without canonical
// documents gets empty sections, so its result is exactly the plain hybrid one.
func (s *Searcher) graph(ctx context.Context, req *domain.SearchRequest, p *plan, rows []db.SearchRankRow,
	res *domain.SearchResult) error {
	params, expansion, rejected, ok, err := s.graphParams(ctx, req, p, rows)
	strategy := &res.Meta.SearchStrategy
	strategy.GraphExpansionEnabled, strategy.RejectedInjectionEnabled = expansion, rejected
	if err != nil || !ok {
		return err
	}
	start := time.Now()
	// The rejected approaches' index scan needs the ranking's HNSW settings.
	out, err := db.New(s.session(ctx, p)).GraphSearch(ctx, params)
	s.cfg.Stages.Observe(ctx, domain.StageGraph, start)
	if err != nil {
		return fmt.Errorf("graph step: %w", err)
	}
	terms := res.Meta.QueryTerms
	for _, r := range out {
		text, refs := readText(r.Text, r.Links, r.LinkTitles)
		h := &domain.Hit{
			DocID: r.Slug, ChunkID: r.ChunkID, Title: r.Title, HeadingPath: r.HeadingPath, References: refs,
			Snippet: domain.Snippet(text, terms), Text: text, Origin: r.Origin,
			CanonicalType: deref(r.CanonicalType), Status: deref(r.Status), Tags: r.Tags,
			EvidenceTier: deref(r.EvidenceTier), ProjectKey: r.ProjectKey, SourcePath: r.SourcePath,
			VectorSimilarity: finite(r.Similarity), Tier: r.Tier, IsSummary: r.IsSummary,
			SourceType: r.SourceType, Attended: r.Attended, Owners: r.OwnerNames,
		}
		if r.EdgeType != "" {
			h.Edge = &domain.Edge{EdgeType: r.EdgeType, Weight: r.EdgeWeight, Direction: r.EdgeDirection, FromDocID: r.EdgeFromSlug}
		}
		switch r.Origin {
		case domain.OriginGraphExpansion:
			// The edge weight is what ordered the section.
			h.Score = r.EdgeWeight
			res.Expanded = append(res.Expanded, h)
		case domain.OriginRejectedApproach:
			h.Similarity = finite(r.Similarity)
			h.Score = h.Similarity
			res.Rejected = append(res.Rejected, h)
		}
	}
	return nil
}

// graphParams decides whether the graph step runs for a ranked page (ok) and
// binds its statement: the features as the request and configuration set them,
// seeded by the documents of the page's relevant hits only (without any, the
// page is a guess and the step is skipped).
func (s *Searcher) graphParams(ctx context.Context, req *domain.SearchRequest, p *plan, rows []db.SearchRankRow) (
	params db.GraphSearchParams, expansion, rejected, ok bool, err error) {
	cfg := s.cfg.Graph
	opts := req.Options
	expansion, rejected = cfg.Expansion, cfg.RejectedInjection
	if opts.GraphExpansion != nil {
		expansion = *opts.GraphExpansion
	}
	if opts.RejectedInjection != nil {
		rejected = *opts.RejectedInjection
	}
	var page, relevant []int64
	for _, r := range rows {
		if int(r.Position) > p.limit {
			continue
		}
		page = append(page, r.DocumentID)
		if cfg.SeedGate.Relevant(domain.Evidence{VectorSimilarity: r.VectorSimilarity, KeywordCoverage: r.KeywordCoverage}) {
			relevant = append(relevant, r.DocumentID)
		}
	}
	if (!expansion && !rejected) || len(relevant) == 0 {
		return params, expansion, rejected, false, nil
	}
	perSeed := cfg.MaxPerSeed
	if perSeed <= 0 {
		perSeed = cfg.MaxNodes
	}

	qvec := p.params.QueryEmbedding
	if !p.params.SemanticEnabled && rejected {
		// keyword_only ranked without a vector; similarity needs one.
		v, err := s.embedder.EmbedQuery(ctx, p.query)
		if err != nil {
			return params, expansion, rejected, false, fmt.Errorf("embed query: %w", err)
		}
		vec := pgvector.NewVector(v)
		qvec = &vec
	}
	f, viewer := p.filters, domain.PrincipalFrom(ctx)
	params = db.GraphSearchParams{
		RelevantDocumentIds: relevant, PrimaryDocumentIds: page, ProjectIds: p.projectIDs, QueryEmbedding: qvec,
		HubTypes: nonNil(cfg.HubTypes), ExpansionEnabled: expansion, EdgeTypes: nonNil(cfg.EdgeTypes),
		MaxNodes: int32(max(cfg.MaxNodes, 0)), MaxPerSeed: int32(max(perSeed, 0)),
		RejectedEnabled: rejected, RejectedMaxDocs: int32(max(cfg.RejectedMaxDocs, 0)),
		RejectedMinSimilarity: cfg.RejectedMinSimilarity,
		IncludeArchived:       cfg.IncludeArchived || slices.Contains(f.Statuses, "archived"),
		Tags:                  nonNil(f.Tags), SourceTypes: nonNil(f.SourceTypes), CanonicalTypes: nonNil(f.CanonicalTypes),
		Statuses: nonNil(f.Statuses), EvidenceTiers: nonNil(f.EvidenceTiers), DateFrom: f.DateFrom, DateTo: f.DateTo,
		IncludeSuperseded: f.IncludeSuperseded, DocIdsFilter: f.DocIDsFilter, DocIds: nonNil(f.DocIDs),
		AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups(),
	}
	return params, expansion, rejected, true, nil
}
