package domain

import (
	"fmt"
	"math"
	"slices"
)

// Fusion methods, as requests name them and as meta reports them.
const (
	FusionWeighted     = "weighted"
	FusionRRF          = "rrf"
	FusionSemanticOnly = "semantic_only"
	FusionKeywordOnly  = "keyword_only"
)

// fusions lists the accepted values of a request's fusion option.
var fusions = []string{FusionWeighted, FusionRRF, FusionSemanticOnly, FusionKeywordOnly}

// Fusions lists the accepted values of a request's fusion option.
func Fusions() []string { return slices.Clone(fusions) }

// FusionMethodName is the name meta.search_strategy.fusion_method reports.
func FusionMethodName(fusion string) string {
	if fusion == FusionWeighted {
		return "rerank_weighted_sum"
	}
	return fusion
}

// Ranking holds every weight, penalty and threshold of the ranking query. Nothing
// numeric is buried in the SQL: each field is a named query parameter.
type Ranking struct {
	// Weighted fusion: base = Vector·vec + Keyword·kw + Heading·heading.
	VectorWeight  float64
	KeywordWeight float64
	HeadingWeight float64
	// Additive signals, each in [0,1].
	TagOverlapWeight float64
	PreambleWeight   float64
	RecencyWeight    float64
	StatusWeight     float64
	MentionWeight    float64
	// IdentifierWeight × the share of the question's identifiers (E5032, v2.3.1,
	// KB_RRF_K: letters mixed with digits, or an underscore) in the chunk's title
	// and heading path: a document about the identifier, not one mentioning it.
	// Default 0.50, as for naming a document with @slug; "error E5032" needs more
	// than 0.31 to put the runbook titled E5032 above the module page that says
	// "Error code E5032" (0.4 to 1.0 score the same on the handbook scenarios).
	IdentifierWeight float64
	// Evidence: − EvidenceWeight·(1 − trust of the document's evidence tier).
	EvidenceWeight float64
	// Canonical adjustment: + Priority·retrieval_priority − status penalty − tier penalty.
	PriorityWeight    float64
	SupersededPenalty float64
	DeprecatedPenalty float64
	ArchivedPenalty   float64
	AutoTierPenalty   float64
	// Reciprocal rank fusion: Σ weight/(K + rank).
	RRFK           float64
	SemanticWeight float64
	FTSWeight      float64
	// RRFTrustPositions maps the weighted-space adjustment (mention, priority,
	// penalties, evidence) into RRF: one unit of it is worth this many gaps between
	// rank 1 and rank 2 of every leg, (SemanticWeight + FTSWeight)/((K+1)(K+2)).
	RRFTrustPositions float64
	// Min-max normalise vector similarities across the candidates (weighted fusion).
	NormalizeScores bool
	// Candidates whose final score is below MinScore are dropped.
	MinScore float64
	// Each leg over-retrieves CandidateMultiplier × limit candidates.
	CandidateMultiplier int
	MaxChunksPerDoc     int
	// HNSW search breadth; raised to the fanout when smaller, capped at MaxEFSearch.
	EFSearch int
	// BM25 parameters; HeadingBoost multiplies term occurrences in title/headings.
	BM25K1           float64
	BM25B            float64
	BM25HeadingBoost float64
	// BM25TermLimit 0 scores every posting of every query term (exact BM25). N > 0
	// takes each term's N highest-impact postings as the keyword leg's candidates
	// and rescores the candidates exactly: faster on large corpora, and only which
	// chunks are considered is approximate (measured in the README). A request
	// reads at least its fanout (limit × candidate multiplier) per term.
	BM25TermLimit int
	// Recency decays exponentially with this half-life.
	RecencyHalfLifeDays float64
}

// DefaultBM25TermLimit is the approximate keyword leg's postings per query term
// (see Ranking.BM25TermLimit); MaxBM25TermLimit bounds a request's.
const (
	DefaultBM25TermLimit = 64
	MaxBM25TermLimit     = 1_000_000
)

// MaxEFSearch caps hnsw.ef_search per request: beyond it latency grows for no recall.
const MaxEFSearch = 200

// DefaultRRFTrustPositions is the default of KB_RRF_TRUST_POSITIONS: how many
// gaps between rank 1 and rank 2 of every leg one unit of weighted score is worth
// under rrf. The trust gradient reorders documents at the head of a page, so it
// was measured there, on the 47 questions of bench/scenarios/handbook.yaml (hash
// embedder, profile hash-keyword-led, each page's adjustment taken out): the
// first four documents of a weighted page are 0.171 apart on average, those of an
// RRF page 0.00079 apart. One unit of weighted score is then worth 0.0046 of RRF
// score, 17.5 gaps of 1/61 − 1/62; rounded to 18. Auto tier (0.02) becomes a
// third of a gap, a tie-break; blog or search_hint evidence (0.225) four gaps;
// superseded and deprecated (0.40) seven; archived (0.60) eleven.
const DefaultRRFTrustPositions = 18

// Weight profiles. The seed weights (0.55 vector / 0.25 keyword, RRF 0.70 / 0.30)
// assume an embedding model that captures meaning. The model-free hash embedder
// captures only lexical similarity, and BM25 outranks it alone, so with it the
// keyword leg leads (chosen with `canon bench quality`; see the README).
const (
	ProfileSemanticModel  = "semantic-model"
	ProfileHashKeywordLed = "hash-keyword-led"
)

// DefaultRanking returns the defaults of a weight profile.
func DefaultRanking(profile string) Ranking {
	r := Ranking{
		VectorWeight:        0.55,
		KeywordWeight:       0.25,
		HeadingWeight:       0.05,
		TagOverlapWeight:    0.05,
		PreambleWeight:      0.05,
		RecencyWeight:       0.02,
		StatusWeight:        0.02,
		MentionWeight:       0.50,
		IdentifierWeight:    0.50,
		EvidenceWeight:      0.30,
		PriorityWeight:      0.001,
		SupersededPenalty:   0.40,
		DeprecatedPenalty:   0.40,
		ArchivedPenalty:     0.60,
		AutoTierPenalty:     0.02,
		RRFK:                60,
		RRFTrustPositions:   DefaultRRFTrustPositions,
		SemanticWeight:      0.70,
		FTSWeight:           0.30,
		NormalizeScores:     true,
		MinScore:            0,
		CandidateMultiplier: 3,
		MaxChunksPerDoc:     3,
		EFSearch:            64,
		BM25K1:              1.2,
		BM25B:               0.75,
		BM25HeadingBoost:    2.0,
		BM25TermLimit:       DefaultBM25TermLimit,
		RecencyHalfLifeDays: 180,
	}
	if profile == ProfileHashKeywordLed {
		r.VectorWeight, r.KeywordWeight = 0.10, 0.90
		r.SemanticWeight, r.FTSWeight = 0.20, 0.80
	}
	return r
}

// RRFAdjustmentScale is what one unit of the weighted-space adjustment adds to an
// RRF score: RRFTrustPositions gaps between rank 1 and rank 2 of every leg,
// RRFTrustPositions × (SemanticWeight + FTSWeight) / ((K+1)(K+2)). search.sql
// computes the same expression.
func (r Ranking) RRFAdjustmentScale() float64 {
	return r.RRFTrustPositions * (r.SemanticWeight + r.FTSWeight) / ((r.RRFK + 1) * (r.RRFK + 2))
}

// ProfileFor names the default weight profile of an embedder kind.
func ProfileFor(embedderKind string) string {
	if embedderKind == "hash" {
		return ProfileHashKeywordLed
	}
	return ProfileSemanticModel
}

// MaxRankingValue bounds every weight, penalty and threshold: far beyond any useful
// setting, and small enough that sums and products in the ranking SQL stay finite.
const MaxRankingValue = 1e6

// Validate reports the first parameter outside its domain, in words a person can act on.
func (r Ranking) Validate() error {
	// In the order of their names, so the first error reported is stable. A
	// slice, not a map to sort: every request with overrides validates.
	finite := []struct {
		name  string
		value float64
	}{
		{"archived_penalty", r.ArchivedPenalty}, {"auto_tier_penalty", r.AutoTierPenalty},
		{"bm25_heading_boost", r.BM25HeadingBoost}, {"deprecated_penalty", r.DeprecatedPenalty},
		{"evidence_weight", r.EvidenceWeight}, {"fts_weight", r.FTSWeight}, {"heading_weight", r.HeadingWeight},
		{"identifier_weight", r.IdentifierWeight}, {"keyword_weight", r.KeywordWeight},
		{"mention_weight", r.MentionWeight}, {"min_score", r.MinScore}, {"preamble_weight", r.PreambleWeight},
		{"priority_weight", r.PriorityWeight}, {"recency_weight", r.RecencyWeight},
		{"rrf_trust_positions", r.RRFTrustPositions}, {"semantic_weight", r.SemanticWeight},
		{"status_weight", r.StatusWeight}, {"superseded_penalty", r.SupersededPenalty},
		{"tag_overlap_weight", r.TagOverlapWeight}, {"vector_weight", r.VectorWeight},
	}
	for _, f := range finite {
		if math.IsNaN(f.value) || math.IsInf(f.value, 0) || math.Abs(f.value) > MaxRankingValue {
			return fmt.Errorf("%s must be a finite number between -%g and %g (got %g)", f.name, MaxRankingValue, MaxRankingValue, f.value)
		}
		if f.value < 0 && f.name != "min_score" {
			return fmt.Errorf("%s must not be negative (got %g)", f.name, f.value)
		}
	}
	switch {
	case !(r.RRFK > 0) || r.RRFK > MaxRankingValue:
		return fmt.Errorf("rrf_k must be positive (got %g)", r.RRFK)
	case r.CandidateMultiplier < 1 || r.CandidateMultiplier > 20:
		return fmt.Errorf("candidate_multiplier must be between 1 and 20 (got %d)", r.CandidateMultiplier)
	case r.MaxChunksPerDoc < 1 || r.MaxChunksPerDoc > 100:
		return fmt.Errorf("max_chunks_per_doc must be between 1 and 100 (got %d)", r.MaxChunksPerDoc)
	case r.EFSearch < 1 || r.EFSearch > MaxEFSearch:
		return fmt.Errorf("ef_search must be between 1 and %d (got %d)", MaxEFSearch, r.EFSearch)
	case !(r.BM25K1 >= 0) || r.BM25K1 > 10:
		return fmt.Errorf("bm25_k1 must be between 0 and 10 (got %g)", r.BM25K1)
	case !(r.BM25B >= 0) || r.BM25B > 1:
		return fmt.Errorf("bm25_b must be between 0 and 1 (got %g)", r.BM25B)
	case r.BM25TermLimit < 0 || r.BM25TermLimit > MaxBM25TermLimit:
		return fmt.Errorf("bm25_term_limit must be between 0 (exact) and %d (got %d)", MaxBM25TermLimit, r.BM25TermLimit)
	case !(r.RecencyHalfLifeDays > 0) || r.RecencyHalfLifeDays > MaxRankingValue:
		return fmt.Errorf("recency_half_life_days must be positive (got %g)", r.RecencyHalfLifeDays)
	}
	return nil
}

// evidenceTrust is how far each evidence tier is trusted, in [0,1]. A document
// loses EvidenceWeight × (1 − trust); one that names no tier loses nothing.
var evidenceTrust = map[string]float64{
	"guideline":     1.0,
	"official":      1.0,
	"peer_reviewed": 1.0,
	"preprint":      0.75,
	"news":          0.5,
	"blog":          0.25,
	"search_hint":   0.25,
	"unverified":    0.0,
}

// EvidenceTrust is how far a tier is trusted, in [0,1]; 0 for a tier canon does not know.
func EvidenceTrust(tier string) float64 { return evidenceTrust[tier] }

// EvidenceTrustParams returns the tiers and their trust as parallel arrays, in
// EvidenceTiers order, for the ranking query.
func EvidenceTrustParams() ([]string, []float64) {
	trust := make([]float64, len(evidenceTiers))
	for i, t := range evidenceTiers {
		trust[i] = evidenceTrust[t]
	}
	return slices.Clone(evidenceTiers), trust
}
