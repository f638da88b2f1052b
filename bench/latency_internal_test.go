package bench

import (
	"strings"
	"testing"
)

func TestBoundValues(t *testing.T) {
	template := "SELECT $1::text, $2::vector WHERE x = ANY ($3::text[]) AND y = $1::text AND z >= $4::float8 AND d = $5::date"
	bound := "SELECT 'it''s'::text, '[0.1,-2e-05]'::vector WHERE x = ANY ('{\"a\",\"b\"}'::text[]) AND y = 'it''s'::text AND z >= -0.5::float8 AND d = NULL::date"
	got, err := boundValues(template, bound)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"'it''s'", "'[0.1,-2e-05]'", `'{"a","b"}'`, "-0.5", "NULL"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := boundValues(template, strings.Replace(bound, "WHERE", "WHEN", 1)); err == nil {
		t.Error("a different text was accepted")
	}
}

func TestWithDatabaseName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://u:p@h:5/canon?sslmode=disable", "postgres://u:p@h:5/lat?sslmode=disable&pool_max_conns=20"},
		{"postgresql://h/canon?pool_max_conns=4", "postgresql://h/lat?pool_max_conns=20"},
		{"host=h dbname=canon", "host=h dbname=canon dbname=lat pool_max_conns=20"},
	} {
		if got, _ := withDatabaseName(tc.in, "lat", 20); got != tc.want {
			t.Errorf("withDatabaseName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
