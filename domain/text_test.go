package domain

import (
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			switch {
			case c.want == "" && c.err != nil:
				t.Errorf("got %v, want valid", c.err)
			case c.want != "" && (!IsInvalid(c.err) || !strings.Contains(c.err.Error(), c.want)):
				t.Errorf("got %v, want an InvalidError containing %q", c.err, c.want)
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseFilters(c.raw)
			if !IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an InvalidError containing %q", err, c.want)
			}
		})
	}
}
