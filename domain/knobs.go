package domain

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
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

// Knob is one ranking knob, defined once: its name is the request override key,
// the canon.v1.Ranking field and the ranking query's parameter; Env is the
// environment variable; the README's configuration rows are generated from it.
type Knob struct {
	Name string
	Env  string
	Kind KnobKind
	// Default applies to every profile but those ProfileDefaults names.
	Default         float64
	ProfileDefaults map[string]float64
	// Min and Max bound the value; MinExclusive makes Min itself invalid.
	Min, Max     float64
	MinExclusive bool
	// SQL is true when the ranking query takes the value as the parameter Name;
	// false for knobs the search plan uses itself (fanout, HNSW breadth).
	SQL   bool
	Help  string
	field knobField
}

// knobField reaches a knob's Ranking field; a switch reads as 0 or 1.
type knobField struct {
	get func(r *Ranking) float64
	set func(r *Ranking, v float64)
}

func number(field func(r *Ranking) *float64) knobField {
	return knobField{func(r *Ranking) float64 { return *field(r) }, func(r *Ranking, v float64) { *field(r) = v }}
}

func integer(field func(r *Ranking) *int) knobField {
	return knobField{func(r *Ranking) float64 { return float64(*field(r)) }, func(r *Ranking, v float64) { *field(r) = int(v) }}
}

func knob(k Knob, f knobField) Knob {
	k.field = f
	return k
}

// maxWeight bounds a weight or penalty: large enough for any experiment,
// small enough that sums of them stay far from overflow.
const maxWeight = 100

// knobs is the table of ranking knobs, in the README's order. Adding a knob is
// one entry here, a Ranking field, a canon.v1.Ranking field and, when SQL, the
// query's parameter.
var knobs = []Knob{
	knob(Knob{Name: "vector_weight", Env: "KB_RERANK_VECTOR_WEIGHT", Default: 0.55,
		ProfileDefaults: map[string]float64{ProfileHashKeywordLed: 0.10}, Max: maxWeight, SQL: true,
		Help: "Wvec: weight of the vec signal (weighted fusion)"},
		number(func(r *Ranking) *float64 { return &r.VectorWeight })),
	knob(Knob{Name: "keyword_weight", Env: "KB_RERANK_KEYWORD_WEIGHT", Default: 0.25,
		ProfileDefaults: map[string]float64{ProfileHashKeywordLed: 0.90}, Max: maxWeight, SQL: true,
		Help: "Wkw: weight of the kw signal"},
		number(func(r *Ranking) *float64 { return &r.KeywordWeight })),
	knob(Knob{Name: "heading_weight", Env: "KB_RERANK_HEADING_WEIGHT", Default: 0.05, Max: maxWeight, SQL: true,
		Help: "Wheading: weight of the heading signal"}, number(func(r *Ranking) *float64 { return &r.HeadingWeight })),
	knob(Knob{Name: "tag_overlap_weight", Env: "KB_RERANK_TAG_OVERLAP_WEIGHT", Default: 0.05, Max: maxWeight, SQL: true,
		Help: "Wtag: weight of the tag_overlap signal"}, number(func(r *Ranking) *float64 { return &r.TagOverlapWeight })),
	knob(Knob{Name: "preamble_weight", Env: "KB_RERANK_PREAMBLE_WEIGHT", Default: 0.05, Max: maxWeight, SQL: true,
		Help: "Wpreamble: weight of the preamble signal"}, number(func(r *Ranking) *float64 { return &r.PreambleWeight })),
	knob(Knob{Name: "recency_weight", Env: "KB_RERANK_RECENCY_WEIGHT", Default: 0.02, Max: maxWeight, SQL: true,
		Help: "Wrecency: weight of the recency signal"}, number(func(r *Ranking) *float64 { return &r.RecencyWeight })),
	knob(Knob{Name: "status_weight", Env: "KB_RERANK_STATUS_WEIGHT", Default: 0.02, Max: maxWeight, SQL: true,
		Help: "Wstatus: weight of the status_active signal"}, number(func(r *Ranking) *float64 { return &r.StatusWeight })),
	knob(Knob{Name: "mention_weight", Env: "KB_RERANK_MENTION_BOOST_WEIGHT", Default: 0.50, Max: maxWeight, SQL: true,
		Help: "Wmention: weight of the mention signal"}, number(func(r *Ranking) *float64 { return &r.MentionWeight })),
	knob(Knob{Name: "identifier_weight", Env: "KB_RERANK_IDENTIFIER_WEIGHT", Default: 0.50, Max: maxWeight, SQL: true,
		Help: "Widentifier: weight of the identifier signal"}, number(func(r *Ranking) *float64 { return &r.IdentifierWeight })),
	knob(Knob{Name: "evidence_weight", Env: "KB_RERANK_EVIDENCE_WEIGHT", Default: 0.30, Max: maxWeight, SQL: true,
		Help: "Wevidence: weight of the evidence signal (subtracted)"}, number(func(r *Ranking) *float64 { return &r.EvidenceWeight })),
	knob(Knob{Name: "normalize_scores", Env: "KB_RERANK_NORMALIZE_SCORES", Kind: KnobSwitch, Default: 1, Max: 1, SQL: true,
		Help: "min-max normalise vector scores"},
		knobField{func(r *Ranking) float64 { return boolValue(r.NormalizeScores) },
			func(r *Ranking, v float64) { r.NormalizeScores = v != 0 }}),
	knob(Knob{Name: "recency_half_life_days", Env: "KB_RECENCY_HALF_LIFE_DAYS", Default: 180, Max: 36500,
		MinExclusive: true, SQL: true, Help: "recency half-life"},
		number(func(r *Ranking) *float64 { return &r.RecencyHalfLifeDays })),
	knob(Knob{Name: "priority_weight", Env: "KB_CANONICAL_PRIORITY_WEIGHT", Default: 0.001, Max: maxWeight, SQL: true,
		Help: "Wpriority: × retrieval_priority of canonical documents"}, number(func(r *Ranking) *float64 { return &r.PriorityWeight })),
	knob(Knob{Name: "superseded_penalty", Env: "KB_CANONICAL_SUPERSEDED_PENALTY", Default: 0.40, Max: maxWeight, SQL: true,
		Help: "status penalty of superseded canonical documents"},
		number(func(r *Ranking) *float64 { return &r.SupersededPenalty })),
	knob(Knob{Name: "deprecated_penalty", Env: "KB_CANONICAL_DEPRECATED_PENALTY", Default: 0.40, Max: maxWeight, SQL: true,
		Help: "status penalty of deprecated canonical documents"},
		number(func(r *Ranking) *float64 { return &r.DeprecatedPenalty })),
	knob(Knob{Name: "archived_penalty", Env: "KB_CANONICAL_ARCHIVED_PENALTY", Default: 0.60, Max: maxWeight, SQL: true,
		Help: "status penalty of archived canonical documents"},
		number(func(r *Ranking) *float64 { return &r.ArchivedPenalty })),
	knob(Knob{Name: "auto_tier_penalty", Env: "KB_CANONICAL_AUTO_TIER_PENALTY", Default: 0.02, Max: maxWeight, SQL: true,
		Help: "penalty of canonical documents with `tier: auto`"},
		number(func(r *Ranking) *float64 { return &r.AutoTierPenalty })),
	knob(Knob{Name: "semantic_weight", Env: "KB_HYBRID_SEMANTIC_WEIGHT", Default: 0.70,
		ProfileDefaults: map[string]float64{ProfileHashKeywordLed: 0.20}, Max: maxWeight, SQL: true,
		Help: "RRF weight of the vector leg"}, number(func(r *Ranking) *float64 { return &r.SemanticWeight })),
	knob(Knob{Name: "fts_weight", Env: "KB_HYBRID_FTS_WEIGHT", Default: 0.30,
		ProfileDefaults: map[string]float64{ProfileHashKeywordLed: 0.80}, Max: maxWeight, SQL: true,
		Help: "RRF weight of the keyword leg"}, number(func(r *Ranking) *float64 { return &r.FTSWeight })),
	knob(Knob{Name: "rrf_k", Env: "KB_RRF_K", Default: 60, Max: 10000, MinExclusive: true, SQL: true,
		Help: "RRF k"}, number(func(r *Ranking) *float64 { return &r.RRFK })),
	knob(Knob{Name: "rrf_trust_positions", Env: "KB_RRF_TRUST_POSITIONS", Default: DefaultRRFTrustPositions, Max: 1000, SQL: true,
		Help: "under rrf, gaps between ranks 1 and 2 of every leg that one unit of the trust adjustment is worth"},
		number(func(r *Ranking) *float64 { return &r.RRFTrustPositions })),
	knob(Knob{Name: "candidate_multiplier", Env: "KB_CANDIDATE_MULTIPLIER", Kind: KnobInteger, Default: 3, Min: 1, Max: 20,
		Help: "fanout = multiplier × limit per leg (at least the default limit's)"},
		integer(func(r *Ranking) *int { return &r.CandidateMultiplier })),
	knob(Knob{Name: "max_chunks_per_doc", Env: "KB_MAX_CHUNKS_PER_DOC", Kind: KnobInteger, Default: 3, Min: 1, Max: 100, SQL: true,
		Help: "per-document cap"}, integer(func(r *Ranking) *int { return &r.MaxChunksPerDoc })),
	knob(Knob{Name: "min_score", Env: "KB_MIN_SCORE", Default: 0, Min: -maxWeight, Max: maxWeight, SQL: true,
		Help: "candidates below are dropped"}, number(func(r *Ranking) *float64 { return &r.MinScore })),
	knob(Knob{Name: "ef_search", Env: "KB_HNSW_EF_SEARCH", Kind: KnobInteger, Default: 64, Min: 1, Max: MaxEFSearch,
		Help: fmt.Sprintf("HNSW breadth (raised to the fanout, capped at %d)", MaxEFSearch)},
		integer(func(r *Ranking) *int { return &r.EFSearch })),
	knob(Knob{Name: "bm25_k1", Env: "KB_BM25_K1", Default: 1.2, Max: 10, SQL: true,
		Help: "BM25 term-frequency saturation"}, number(func(r *Ranking) *float64 { return &r.BM25K1 })),
	knob(Knob{Name: "bm25_b", Env: "KB_BM25_B", Default: 0.75, Max: 1, SQL: true,
		Help: "BM25 length normalisation"}, number(func(r *Ranking) *float64 { return &r.BM25B })),
	knob(Knob{Name: "bm25_heading_boost", Env: "KB_BM25_HEADING_BOOST", Default: 2.0, Max: maxWeight, SQL: true,
		Help: "weight of title/heading occurrences in BM25"},
		number(func(r *Ranking) *float64 { return &r.BM25HeadingBoost })),
	knob(Knob{Name: "bm25_delta", Env: "KB_BM25_DELTA", Default: 0, Max: maxWeight, SQL: true,
		Help: "BM25+ lower bound: a matched term is worth at least idf × delta (0: plain BM25)"},
		number(func(r *Ranking) *float64 { return &r.BM25Delta })),
	knob(Knob{Name: "bm25_k3", Env: "KB_BM25_K3", Default: 0, Max: 10000, SQL: true,
		Help: "saturation of a term the question repeats: it counts (k3+1)·qtf/(k3+qtf) times (0: qtf times)"},
		number(func(r *Ranking) *float64 { return &r.BM25K3 })),
	knob(Knob{Name: "bm25_term_limit", Env: "KB_BM25_TERM_LIMIT", Kind: KnobInteger, Default: DefaultBM25TermLimit, Max: MaxBM25TermLimit,
		Help: "keyword leg candidates: each term's N highest-impact postings (at least the fanout); `0` = exact BM25 over every posting (filtered requests always run exact)"},
		integer(func(r *Ranking) *int { return &r.BM25TermLimit })),
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Knobs returns a copy of the table of ranking knobs, in the README's order.
func Knobs() []Knob {
	out := slices.Clone(knobs)
	for i := range out {
		out[i].ProfileDefaults = maps.Clone(out[i].ProfileDefaults)
	}
	return out
}

// knobIndex finds a knob by request name; -1 when none has it.
func knobIndex(name string) int {
	return slices.IndexFunc(knobs, func(k Knob) bool { return k.Name == name })
}

// DefaultFor is the knob's default under a weight profile.
func (k Knob) DefaultFor(profile string) float64 {
	if v, ok := k.ProfileDefaults[profile]; ok {
		return v
	}
	return k.Default
}

// Get reads the knob from r (a switch as 0 or 1).
func (k Knob) Get(r Ranking) float64 { return k.field.get(&r) }

// Set writes v, already checked, to the knob's field of r.
func (k Knob) Set(r *Ranking, v float64) { k.field.set(r, v) }

// Format spells a value of the knob as its environment variable takes it.
func (k Knob) Format(v float64) string {
	switch k.Kind {
	case KnobSwitch:
		return strconv.FormatBool(v != 0)
	case KnobInteger:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Parse reads the knob's environment spelling (a number, a whole number, or
// true/false) and checks its range.
func (k Knob) Parse(s string) (float64, error) {
	s = strings.TrimSpace(s)
	var v float64
	switch k.Kind {
	case KnobSwitch:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return 0, fmt.Errorf("%s must be true or false (got %q)", k.Name, s)
		}
		v = boolValue(b)
	case KnobInteger:
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s must be a whole number (got %q)", k.Name, s)
		}
		v = float64(i)
	default:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !math.IsInf(f, 0) {
			return 0, fmt.Errorf("%s must be a number (got %q)", k.Name, s)
		}
		v = f
	}
	return v, k.Check(v)
}

// Range describes the accepted values in words, e.g. "between 0 and 100".
func (k Knob) Range() string {
	if k.Kind == KnobSwitch {
		return "0 or 1"
	}
	if k.MinExclusive {
		return fmt.Sprintf("greater than %g and at most %g", k.Min, k.Max)
	}
	return fmt.Sprintf("between %g and %g", k.Min, k.Max)
}

// Check reports a value outside the knob's range (NaN, ±Inf and fractions of
// integer knobs included), naming the knob and its range.
func (k Knob) Check(v float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("%s must be a finite number %s (got %g)", k.Name, k.Range(), v)
	case k.Kind != KnobNumber && v != math.Trunc(v):
		return fmt.Errorf("%s must be a whole number %s (got %g)", k.Name, k.Range(), v)
	case k.Min == 0 && v < 0 && !k.MinExclusive:
		return fmt.Errorf("%s must not be negative (got %g; range %s)", k.Name, v, k.Range())
	case v < k.Min || (k.MinExclusive && v == k.Min) || v > k.Max:
		return fmt.Errorf("%s must be %s (got %g)", k.Name, k.Range(), v)
	}
	return nil
}

// RankingKnobKind reports how the named overridable knob is spelled; ok is false
// for a name no knob has.
func RankingKnobKind(name string) (kind KnobKind, ok bool) {
	i := knobIndex(name)
	if i < 0 {
		return 0, false
	}
	return knobs[i].Kind, true
}

// RankingKnobNames lists the overridable knobs, sorted.
func RankingKnobNames() []string {
	names := make([]string, len(knobs))
	for i, k := range knobs {
		names[i] = k.Name
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
		i := knobIndex(name)
		if i < 0 {
			return r, invalid("ranking: unknown knob %q (known: %s)", name, strings.Join(RankingKnobNames(), ", "))
		}
		if err := knobs[i].Check(o[name]); err != nil {
			return r, &InvalidError{Message: "ranking: " + err.Error()}
		}
		knobs[i].Set(&r, o[name])
	}
	if err := r.Validate(); err != nil {
		return r, &InvalidError{Message: "ranking: " + err.Error()}
	}
	return r, nil
}

// DefaultRanking returns the defaults of a weight profile.
func DefaultRanking(profile string) Ranking {
	var r Ranking
	for _, k := range knobs {
		k.Set(&r, k.DefaultFor(profile))
	}
	return r
}

// Validate reports the first knob outside its range, in the order of their
// names so the error is stable, in words a person can act on.
func (r Ranking) Validate() error {
	for _, k := range knobsByName {
		if err := k.Check(k.Get(r)); err != nil {
			return err
		}
	}
	return nil
}

// knobsByName is the table sorted by name, once: every request with overrides validates.
var knobsByName = func() []Knob {
	sorted := slices.Clone(knobs)
	slices.SortFunc(sorted, func(a, b Knob) int { return strings.Compare(a.Name, b.Name) })
	return sorted
}()
