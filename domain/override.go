package domain

import (
	"math"
	"slices"
	"strings"
)

// RankingOverride sets ranking knobs for one request, by the knob's request name
// (vector_weight, ef_search, normalize_scores, …); integer knobs take whole
// numbers and switches 0 or 1. Knobs it does not name keep their configured value.
type RankingOverride map[string]float64

// KnobKind is how a ranking knob's value is spelled.
type KnobKind int

// Knob kinds.
const (
	KnobNumber KnobKind = iota
	KnobInteger
	KnobSwitch
)

type rankingKnob struct {
	kind KnobKind
	set  func(r *Ranking, v float64)
}

func number(field func(r *Ranking) *float64) rankingKnob {
	return rankingKnob{KnobNumber, func(r *Ranking, v float64) { *field(r) = v }}
}

func integer(field func(r *Ranking) *int) rankingKnob {
	return rankingKnob{KnobInteger, func(r *Ranking, v float64) { *field(r) = int(v) }}
}

// rankingKnobs are the knobs a request may override, by request name.
var rankingKnobs = map[string]rankingKnob{
	"vector_weight":          number(func(r *Ranking) *float64 { return &r.VectorWeight }),
	"keyword_weight":         number(func(r *Ranking) *float64 { return &r.KeywordWeight }),
	"heading_weight":         number(func(r *Ranking) *float64 { return &r.HeadingWeight }),
	"tag_overlap_weight":     number(func(r *Ranking) *float64 { return &r.TagOverlapWeight }),
	"preamble_weight":        number(func(r *Ranking) *float64 { return &r.PreambleWeight }),
	"recency_weight":         number(func(r *Ranking) *float64 { return &r.RecencyWeight }),
	"status_weight":          number(func(r *Ranking) *float64 { return &r.StatusWeight }),
	"mention_weight":         number(func(r *Ranking) *float64 { return &r.MentionWeight }),
	"identifier_weight":      number(func(r *Ranking) *float64 { return &r.IdentifierWeight }),
	"evidence_weight":        number(func(r *Ranking) *float64 { return &r.EvidenceWeight }),
	"priority_weight":        number(func(r *Ranking) *float64 { return &r.PriorityWeight }),
	"superseded_penalty":     number(func(r *Ranking) *float64 { return &r.SupersededPenalty }),
	"deprecated_penalty":     number(func(r *Ranking) *float64 { return &r.DeprecatedPenalty }),
	"archived_penalty":       number(func(r *Ranking) *float64 { return &r.ArchivedPenalty }),
	"auto_tier_penalty":      number(func(r *Ranking) *float64 { return &r.AutoTierPenalty }),
	"rrf_k":                  number(func(r *Ranking) *float64 { return &r.RRFK }),
	"rrf_trust_positions":    number(func(r *Ranking) *float64 { return &r.RRFTrustPositions }),
	"semantic_weight":        number(func(r *Ranking) *float64 { return &r.SemanticWeight }),
	"fts_weight":             number(func(r *Ranking) *float64 { return &r.FTSWeight }),
	"min_score":              number(func(r *Ranking) *float64 { return &r.MinScore }),
	"bm25_k1":                number(func(r *Ranking) *float64 { return &r.BM25K1 }),
	"bm25_b":                 number(func(r *Ranking) *float64 { return &r.BM25B }),
	"bm25_heading_boost":     number(func(r *Ranking) *float64 { return &r.BM25HeadingBoost }),
	"recency_half_life_days": number(func(r *Ranking) *float64 { return &r.RecencyHalfLifeDays }),
	"candidate_multiplier":   integer(func(r *Ranking) *int { return &r.CandidateMultiplier }),
	"max_chunks_per_doc":     integer(func(r *Ranking) *int { return &r.MaxChunksPerDoc }),
	"ef_search":              integer(func(r *Ranking) *int { return &r.EFSearch }),
	"bm25_term_limit":        integer(func(r *Ranking) *int { return &r.BM25TermLimit }),
	"normalize_scores":       {KnobSwitch, func(r *Ranking, v float64) { r.NormalizeScores = v != 0 }},
}

// RankingKnobKind reports how the named overridable knob is spelled; ok is false
// for a name no knob has.
func RankingKnobKind(name string) (kind KnobKind, ok bool) {
	k, ok := rankingKnobs[name]
	return k.kind, ok
}

// RankingKnobNames lists the overridable knobs, sorted.
func RankingKnobNames() []string {
	names := make([]string, 0, len(rankingKnobs))
	for name := range rankingKnobs {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// WithOverride returns r with o's knobs set, validated. An unknown knob, a
// fraction for an integer knob or a value out of range is an *InvalidError.
func (r Ranking) WithOverride(o RankingOverride) (Ranking, error) {
	names := make([]string, 0, len(o))
	for name := range o {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		k, ok := rankingKnobs[name]
		switch {
		case !ok:
			return r, invalid("ranking: unknown knob %q (known: %s)", name, strings.Join(RankingKnobNames(), ", "))
		case k.kind != KnobNumber && o[name] != math.Trunc(o[name]):
			return r, invalid("ranking: %s must be a whole number (got %g)", name, o[name])
		}
		k.set(&r, o[name])
	}
	if err := r.Validate(); err != nil {
		return r, &InvalidError{Message: "ranking: " + err.Error()}
	}
	return r, nil
}
