package markdown

import (
	"reflect"
	"testing"
)

func TestSidecarMergesWithFrontmatterWinning(t *testing.T) {
	t.Parallel()
	md := "---\ntitle: From the file\nstatus: ~\ntags: [file]\n---\n# Heading\n\nBody text.\n"
	sidecar := &Sidecar{Path: "a.md.meta.yaml", Content: []byte(
		"title: From the sidecar\ntype: decision\nstatus: accepted\ntags: [side]\nowners: [dana]\n")}
	doc, err := ParseWithSidecar("a.md", []byte(md), sidecar, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// title and tags: the frontmatter's; status: null in the frontmatter, so
	// the sidecar's; type and owners: only in the sidecar.
	got := []any{doc.Title, doc.Tags, doc.Status, doc.CanonicalType, doc.Owners}
	want := []any{"From the file", []string{"file"}, "accepted", "decision", []string{"dana"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged metadata = %v, want %v", got, want)
	}
	plain, err := Parse("a.md", []byte(md), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.ContentHash == doc.ContentHash {
		t.Error("the sidecar's bytes must change the content hash")
	}
	if plain.ContentHash != ContentHash([]byte(md), nil) {
		t.Error("a file without a sidecar hashes its bytes alone")
	}
}

func TestSidecarErrorsPointAtTheSidecar(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, frontmatter, sidecar, want string }{
		{"unknown key", "", "title: x\ntitel: y\n", `a.md.meta.yaml:2: unknown key "titel"; ` + allowedKeys},
		{"bad YAML", "", "title: a\ntype: b: c\n", "a.md.meta.yaml:2: invalid YAML: mapping values are not allowed in this context"},
		{"not a mapping", "", "- a\n", "a.md.meta.yaml:1: sidecar must be a mapping of keys to values"},
		{"bad status", "", "\nstatus: done\n", `a.md.meta.yaml:2: unknown status "done"; valid: draft, review, accepted, active, superseded, deprecated, archived`},
		{"bad link", "", "id: x\nsupersedes: [x]\n", `a.md.meta.yaml:2: supersedes: "x" is this document's own slug`},
		{"invalid UTF-8", "", "title: \xff\n", "a.md.meta.yaml:1: invalid UTF-8: byte 0xff at column 8"},
		// The type comes from the frontmatter, the entity-only key from the sidecar.
		{"entity key on a decision", "---\ntype: decision\n---\n", "role: lead\n", "a.md.meta.yaml:1: role is only allowed on entity pages (type: person, team, project)"},
		{"frontmatter still checked", "---\nstatus: nope\n---\n", "title: x\n", `a.md:2: unknown status "nope"; valid: draft, review, accepted, active, superseded, deprecated, archived`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseWithSidecar("a.md", []byte(tt.frontmatter+"# A\n\ntext\n"),
				&Sidecar{Path: "a.md.meta.yaml", Content: []byte(tt.sidecar)}, Options{})
			if err == nil || err.Error() != tt.want {
				t.Errorf("got  %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestFromOutline(t *testing.T) {
	t.Parallel()
	var o Outline
	o.Title = "Declared title"
	o.Paragraph("Before any heading.")
	o.Heading(2, "Setup")
	o.Paragraph("Install it.")
	o.Heading(3, "Linux")
	o.Lines([]string{"- apt-get install x", "- run x"})
	o.Heading(2, "Usage\x00")
	o.Code([]string{"x --help"}, "sh")
	doc, err := FromOutline(Converted{Path: "guides/x.html", Content: []byte("<html>"), SourceType: "html", Outline: &o},
		&Sidecar{Path: "guides/x.html.meta.yaml", Content: []byte("tags: [guide]\n")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if doc.Slug != "guides/x" || doc.Title != "Declared title" || doc.SourceType != "html" ||
		doc.Summary != "Before any heading." || !reflect.DeepEqual(doc.Tags, []string{"guide"}) {
		t.Errorf("document = %+v", doc)
	}
	var got [][]string
	for _, c := range doc.Chunks {
		got = append(got, append(append([]string{}, c.HeadingPath...), c.Text))
	}
	want := [][]string{
		{"Declared title", "Before any heading."},
		{"Declared title", "Setup", "Install it."},
		{"Declared title", "Setup", "Linux", "- apt-get install x\n- run x"},
		{"Declared title", "Usage", "```sh\nx --help\n```"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("chunks:\n got %q\nwant %q", got, want)
	}

	// A level-1 heading titles the document and starts the paths under it.
	var h Outline
	h.Title = "Site name"
	h.Heading(1, "Real title")
	h.Heading(2, "Part")
	h.Paragraph("text")
	doc, err = FromOutline(Converted{Path: "y.html", SourceType: "html", Outline: &h}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if doc.Title != "Real title" || len(doc.Chunks) != 1 || !reflect.DeepEqual(doc.Chunks[0].HeadingPath, []string{"Real title", "Part"}) {
		t.Errorf("document = %+v", doc)
	}
}
