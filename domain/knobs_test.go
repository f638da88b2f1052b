package domain

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestKnobTable checks every knob is complete: a unique name and variable, help,
// a range holding its defaults under every profile, and a field it reaches.
func TestKnobTable(t *testing.T) {
	t.Parallel()
	names, envs := map[string]bool{}, map[string]bool{}
	for _, k := range Knobs() {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			if k.Name == "" || k.Env == "" || k.Help == "" || !strings.HasPrefix(k.Env, "KB_") {
				t.Errorf("incomplete knob: %+v", k)
			}
			if !(k.Min < k.Max) {
				t.Errorf("empty range %s", k.Range())
			}
			for _, p := range []string{ProfileSemanticModel, ProfileHashKeywordLed} {
				d := k.DefaultFor(p)
				if err := k.Check(d); err != nil {
					t.Errorf("default under %s: %v", p, err)
				}
				r := DefaultRanking(p)
				if k.Get(r) != d {
					t.Errorf("DefaultRanking(%s) has %g, the table %g", p, k.Get(r), d)
				}
				// The accessor reaches a field of its own: setting it changes only it.
				other := k.Max
				if other == d {
					other = k.Min
				}
				k.Set(&r, other)
				for _, o := range Knobs() {
					if want := o.DefaultFor(p); o.Name != k.Name && o.Get(r) != want {
						t.Errorf("setting %s changed %s", k.Name, o.Name)
					}
				}
			}
		})
		if names[k.Name] || envs[k.Env] {
			t.Errorf("%s / %s defined twice", k.Name, k.Env)
		}
		names[k.Name], envs[k.Env] = true, true
	}
	// Every Ranking field is a knob.
	if n := reflect.TypeFor[Ranking]().NumField(); n != len(Knobs()) {
		t.Errorf("Ranking has %d fields, the table %d knobs", n, len(Knobs()))
	}
}

// TestDefaultRankingUnchanged pins the profiles' defaults as they were before the
// table existed: rankings and golden files depend on them.
func TestDefaultRankingUnchanged(t *testing.T) {
	t.Parallel()
	semantic := Ranking{
		VectorWeight: 0.55, KeywordWeight: 0.25, HeadingWeight: 0.05, TagOverlapWeight: 0.05, PreambleWeight: 0.05,
		RecencyWeight: 0.02, StatusWeight: 0.02, MentionWeight: 0.50, IdentifierWeight: 0.50, EvidenceWeight: 0.30,
		PriorityWeight: 0.001, SupersededPenalty: 0.40, DeprecatedPenalty: 0.40, ArchivedPenalty: 0.60,
		AutoTierPenalty: 0.02, RRFK: 60, RRFTrustPositions: 18, SemanticWeight: 0.70, FTSWeight: 0.30,
		NormalizeScores: true, MinScore: 0, CandidateMultiplier: 3, MaxChunksPerDoc: 3, EFSearch: 64,
		BM25K1: 1.2, BM25B: 0.75, BM25HeadingBoost: 2.0, BM25TermLimit: 64, RecencyHalfLifeDays: 180,
	}
	hash := semantic
	hash.VectorWeight, hash.KeywordWeight, hash.SemanticWeight, hash.FTSWeight = 0.10, 0.90, 0.20, 0.80
	if got := DefaultRanking(ProfileSemanticModel); got != semantic {
		t.Errorf("semantic-model:\n got %+v\nwant %+v", got, semantic)
	}
	if got := DefaultRanking(ProfileHashKeywordLed); got != hash {
		t.Errorf("hash-keyword-led:\n got %+v\nwant %+v", got, hash)
	}
}

func TestKnobParse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		knob, in string
		want     float64
		err      string
	}{
		{"vector_weight", "0.9", 0.9, ""},
		{"vector_weight", " 0.9 ", 0.9, ""},
		{"vector_weight", "abc", 0, "vector_weight must be a number"},
		{"vector_weight", "NaN", 0, "vector_weight must be a finite number between 0 and 100"},
		{"vector_weight", "Inf", 0, "must be a finite number"},
		{"vector_weight", "1e308", 0, "vector_weight must be between 0 and 100 (got 1e+308)"},
		{"vector_weight", "1e999", 0, "must be a finite number"},
		{"vector_weight", "-1", 0, "vector_weight must not be negative"},
		{"rrf_k", "0", 0, "rrf_k must be greater than 0 and at most 10000"},
		{"rrf_k", "10", 10, ""},
		{"min_score", "-0.5", -0.5, ""},
		{"ef_search", "100", 100, ""},
		{"ef_search", "2.5", 0, "ef_search must be a whole number"},
		{"ef_search", "201", 0, "ef_search must be between 1 and 200"},
		{"bm25_term_limit", "0", 0, ""},
		{"normalize_scores", "false", 0, ""},
		{"normalize_scores", "true", 1, ""},
		{"normalize_scores", "maybe", 0, "normalize_scores must be true or false"},
	}
	for _, c := range cases {
		t.Run(c.knob+"="+c.in, func(t *testing.T) {
			t.Parallel()
			k := Knobs()[knobIndex(c.knob)]
			got, err := k.Parse(c.in)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one containing %q", err, c.err)
			case c.err == "" && got != c.want:
				t.Errorf("got %g, want %g", got, c.want)
			}
		})
	}
}

func TestWithOverride(t *testing.T) {
	t.Parallel()
	base := DefaultRanking(ProfileHashKeywordLed)
	cases := []struct {
		name string
		o    RankingOverride
		want func(r *Ranking)
		err  string
	}{
		{"none", nil, func(*Ranking) {}, ""},
		{"number", RankingOverride{"vector_weight": 0.3}, func(r *Ranking) { r.VectorWeight = 0.3 }, ""},
		{"integer", RankingOverride{"ef_search": 100}, func(r *Ranking) { r.EFSearch = 100 }, ""},
		{"switch", RankingOverride{"normalize_scores": 0}, func(r *Ranking) { r.NormalizeScores = false }, ""},
		{"unknown", RankingOverride{"magic": 1}, nil, `unknown knob "magic"`},
		{"fraction", RankingOverride{"ef_search": 1.5}, nil, "ef_search must be a whole number"},
		{"switch 2", RankingOverride{"normalize_scores": 2}, nil, "normalize_scores must be 0 or 1"},
		{"negative", RankingOverride{"keyword_weight": -1}, nil, "keyword_weight must not be negative"},
		{"nan", RankingOverride{"bm25_b": math.NaN()}, nil, "bm25_b must be a finite number between 0 and 1"},
		{"inf", RankingOverride{"rrf_k": math.Inf(1)}, nil, "rrf_k must be a finite number"},
		{"huge", RankingOverride{"mention_weight": 1e308}, nil, "mention_weight must be between 0 and 100"},
		{"huge integer", RankingOverride{"max_chunks_per_doc": 1e308}, nil, "max_chunks_per_doc must be between 1 and 100"},
		{"zero half-life", RankingOverride{"recency_half_life_days": 0}, nil, "recency_half_life_days must be greater than 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := base.WithOverride(c.o)
			if c.err != "" {
				var inv *InvalidError
				if err == nil || !strings.Contains(err.Error(), c.err) || !errors.As(err, &inv) {
					t.Fatalf("error %v, want an *InvalidError containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := base
			c.want(&want)
			if got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestRankingKnobNamesAndKinds(t *testing.T) {
	t.Parallel()
	names := RankingKnobNames()
	if len(names) != len(Knobs()) {
		t.Fatalf("%d names for %d knobs", len(names), len(Knobs()))
	}
	for _, k := range Knobs() {
		if kind, ok := RankingKnobKind(k.Name); !ok || kind != k.Kind {
			t.Errorf("%s: kind %v, %v", k.Name, kind, ok)
		}
	}
	if _, ok := RankingKnobKind("nope"); ok {
		t.Error("an unknown name has a kind")
	}
}
