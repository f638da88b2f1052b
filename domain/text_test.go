package domain

import (
	"fmt"
	"strings"
	"testing"
)

func TestValidateNames(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  error
		want string // "" when valid
	}{
		{"slug", ValidateSlug("dec-cache-v2"), ""},
		{"slug with a slash", ValidateSlug("runbooks/deploy"), ""},
		{"empty slug", ValidateSlug(""), "slug is empty"},
		{"blank slug", ValidateSlug("  "), "slug is empty"},
		{"slug with NUL", ValidateSlug("a\x00b"), `slug "a\x00b" contains a NUL character (U+0000)`},
		{"slug not UTF-8", ValidateSlug("\xff"), `slug "\xff" is not valid UTF-8 text`},
		{"project key", ValidateProjectKey("platform"), ""},
		{"project key with NUL", ValidateProjectKey("plat\x00form"), `project key "plat\x00form" contains a NUL character`},
		{"project key not UTF-8", ValidateProjectKey("%\xff"), `project key "%\xff" is not valid UTF-8 text`},
		{"empty project key", ValidateProjectKey(""), "project key is empty"},
		{"longest slug", ValidateSlug(strings.Repeat("s", MaxSlugBytes)), ""},
		{"slug too long", ValidateSlug(strings.Repeat("s", 1_000_000)), `slug "sss`},
		{"slug too long says the limit", ValidateSlug(strings.Repeat("s", MaxSlugBytes+1)), "is 513 bytes long; the limit is 512"},
		{"project key too long", ValidateProjectKey(strings.Repeat("k", MaxValueBytes+1)), "is 201 bytes long; the limit is 200"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			switch {
			case c.want == "" && c.err != nil:
				t.Errorf("got %v, want valid", c.err)
			case c.want != "" && (!IsInvalid(c.err) || !strings.Contains(c.err.Error(), c.want)):
				t.Errorf("got %.300v, want an InvalidError containing %q", c.err, c.want)
			case c.err != nil && len(c.err.Error()) > 300:
				t.Errorf("a message of %d bytes echoes the value whole", len(c.err.Error()))
			}
		})
	}
}

func TestParseFiltersNamesTheBadValue(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		raw  RawFilters
		want string
	}{
		{"NUL in a project key", RawFilters{ProjectKeys: []string{"plat\x00form"}}, `a value of project_keys "plat\x00form" contains a NUL character`},
		{"legacy project key", RawFilters{ProjectKey: "\xff"}, `a value of project_keys "\xff" is not valid UTF-8 text`},
		{"empty tag", RawFilters{ProjectKeys: []string{"p"}, Tags: []string{" "}}, "a value of tags is empty"},
		{"NUL in a doc id", RawFilters{ProjectKeys: []string{"p"}, DocIDs: []string{"a\x00"}}, `a value of doc_ids "a\x00" contains a NUL`},
		{"long tag", RawFilters{ProjectKeys: []string{"p"}, Tags: []string{strings.Repeat("t", 1_000_000)}}, "bytes long; the limit is 200"},
		{"long doc id", RawFilters{ProjectKeys: []string{"p"}, DocIDs: []string{strings.Repeat("d", MaxSlugBytes+1)}}, "the limit is 512"},
		{"long status", RawFilters{ProjectKeys: []string{"p"}, Statuses: []string{strings.Repeat("d", 1_000_000)}}, "the limit is 200"},
		{"unknown status", RawFilters{ProjectKeys: []string{"p"}, Statuses: []string{strings.Repeat("d", MaxValueBytes)}}, `unknown value "ddd`},
		{"long date", RawFilters{ProjectKeys: []string{"p"}, DateFrom: strings.Repeat("2", 1_000_000)}, `date_from must be a date as YYYY-MM-DD (got "222`},
		{"long doc_ids_mode", RawFilters{ProjectKeys: []string{"p"}, DocIDsMode: strings.Repeat("m", 1_000_000)}, `unknown doc_ids_mode "mmm`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseFilters(c.raw)
			if !IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %.300v, want an InvalidError containing %q", err, c.want)
			}
			// A client's value is quoted cut short, never echoed whole.
			if err != nil && len(err.Error()) > 300 {
				t.Errorf("a message of %d bytes", len(err.Error()))
			}
		})
	}
}

func TestQuoteAndClip(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", MaxQuotedBytes) // two bytes each: the cut falls inside none
	cases := []struct{ name, got, want string }{
		{"short", Quote("dec-cache-v2"), `"dec-cache-v2"`},
		{"control characters shown", Quote("a\x00\nb"), `"a\x00\nb"`},
		{"long cut at a character", Quote(long), `"` + strings.Repeat("é", MaxQuotedBytes/2) + `"…`},
		{"odd cut backs off to a character", Quote("x" + long), `"x` + strings.Repeat("é", MaxQuotedBytes/2-1) + `"…`},
		{"clip short", Clip("abc", 3), "abc"},
		{"clip long", Clip("abcdef", 3), "abc…"},
		{"clip inside a character", Clip("aé", 2), "a…"},
		{"storable", Storable("a\x00b\xffc", 100), "a\uFFFDb\uFFFDc"},
		{"storable cut", Storable(strings.Repeat("x", 10), 4), "xxxx…"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, c.got, c.want)
		}
	}
	if got := Quote(strings.Repeat("x", 1_000_000)); len(got) > MaxQuotedBytes+len(`""…`) {
		t.Errorf("Quote of a megabyte is %d bytes", len(got))
	}
}

func TestValidateFusionQuotesShort(t *testing.T) {
	t.Parallel()
	_, err := ValidateFusion(strings.Repeat("f", 1_000_000), FusionWeighted)
	if !IsInvalid(err) || len(err.Error()) > 300 || !strings.Contains(err.Error(), `unknown fusion "fff`) {
		t.Errorf("got %.300v (%d bytes)", err, len(err.Error()))
	}
}

func TestValidateSourceTypes(t *testing.T) {
	t.Parallel()
	many := make([]string, maxListedSourceTypes+2)
	for i := range many {
		many[i] = fmt.Sprintf("kind-%02d", i)
	}
	projects := []string{"platform"}
	cases := []struct {
		name             string
		values, declared []string
		want             string // "" when valid
	}{
		{"a format nothing declares", []string{"pdf"}, nil, ""},
		{"a declared type", []string{"adr", "markdown"}, []string{"adr", "markdown"}, ""},
		{"unknown, others declared", []string{"bogus"}, []string{"adr", "markdown", "meeting-notes"},
			`unknown value "bogus" in source_types: use a format (markdown, html, text, pdf, docx) or a source_type the documents of platform declare (adr, meeting-notes)`},
		{"unknown, none declared", []string{"ADR"}, []string{"markdown"},
			`unknown value "ADR" in source_types: use a format (markdown, html, text, pdf, docx); no document of platform declares another source_type`},
		{"a long list is cut", []string{"bogus"}, many, "kind-19, and 2 more)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateSourceTypes(c.values, c.declared, projects)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("got %v, want valid", err)
			case c.want != "" && (!IsInvalid(err) || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an InvalidError containing %q", err, c.want)
			}
		})
	}
}
