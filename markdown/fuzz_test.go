package markdown

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/canonkb/canon/domain"
)

// FuzzParse checks that Parse never panics, that every error is a
// *ParseError pointing into the file, and that every document satisfies the
// chunk invariants (budget, ordinals, TokenCount).
func FuzzParse(f *testing.F) {
	_ = filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b, uint16(0), int16(0))
				f.Add(b, uint16(40), int16(10))
			}
		}
		return nil
	})
	for _, s := range []string{
		"", "---", "---\n", "---\n---", "\ufeff---\r\n---\r\n", "# [[a]]", "[[a|b]] [[ ]] [[#x]]",
		"---\na: &x [*x]\n---\n", "---\nrelated:\n  - {to: a, weight: 1e308}\n---\n",
		"---\naccess: [eng, ops]\n---\n# A\n", "---\naccess: eng\n---\n", "---\naccess: [\"\", \"a b\"]\n---\n",
		"```\n# x\n", "> # quote\n> - list\n>   ```\n>   code\n", "|a|\n|-|\n|[[b\\|c]]|\n",
		strings.Repeat("x", 5000), strings.Repeat("a. ", 2000), "<!-- c -->\n<div>\n[[x]]\n</div>\n",
		"Read [[a|the doc.]] Then [[b]]. " + strings.Repeat("[[c-d|e f]] g. ", 300), "[[設計。]]次" + strings.Repeat("[[x]]", 900),
		"\uFDD0a\uFDD2b\uFDD3 [[c]] \uFDD2", "# [[a]] [[b|c]]\n\nx [[d#e f]]",
	} {
		f.Add([]byte(s), uint16(0), int16(0))
		f.Add([]byte(s), uint16(33), int16(-1))
	}
	f.Fuzz(func(t *testing.T, content []byte, chunkTokens uint16, overlap int16) {
		opts := Options{ChunkTokens: int(chunkTokens % 1024), OverlapTokens: int(overlap % 512)}
		doc, err := Parse("fuzz/doc.md", content, opts)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *ParseError", err, err)
			}
			lines := bytes.Count(content, []byte("\n")) + bytes.Count(content, []byte("\r")) + 1
			if pe.Path != "fuzz/doc.md" || pe.Line < 1 || pe.Line > lines+1 || pe.Reason == "" {
				t.Fatalf("bad error %q (file of %d lines)", err, lines)
			}
			return
		}
		if checkSlug(doc.Slug) != "" || doc.Title == "" {
			t.Fatalf("slug %q title %q", doc.Slug, doc.Title)
		}
		for _, l := range doc.Links {
			if checkSlug(l.From) != "" || checkSlug(l.To) != "" || l.From == l.To || l.Weight < 0 || l.Weight > 100 {
				t.Fatalf("bad link %+v", l)
			}
		}
		for _, g := range doc.Access {
			if !domain.ValidGroup(g) {
				t.Fatalf("access group %q is not a group name", g)
			}
		}
		checkChunks(t, doc, opts)
	})
}
