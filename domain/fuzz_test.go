package domain

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzValidateQuery: a question is accepted only when PostgreSQL can hold it as
// text and the ranking can use it; every refusal is an *InvalidError.
func FuzzValidateQuery(f *testing.F) {
	for _, s := range []string{"", " ", "cache layer", "a\x00b", "\xff", strings.Repeat("x", MaxQueryLength+1), "@dec-cache-v2 why?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		err := ValidateQuery(q)
		if err != nil {
			if !IsInvalid(err) {
				t.Fatalf("%T %v", err, err)
			}
			return
		}
		if !utf8.ValidString(q) || strings.ContainsRune(q, 0) || strings.TrimSpace(q) == "" {
			t.Fatalf("accepted %q", q)
		}
		for _, m := range Mentions(q) {
			if m != strings.ToLower(m) || m == "" {
				t.Fatalf("mention %q of %q", m, q)
			}
		}
	})
}

// FuzzParseFilters: filters are accepted only within their bounds.
func FuzzParseFilters(f *testing.F) {
	f.Add("platform", "tag", "doc", "filter", "2024-01-01", "2023-01-01", 1)
	f.Add("", "a\x00", "", "boost", "", "", 5000)
	f.Add("p", "", "", "x", "2024-13-01", "", 0)
	f.Fuzz(func(t *testing.T, project, tag, doc, mode, from, to string, n int) {
		n = min(max(n, 0), 2*MaxFilterValues)
		ids := make([]string, n)
		for i := range ids {
			ids[i] = doc
		}
		got, err := ParseFilters(RawFilters{ProjectKeys: []string{project}, Tags: []string{tag}, DocIDs: ids,
			DocIDsMode: mode, DateFrom: from, DateTo: to})
		if err != nil {
			if !IsInvalid(err) {
				t.Fatalf("%T %v", err, err)
			}
			return
		}
		if len(got.DocIDs) > MaxFilterValues {
			t.Fatalf("%d doc ids accepted", len(got.DocIDs))
		}
		for _, v := range slices.Concat(got.ProjectKeys, got.Tags, got.DocIDs) {
			if strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
				t.Fatalf("value %q accepted", v)
			}
		}
		if got.DateFrom != nil && got.DateTo != nil && got.DateFrom.After(*got.DateTo) {
			t.Fatal("date_from after date_to accepted")
		}
	})
}

// FuzzSnippet: a snippet is valid UTF-8 of bounded length, whatever the text.
func FuzzSnippet(f *testing.F) {
	f.Add("The cache layer is Redis; we standardised on it in 2024.", "cach")
	f.Add("\xff\xfe caché ünïcode", "cach")
	f.Add(strings.Repeat("word ", 200), "")
	f.Fuzz(func(t *testing.T, text, lexeme string) {
		s := Snippet(text, []string{lexeme})
		if utf8.ValidString(text) && !utf8.ValidString(s) {
			t.Fatalf("snippet of valid text is not valid UTF-8: %q", s)
		}
		if n := utf8.RuneCountInString(s); n > SnippetLength+8 && n > utf8.RuneCountInString(text) {
			t.Fatalf("snippet of %d characters", n)
		}
	})
}

// FuzzCheckMarkers: markers kept are valid, in order of first appearance, once each.
func FuzzCheckMarkers(f *testing.F) {
	f.Add("Redis [1], see [2, 9][3] and [999].", 3)
	f.Add("[0][-1][1,,2][ 1 ]", 1)
	f.Fuzz(func(t *testing.T, answer string, n int) {
		valid := func(i int) bool { return i >= 1 && i <= n }
		got := CheckMarkers(answer, valid)
		seen := map[int]bool{}
		for _, c := range got.Cited {
			if !valid(c) || seen[c] {
				t.Fatalf("cited %v of %q", got.Cited, answer)
			}
			seen[c] = true
		}
		for _, d := range got.Dropped {
			if valid(d) {
				t.Fatalf("dropped a valid marker %d", d)
			}
		}
		_ = CheckSupport(got.Text, func(i int) (string, bool) { return answer, valid(i) }, 0.5)
	})
}
