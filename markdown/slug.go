package markdown

import (
	"fmt"
	"path"
	"strings"
	"unicode"

	"github.com/canonkb/canon/domain"
)

// NormalizeSlug is the form every slug is compared in: trimmed, lower-cased,
// inner whitespace runs collapsed to one space. It does not validate: link
// targets must also pass checkSlug; people lists (attendees, owners, members,
// entities) may hold names with spaces, resolved later by the entity layer.
func NormalizeSlug(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if strings.IndexFunc(s, unicode.IsSpace) < 0 {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// checkSlug says what is wrong with a normalised slug, or "": a request must be
// able to name every stored slug (domain.ValidateSlug), and a slug is one word.
func checkSlug(s string) string {
	if s == "" {
		return "empty slug"
	}
	if err := domain.ValidateSlug(s); err != nil {
		return err.Error()
	}
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			return fmt.Sprintf("slug %s contains whitespace", domain.Quote(s))
		case unicode.IsControl(r):
			return fmt.Sprintf("slug %s contains a control character (%U)", domain.Quote(s), r)
		}
	}
	return ""
}

// slugFromPath is the default slug: the path relative to the ingest root with
// its extension removed, "/" kept, lower-cased.
func slugFromPath(p string) string {
	p = cleanPath(p)
	return NormalizeSlug(strings.TrimSuffix(p, path.Ext(p)))
}

// titleFromPath is the fallback title: the file's base name without extension.
func titleFromPath(p string) string {
	base := path.Base(cleanPath(p))
	if base == "." || base == "/" {
		return ""
	}
	return strings.TrimSpace(strings.TrimSuffix(base, path.Ext(base)))
}

func cleanPath(p string) string {
	p = strings.ReplaceAll(strings.TrimSpace(p), "\\", "/")
	if p == "" {
		return ""
	}
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	return p
}
