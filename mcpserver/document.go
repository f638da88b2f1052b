package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/canonkb/canon/document"
)

// readDocument reads a document whole: its fields, its body from its chunks and
// its graph neighbours.
func (s *Server) readDocument(ctx context.Context, project, slug string) (DocumentOutput, error) {
	d, err := document.Read(ctx, s.d.Pool, project, slug)
	if err != nil {
		return DocumentOutput{}, err
	}
	g, err := s.lifecycle.Graph(ctx, project, slug)
	if err != nil {
		return DocumentOutput{}, err
	}
	return documentOutput(d, g), nil
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
