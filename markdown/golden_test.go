package markdown

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenOptions are the chunking options per golden document; the meeting
// notes use a small budget so their long section is split with overlap.
var goldenOptions = map[string]Options{
	"decisions/dec-cache-v2.md":     {},
	"runbooks/rb-cache-flush.md":    {},
	"notes/2024-03-12-arch-sync.md": {ChunkTokens: 120, OverlapTokens: 24},
}

func TestGolden(t *testing.T) {
	t.Parallel()
	root := filepath.Join("testdata", "golden")
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			paths = append(paths, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != len(goldenOptions) {
		t.Fatalf("found %d golden documents %v, goldenOptions has %d", len(paths), paths, len(goldenOptions))
	}
	for _, rel := range paths {
		t.Run(rel, func(t *testing.T) {
			opts, ok := goldenOptions[rel]
			if !ok {
				t.Fatalf("no goldenOptions for %s", rel)
			}
			src, err := os.ReadFile(filepath.Join(root, rel))
			if err != nil {
				t.Fatal(err)
			}
			doc, err := Parse(rel, src, opts)
			if err != nil {
				t.Fatal(err)
			}
			got := dumpDocument(doc)
			goldenPath := filepath.Join(root, strings.TrimSuffix(rel, ".md")+".golden")
			if *update {
				if err := os.WriteFile(goldenPath, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatalf("%v (run go test ./markdown -run TestGolden -update)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s (rerun with -update and review the diff):\n%s", rel, goldenPath, got)
			}
		})
	}
}

// dumpDocument renders a Document for review: fields, links, then each chunk.
func dumpDocument(d *Document) string {
	var b strings.Builder
	field := func(name string, v any) {
		switch v := v.(type) {
		case string:
			if v == "" {
				return
			}
		case []string:
			if len(v) == 0 {
				return
			}
			fmt.Fprintf(&b, "%s: %s\n", name, strings.Join(v, ", "))
			return
		case *time.Time:
			if v == nil {
				return
			}
			fmt.Fprintf(&b, "%s: %s\n", name, v.Format(time.RFC3339))
			return
		}
		fmt.Fprintf(&b, "%s: %v\n", name, v)
	}
	field("slug", d.Slug)
	field("title", d.Title)
	field("source_path", d.SourcePath)
	field("source_type", d.SourceType)
	field("project", d.Project)
	field("canonical_type", d.CanonicalType)
	field("entity_type", d.EntityType)
	field("status", d.Status)
	field("retrieval_priority", d.RetrievalPriority)
	field("tier", d.Tier)
	field("evidence_tier", d.EvidenceTier)
	field("tags", d.Tags)
	field("owners", d.Owners)
	field("date", d.EffectiveDate)
	field("summary", d.Summary)
	field("attendees", d.Attendees)
	field("entities", d.Entities)
	field("aliases", d.Aliases)
	field("members", d.Members)
	field("facts", d.Facts)
	field("role", d.Role)
	field("content_hash", d.ContentHash)
	for _, l := range d.Links {
		fmt.Fprintf(&b, "link: %s -> %s %s %g (%s)\n", l.From, l.To, l.EdgeType, l.Weight, l.Provenance)
	}
	for _, c := range d.Chunks {
		kind := ""
		if c.IsSummary {
			kind = " summary"
		}
		fmt.Fprintf(&b, "\n=== chunk %d%s, %d tokens, %s\n%s\n", c.Ordinal, kind, c.TokenCount, strings.Join(c.HeadingPath, " > "), c.Text)
		for _, l := range c.Wikilinks {
			label := ""
			if l.Labelled {
				label = " (label)"
			}
			fmt.Fprintf(&b, "--- wikilink %d-%d %q -> %s%s\n", l.Start, l.End, c.Text[l.Start:l.End], l.Target, label)
		}
	}
	return b.String()
}
