package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
)

// readDocument reads a document whole: its row, its body from its chunks and its
// graph neighbours.
func (s *Server) readDocument(ctx context.Context, project, slug string) (DocumentOutput, error) {
	if project == "" || slug == "" {
		return DocumentOutput{}, &domain.InvalidError{Message: "project and slug are required"}
	}
	q := db.New(s.d.Pool)
	p, err := q.ProjectGetByKey(ctx, project)
	if errors.Is(err, pgx.ErrNoRows) {
		return DocumentOutput{}, &domain.NotFoundError{Message: fmt.Sprintf("unknown project %q", project)}
	}
	if err != nil {
		return DocumentOutput{}, err
	}
	d, err := q.DocumentRead(ctx, db.DocumentReadParams{ProjectID: p.ID, Slug: slug})
	if errors.Is(err, pgx.ErrNoRows) {
		return DocumentOutput{}, &domain.NotFoundError{Message: fmt.Sprintf("no document %q in project %s", slug, project)}
	}
	if err != nil {
		return DocumentOutput{}, err
	}
	chunks, err := q.DocumentBody(ctx, db.DocumentBodyParams{ProjectID: p.ID, DocumentID: d.ID})
	if err != nil {
		return DocumentOutput{}, err
	}
	g, err := s.lifecycle.Graph(ctx, project, slug)
	if err != nil {
		return DocumentOutput{}, err
	}
	return documentOutput(project, d, bodyText(chunks), g), nil
}

// minOverlap is the shortest repeated text taken for chunk overlap rather than
// a coincidence.
const minOverlap = 16

// bodyText reassembles a document's body from its chunks: a heading line where
// the heading path changes (the first element is the title), and the text
// without the overlap a chunk repeats from the previous one of its section.
func bodyText(chunks []db.DocumentBodyRow) string {
	var b strings.Builder
	var prevPath []string
	prevText := ""
	for _, c := range chunks {
		text := c.Text
		if slices.Equal(c.HeadingPath, prevPath) {
			text = strings.TrimLeft(text[overlap(prevText, text):], " \n")
		} else {
			// Headings from the first level that differs; a section of a parent
			// heading after its child repeats the parent's heading.
			from := 0
			for from < len(prevPath) && from < len(c.HeadingPath)-1 && prevPath[from] == c.HeadingPath[from] {
				from++
			}
			for i := from; i < len(c.HeadingPath); i++ {
				fmt.Fprintf(&b, "%s %s\n\n", strings.Repeat("#", min(i+1, 6)), c.HeadingPath[i])
			}
		}
		if text != "" {
			b.WriteString(text)
			b.WriteString("\n\n")
		}
		prevPath, prevText = c.HeadingPath, c.Text
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// overlap is the length of the longest suffix of prev (starting at a word) that
// next starts with, or 0.
func overlap(prev, next string) int {
	for i := 0; i+minOverlap <= len(prev); i++ {
		if i > 0 && prev[i-1] != ' ' && prev[i-1] != '\n' {
			continue
		}
		if strings.HasPrefix(next, prev[i:]) {
			return len(prev) - i
		}
	}
	return 0
}

// markdownOf renders a document as a resource: a metadata header, then the body.
func markdownOf(d DocumentOutput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- canon document %s in project %s", d.DocID, d.Project)
	if d.State.CanonicalType != "" {
		fmt.Fprintf(&b, "; %s, %s", d.State.CanonicalType, d.State.Status)
	}
	if d.SourcePath != "" {
		fmt.Fprintf(&b, "; from %s", d.SourcePath)
	}
	b.WriteString(" -->\n")
	b.WriteString(d.Text)
	return b.String()
}
