package domain

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxSlugBytes bounds a document slug: ingest refuses a longer one and a
// request naming one (graph show, a document read, a doc_ids value) is refused,
// so every stored document can be named. A slug is by default the file's path
// under the ingest root; 512 bytes holds any path a person would keep.
const MaxSlugBytes = 512

// MaxValueBytes bounds a project key a request names (ingest's pattern allows 63
// bytes) and each filter value (a tag, a status, a source type, ...).
const MaxValueBytes = 200

// MaxQuotedBytes bounds how much of a client's value a message or a log line
// quotes (Quote): a refusal must not echo a megabyte back.
const MaxQuotedBytes = 100

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
// document slug, a filter value): present, text, at most limit bytes. what
// names it in the message ("slug", "project key").
func ValidateName(what, s string, limit int) error {
	if p := TextProblem(s); p != "" {
		return invalid("%s %s %s", what, Quote(s), p)
	}
	if strings.TrimSpace(s) == "" {
		return invalid("%s is empty", what)
	}
	if len(s) > limit {
		return invalid("%s %s is %d bytes long; the limit is %d", what, Quote(s), len(s), limit)
	}
	return nil
}

// ValidateSlug checks a document slug a request names.
func ValidateSlug(slug string) error { return ValidateName("slug", slug, MaxSlugBytes) }

// ValidateProjectKey checks a project key a request names.
func ValidateProjectKey(key string) error { return ValidateName("project key", key, MaxValueBytes) }

// Storable is s as a text column can hold it, for a record of what a client
// sent before it was validated (the audit log): invalid UTF-8 and NUL characters
// become U+FFFD, and it is cut to n bytes (Clip).
func Storable(s string, n int) string {
	return Clip(strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD"), n)
}

// Quote is a client's value as a message or a log line shows it: Go-quoted (so
// a NUL, a newline or a stray byte is visible), its first MaxQuotedBytes bytes
// only, "…" after the quote marking the cut.
func Quote(s string) string {
	if len(s) <= MaxQuotedBytes {
		return strconv.Quote(s)
	}
	return strconv.Quote(prefix(s, MaxQuotedBytes)) + "…"
}

// Clip is s cut to at most n bytes at a character boundary, "…" added when cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return prefix(s, n) + "…"
}

// prefix is s's first n bytes (n < len(s)), shortened to a character boundary.
func prefix(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
