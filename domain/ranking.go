package domain

import "slices"

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
	// and heading path: a document about the identifier, not one mentioning it
	// (the threshold that matters: bench/results/ranking_statement.md).
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
	// BM25Delta is BM25+'s lower bound on a matched term (× its idf); 0 is plain BM25.
	BM25Delta float64
	// BM25K3 saturates a term the question repeats; 0 counts it linearly.
	BM25K3 float64
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
// under rrf; the ratio of how far apart a page's first documents are under each
// fusion (measured in bench/results/ranking_statement.md).
const DefaultRRFTrustPositions = 18

// Weight profiles. The seed weights (0.55 vector / 0.25 keyword, RRF 0.70 / 0.30)
// assume an embedding model that captures meaning. The model-free hash embedder
// captures only lexical similarity, and BM25 outranks it alone, so with it the
// keyword leg leads (chosen with `canon bench quality`; see the README).
const (
	ProfileSemanticModel  = "semantic-model"
	ProfileHashKeywordLed = "hash-keyword-led"
)

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
