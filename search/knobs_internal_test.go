package search

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
)

// TestKnobParams checks every knob the ranking query takes is a named parameter
// of db/queries/search.sql and reaches the statement with its own value; the
// knobs the plan uses itself are not parameters under their own name.
func TestKnobParams(t *testing.T) {
	t.Parallel()
	sql, err := os.ReadFile("../db/queries/search.sql")
	if err != nil {
		t.Fatal(err)
	}
	// A distinct in-range value per knob, so a crossed wire shows.
	r := domain.DefaultRanking(domain.ProfileSemanticModel)
	for i, k := range domain.Knobs() {
		v := k.Min + 1
		if k.Kind == domain.KnobNumber {
			v = k.Min + float64(i+1)/100
		}
		if k.Kind == domain.KnobSwitch {
			v = 0 // the default is 1
		}
		if err := k.Check(v); err != nil {
			t.Fatalf("test value: %v", err)
		}
		k.Set(&r, v)
	}
	var params db.SearchRankParams
	setKnobParams(&params, r)
	got := reflect.ValueOf(params)
	for _, k := range domain.Knobs() {
		f := got.FieldByName(paramFieldName(k.Name))
		inSQL := strings.Contains(string(sql), "sqlc.arg("+k.Name+")")
		switch {
		case k.SQL && (!f.IsValid() || !inSQL):
			t.Errorf("%s: the ranking query has no parameter %s (field %s)", k.Name, k.Name, paramFieldName(k.Name))
		case k.SQL && f.Kind() == reflect.Bool:
			if f.Bool() != (k.Get(r) != 0) {
				t.Errorf("%s: parameter %v, knob %g", k.Name, f.Bool(), k.Get(r))
			}
		case k.SQL && f.Kind() == reflect.Float64:
			if f.Float() != k.Get(r) {
				t.Errorf("%s: parameter %g, knob %g", k.Name, f.Float(), k.Get(r))
			}
		case k.SQL:
			if float64(f.Int()) != k.Get(r) {
				t.Errorf("%s: parameter %d, knob %g", k.Name, f.Int(), k.Get(r))
			}
		case f.IsValid() && !f.IsZero():
			t.Errorf("%s is the plan's, not a parameter, but was copied", k.Name)
		}
	}
	var terms db.SearchTermScoresParams
	setKnobParams(&terms, r)
	if terms.Bm25K1 != r.BM25K1 || terms.Bm25B != r.BM25B || terms.Bm25HeadingBoost != r.BM25HeadingBoost {
		t.Errorf("term scores: %+v", terms)
	}
}

func TestParamFieldName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"bm25_k1": "Bm25K1", "rrf_k": "RrfK", "fts_weight": "FtsWeight", "min_score": "MinScore"} {
		if got := paramFieldName(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
