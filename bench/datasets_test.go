package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/canonkb/canon/markdown"
)

// TestCollectionsParseBack renders every document of the collections under
// $CANON_DATASETS, by default the shared datasets folder next to the repository,
// and checks that canon reads back the same id, title and text. It needs no
// database; it is skipped only where no collection is on disk (the public
// collections are never copied into the repository).
func TestCollectionsParseBack(t *testing.T) {
	root := os.Getenv("CANON_DATASETS")
	if root == "" {
		root = filepath.Join("..", "..", "shared", "datasets")
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "corpus.jsonl"))
	if len(dirs) == 0 {
		t.Skipf("no BEIR collection under %s (set CANON_DATASETS)", root)
	}
	for _, c := range dirs {
		dir := filepath.Dir(c)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			ds, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			chunks, multi, bad := 0, 0, 0
			for _, d := range ds.Docs {
				f, err := File(d)
				if err != nil {
					t.Fatal(err)
				}
				doc, err := markdown.Parse(f.Path, f.Content, markdown.Options{ChunkTokens: 512, OverlapTokens: 64})
				if err != nil {
					t.Fatalf("%s: %v", d.ID, err)
				}
				want := strings.Join(strings.Fields(d.Text), " ")
				ok := DecodeSlug(doc.Slug) == d.ID && (d.Title == "" || doc.Title == oneLine(d.Title)) && len(doc.Links) == 0
				chunks += len(doc.Chunks)
				if len(doc.Chunks) == 1 {
					ok = ok && doc.Chunks[0].Text == want
				} else {
					multi++
					for _, c := range doc.Chunks {
						ok = ok && strings.Contains(want, c.Text)
					}
				}
				if !ok {
					bad++
					if bad <= 5 {
						got := doc.Chunks[0].Text
						i := 0
						for i < len(got) && i < len(want) && got[i] == want[i] {
							i++
						}
						t.Errorf("%s: did not parse back: title %q, %d chunks, differs at %d: got %.80q want %.80q", d.ID, doc.Title, len(doc.Chunks), i, got[max(i-20, 0):], want[max(i-20, 0):])
					}
				}
			}
			t.Logf("%s: %d docs, %d chunks, %d docs with several chunks, %d mismatches", ds.Name, len(ds.Docs), chunks, multi, bad)
		})
	}
}
