package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// readmeRow matches a table row of the README whose first cell names variables.
var readmeRow = regexp.MustCompile("^\\| (`[A-Z_*]+`(?: / `[A-Z_*]+`)*) \\| ([^|]*) \\|")

// codeSpan is the first `value` of a default cell ("`0` (one per core)").
var codeSpan = regexp.MustCompile("^`([^`]*)`")

// TestREADMEListsEveryVariable: every variable Config reads has a row in one of
// the README's tables, with the default the code applies. A row may name
// several ("`KB_A` / `KB_B`", or "`KB_X_A` / `_B`" for KB_X_B) with as many
// defaults.
func TestREADMEListsEveryVariable(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{} // variable -> its default cell ("" when the cell holds no `value`)
	for line := range strings.SplitSeq(string(readme), "\n") {
		m := readmeRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		names := strings.Split(strings.ReplaceAll(m[1], "`", ""), " / ")
		for i, n := range names {
			if strings.HasPrefix(n, "_") { // a suffix of the first name's stem
				stem := names[0][:strings.LastIndex(names[0], "_")]
				names[i] = stem + n
			}
		}
		defaults := strings.Split(strings.TrimSpace(m[2]), " / ")
		for i, n := range names {
			d := ""
			if len(defaults) == len(names) {
				if v := codeSpan.FindStringSubmatch(defaults[i]); v != nil {
					d = v[1]
				}
			}
			documented[n] = d
		}
	}
	for _, v := range envVars(reflect.TypeOf(Config{})) {
		d, ok := documented[v.name]
		switch {
		case !ok:
			t.Errorf("%s is read by config but has no row in README.md", v.name)
		case v.def != "" && d != v.def:
			t.Errorf("%s: README says the default is %q, the code's is %q", v.name, d, v.def)
		}
	}
}

type envVar struct{ name, def string }

// envVars lists the variables of t's env tags, nested structs included.
func envVars(t reflect.Type) []envVar {
	var out []envVar
	for i := range t.NumField() {
		f := t.Field(i)
		if name, ok := f.Tag.Lookup("env"); ok && name != "" {
			out = append(out, envVar{name: name, def: f.Tag.Get("envDefault")})
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			out = append(out, envVars(f.Type)...)
		}
	}
	return out
}
