package domain

import (
	"strings"
	"unicode/utf8"
)

// TextProblem says why s is not text PostgreSQL can hold (invalid UTF-8, a NUL
// character), worded to follow the name of what holds it; "" when it is text.
// Every value a request names passes through it before a statement binds it:
// the database would refuse either with an error that reads as the server's.
func TextProblem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "is not valid UTF-8 text"
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL character (U+0000), which text cannot hold"
	}
	return ""
}

// ValidateName checks a name a request looks something up by (a project key, a
// document slug, a filter value): present and text. what names it in the
// message ("slug", "project key").
func ValidateName(what, s string) error {
	if p := TextProblem(s); p != "" {
		return invalid("%s %q %s", what, s, p)
	}
	if strings.TrimSpace(s) == "" {
		return invalid("%s is empty", what)
	}
	return nil
}

// ValidateSlug checks a document slug a request names.
func ValidateSlug(slug string) error { return ValidateName("slug", slug) }

// ValidateProjectKey checks a project key a request names.
func ValidateProjectKey(key string) error { return ValidateName("project key", key) }
