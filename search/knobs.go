package search

import (
	"reflect"
	"strings"

	"github.com/canonkb/canon/domain"
)

// setKnobParams copies the ranking query's knobs (domain.Knob.SQL) into the
// fields of a sqlc parameter struct that carry their names, as sqlc spells them
// (bm25_k1 → Bm25K1), so a new knob needs no line here. Knobs the struct has no
// field for are skipped; TestKnobParams checks the ranking query takes them all.
func setKnobParams(dst any, r domain.Ranking) {
	v := reflect.ValueOf(dst).Elem()
	for _, k := range domain.Knobs() {
		if !k.SQL {
			continue
		}
		f := v.FieldByName(paramFieldName(k.Name))
		if !f.IsValid() {
			continue
		}
		x := k.Get(r)
		switch f.Kind() {
		case reflect.Float64:
			f.SetFloat(x)
		case reflect.Int32, reflect.Int64, reflect.Int:
			f.SetInt(int64(x))
		case reflect.Bool:
			f.SetBool(x != 0)
		default:
			panic("search: parameter " + k.Name + " has an unexpected type " + f.Type().String())
		}
	}
}

// paramFieldName is sqlc's Go name of a parameter: each word capitalised.
func paramFieldName(name string) string {
	words := strings.Split(name, "_")
	for i, w := range words {
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, "")
}
