// Package document reads one stored document for display: the web document view
// and the MCP get_document tool and canon:// resources share it, so a document
// is read, and its ACL checked, in one place.
package document

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/markdown"
)

// Document is a stored document's fields and chunks.
type Document struct {
	Project, Slug, Title, SourcePath, SourceType string
	Tags, Owners                                 []string
	EffectiveDate                                *time.Time
	CanonicalType, Status                        string
	RetrievalPriority                            int
	Tier, EvidenceTier, EntityType               string
	Summary                                      string
	SummaryLinks                                 []markdown.ReadLink // in Summary
	UpdatedAt                                    time.Time
	// Chunks in reading order, the summary chunk (IsSummary) first.
	Chunks []Chunk
}

// Chunk is one stored chunk of a document: its text as a reader gets it (a
// wikilink without a label reads as its target's title, markdown.RenderWikilinks)
// and where its wikilinks are, to link them.
type Chunk struct {
	ID          int64
	Ordinal     int
	HeadingPath []string
	Text        string
	IsSummary   bool
	Links       []markdown.ReadLink
}

// Read returns a document of a project as the request's principal may see it:
// a document hidden by its access list is a *domain.NotFoundError, worded as
// for one that does not exist. The caller checks the principal's project.
func Read(ctx context.Context, pool *pgxpool.Pool, project, slug string) (*Document, error) {
	if err := domain.ValidateProjectKey(project); err != nil {
		return nil, err
	}
	if err := domain.ValidateSlug(slug); err != nil {
		return nil, err
	}
	viewer := domain.PrincipalFrom(ctx)
	q := db.New(pool)
	missing := &domain.NotFoundError{Message: fmt.Sprintf("no document %s in project %s", domain.Quote(slug), project)}
	// The project first, so the read names its project_id (one shard on Citus).
	p, err := q.ProjectGetByKey(ctx, project)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, missing
	}
	if err != nil {
		return nil, fmt.Errorf("read document: %w", err)
	}
	d, err := q.DocumentRead(ctx, db.DocumentReadParams{ProjectID: p.ID, Slug: slug,
		AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups()})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, missing
	}
	if err != nil {
		return nil, fmt.Errorf("read document: %w", err)
	}
	rows, err := q.DocumentBody(ctx, db.DocumentBodyParams{ProjectID: d.ProjectID, DocumentID: d.ID,
		AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups()})
	if err != nil {
		return nil, fmt.Errorf("read document chunks: %w", err)
	}
	out := &Document{
		Project: project, Slug: d.Slug, Title: d.Title, SourcePath: d.SourcePath, SourceType: d.SourceType,
		Tags: nonNil(d.Tags), Owners: nonNil(d.Owners), EffectiveDate: d.EffectiveDate,
		CanonicalType: deref(d.CanonicalType), Status: deref(d.Status), RetrievalPriority: int(d.RetrievalPriority),
		Tier: d.Tier, EvidenceTier: deref(d.EvidenceTier), EntityType: deref(d.EntityType),
		UpdatedAt: d.UpdatedAt, Chunks: make([]Chunk, 0, len(rows)),
	}
	out.Summary, out.SummaryLinks = markdown.RenderWikilinks(d.Summary, d.SummaryLinks, d.SummaryLinkTitles)
	for _, r := range rows {
		text, links := markdown.RenderWikilinks(r.Text, r.Links, r.LinkTitles)
		out.Chunks = append(out.Chunks, Chunk{ID: r.ID, Ordinal: int(r.Ordinal), HeadingPath: nonNil(r.HeadingPath),
			Text: text, IsSummary: r.IsSummary, Links: links})
	}
	return out, nil
}

// minOverlap is the shortest repeated text taken for chunk overlap rather than
// a coincidence.
const minOverlap = 16

// Body reassembles the document's text from its chunks (the summary chunk left
// out): a heading line where the heading path changes (the first element is the
// title), and the text without the overlap a chunk repeats from the previous one
// of its section.
func (d *Document) Body() string { return d.body(func(c Chunk) string { return c.Text }) }

// LinkedBody is Body with each wikilink whose target the reader may see made a
// Markdown link to href(its slug), so a reader can follow it: [Search
// configuration standard](canon://platform/std-search-config).
func (d *Document) LinkedBody(href func(slug string) string) string {
	return d.body(func(c Chunk) string {
		var b strings.Builder
		for _, p := range c.Parts() {
			if p.Target == "" {
				b.WriteString(p.Text)
				continue
			}
			dest := markdownLinkDestination.Replace(href(p.Target))
			b.WriteString("[" + markdownLinkText.Replace(p.Text) + "](" + dest + ")")
		}
		return b.String()
	})
}

// Part is a piece of a chunk's text: a wikilink to a document the reader may
// see (Target, its slug) or text.
type Part struct{ Text, Target string }

// Parts cuts the chunk's text at its wikilinks to documents the reader may see
// (those with a title); nil when it has none.
func (c Chunk) Parts() []Part {
	var parts []Part
	last := 0
	for _, l := range c.Links {
		if l.Title == "" || l.Start < last {
			continue
		}
		if l.Start > last {
			parts = append(parts, Part{Text: c.Text[last:l.Start]})
		}
		parts = append(parts, Part{Text: c.Text[l.Start:l.End], Target: l.Target})
		last = l.End
	}
	if parts != nil && last < len(c.Text) {
		parts = append(parts, Part{Text: c.Text[last:]})
	}
	return parts
}

func (d *Document) body(textOf func(Chunk) string) string {
	var b strings.Builder
	var prevPath []string
	prevText := ""
	for _, c := range d.Chunks {
		if c.IsSummary {
			continue
		}
		text := textOf(c)
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
		prevPath, prevText = c.HeadingPath, textOf(c)
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// markdownLinkText escapes what would end a Markdown link's text early, and
// markdownLinkDestination what would end its destination.
var (
	markdownLinkText        = strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`)
	markdownLinkDestination = strings.NewReplacer("(", "%28", ")", "%29", " ", "%20")
)

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

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
