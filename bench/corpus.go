package bench

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/canonkb/canon/ingest"
)

// EncodeSlug maps a BEIR document id to the slug it is stored under. canon
// lower-cases slugs and forbids whitespace, so upper-case letters, whitespace,
// control characters and '%' are percent-encoded (UTF-8 bytes, lower-case hex);
// an id that is already a valid lower-case slug is its own slug. The mapping is
// injective and DecodeSlug inverts it.
func EncodeSlug(id string) string {
	clean := true
	for _, r := range id {
		if needsEscape(r) {
			clean = false
			break
		}
	}
	if clean {
		return id
	}
	var b strings.Builder
	for _, r := range id {
		if !needsEscape(r) {
			b.WriteRune(r)
			continue
		}
		var buf [utf8.UTFMax]byte
		for _, c := range buf[:utf8.EncodeRune(buf[:], r)] {
			fmt.Fprintf(&b, "%%%02x", c)
		}
	}
	return b.String()
}

func needsEscape(r rune) bool {
	return r == '%' || unicode.IsSpace(r) || unicode.IsControl(r) || unicode.ToLower(r) != r || r == utf8.RuneError
}

// DecodeSlug inverts EncodeSlug.
func DecodeSlug(slug string) string {
	if !strings.Contains(slug, "%") {
		return slug
	}
	if s, err := url.PathUnescape(slug); err == nil {
		return s
	}
	return slug
}

// emptyTitleName is the file name of every generated file. canon falls back to the
// file's base name for a document without a title, and the title is indexed with
// the chunk: "-" has no lexemes, so an untitled document (most of ArguAna) gets
// none from its file name or its id.
const emptyTitleName = "-.md"

// File renders a corpus document as the Markdown file canon ingests: frontmatter
// with the id and the title, and the text as one paragraph with every ASCII
// punctuation character backslash-escaped (the text is data, not Markdown: no
// emphasis, links, wikilinks, HTML or headings may come out of it).
func File(d Doc) (ingest.File, error) {
	fm := struct {
		ID    string `yaml:"id"`
		Title string `yaml:"title,omitempty"`
	}{ID: EncodeSlug(d.ID), Title: oneLine(d.Title)}
	y, err := yaml.Marshal(fm)
	if err != nil {
		return ingest.File{}, fmt.Errorf("document %q: %w", d.ID, err)
	}
	var b strings.Builder
	b.Grow(len(y) + len(d.Text) + len(d.Text)/8 + 16)
	b.WriteString("---\n")
	b.Write(y)
	b.WriteString("---\n\n")
	b.WriteString(EscapeText(d.Text))
	b.WriteString("\n")
	return ingest.File{Path: "corpus/" + url.PathEscape(fm.ID) + "/" + emptyTitleName, Content: []byte(b.String())}, nil
}

// oneLine collapses whitespace runs (newlines included) to single spaces and drops
// NUL bytes, which PostgreSQL text cannot hold.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\x00", " ")), " ")
}

// EscapeText turns plain text into a Markdown paragraph that renders back to the
// same text with whitespace runs collapsed: every ASCII punctuation character is
// backslash-escaped, which CommonMark allows for all of them, so no inline or
// block construct can start (list markers, headings, fences, HTML); '&' is written
// as the reference &#38;.
func EscapeText(s string) string {
	s = oneLine(s)
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for _, r := range s {
		switch {
		case r == '&':
			// A numeric reference, not "\&": canon's Markdown reader resolves
			// references after removing escapes (so "\&amp;" would read as "&") and
			// named ones before numeric ones (so "&amp;#35;" would read as "#").
			b.WriteString("&#38;")
			continue
		case r < utf8.RuneSelf && (unicode.IsPunct(r) || unicode.IsSymbol(r)):
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Files renders every document of the collection.
func (ds *Dataset) Files() ([]ingest.File, error) {
	out := make([]ingest.File, 0, len(ds.Docs))
	for _, d := range ds.Docs {
		f, err := File(d)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// Ingest loads the collection into project through the normal ingest path. It is
// idempotent: a second run finds every file unchanged and writes nothing.
func Ingest(ctx context.Context, in *ingest.Ingester, ds *Dataset, project string, progress ingest.Progress) (ingest.Result, error) {
	files, err := ds.Files()
	if err != nil {
		return ingest.Result{}, err
	}
	res, err := in.Ingest(ctx, files, ingest.Options{Project: project, Progress: progress})
	if err != nil {
		return res, err
	}
	if len(res.Errors) > 0 {
		return res, fmt.Errorf("%d of %d documents were rejected, first: %s", len(res.Errors), len(files), res.Errors[0].Error())
	}
	return res, nil
}
