// Package markdown parses one Markdown file, with optional YAML frontmatter,
// into a validated Document and the chunks that are indexed for retrieval.
//
// It is pure: no file system, no database. Parse takes the path relative to the
// ingest root and the file's bytes, and either returns a Document or a
// *ParseError naming the file line at fault.
//
// # Input
//
// A UTF-8 byte order mark at the start is dropped; CRLF and lone CR line
// endings are read as LF (line numbers in errors stay those an editor shows).
// Invalid UTF-8 and NUL bytes (PostgreSQL text cannot hold NUL) are errors
// reported at the line of the first bad byte. The frontmatter is the YAML
// between a first line "---" and the next line "---" (or "..."); a first line
// "---" without a closing line is an error, not a thematic break.
//
// # Frontmatter
//
// Every key is optional; an unknown key is an error that lists the allowed
// ones, and so is a key given twice. A null value (`key:` or `key: ~`) is the
// same as leaving the key out. Vocabulary values (type, status, tier,
// evidence_tier, edge types) are matched case-insensitively against package
// domain. A list key also accepts a single value (`tags: security`).
//
//   - id: the slug (default: the path without extension, lower-cased).
//   - title (default: the first H1, else the file's base name).
//   - type: a canonical node type (CanonicalType) or an entity type (EntityType).
//   - status, tier (default "human"), evidence_tier.
//   - retrieval_priority: an integer 0-100 (default 50).
//   - access: the groups that may see the document (trimmed, deduplicated, each
//     a valid group name); absent or empty, every reader of the project sees it.
//   - tags: lower-cased, trimmed, deduplicated. owners, attendees, entities,
//     members: NormalizeSlug'ed and deduplicated; they may hold names with
//     spaces, which the entity layer resolves through names and aliases.
//   - aliases, facts: trimmed, whitespace collapsed, deduplicated; role: text.
//     aliases, role and facts are errors unless type is person, team or project;
//     members is an error unless type is team.
//   - project: a project key (checked against the schema's pattern); it
//     overrides the project given to the ingest.
//   - date: YYYY-MM-DD (UTC midnight) or RFC 3339.
//   - source_type (default "markdown").
//   - summary (whitespace collapsed). Without it the summary is the body's
//     first top-level paragraph as plain text, cut to its first sentences
//     within 128 tokens.
//   - supersedes: slugs; Link{From: this, To: slug, EdgeType: supersedes}.
//   - related: slugs (related_to) or {to, type, weight} mappings; weight
//     defaults to the edge type's default, must be within 0-100 and is
//     rounded to 4 decimals (numeric(8, 4), as stored).
//   - rejects: slugs of rejected approaches; Link{From: slug, To: this,
//     EdgeType: decision_for}.
//
// Link targets must be valid slugs (non-empty, no whitespace) and must not be
// the document's own slug. A link repeated with the same ends and edge type is
// kept once (the first).
//
// # Body
//
// The body is parsed with goldmark (CommonMark plus GFM tables,
// strikethrough and task lists), so headings inside code fences are code.
// [[slug]], [[slug|label]] and [[slug#section]] outside code become related_to
// links with provenance "wikilink" (self-links, repeats and targets that a
// frontmatter link already names, in either direction, are dropped; a target
// with whitespace is an error), and read as their label in the text, or as
// their target as written without one. Each chunk records where its wikilinks
// are (Chunk.Wikilinks), so a reader can show one without a label as its
// target's title (RenderWikilinks); a heading shows its links as written.
//
// Chunk text is plain: emphasis and link syntax dropped (absolute http(s)
// URLs kept in parentheses after the link text), inline code kept in
// backticks, code blocks re-fenced with ``` and their language (up to 20
// bytes), lists as "- "
// or "1. " lines, tables as "cell | cell" lines, HTML tags stripped. See
// Parse for how sections become chunks.
//
// # Sidecars and other formats
//
// A file may have its metadata beside it in <file>.meta.yaml (a Sidecar): the
// same keys, validated the same way, errors at the sidecar's lines. For a
// Markdown file the frontmatter and the sidecar merge key by key and the
// frontmatter wins. Converters of other formats fill an Outline (headings and
// blocks) and FromOutline makes it a Document exactly as Parse does a body: the
// title is the metadata's, else the first level-1 heading, else the title the
// format declares, else the file name.
package markdown

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/canonkb/canon/domain"
)

// Defaults and limits of Options.
const (
	DefaultChunkTokens   = 512
	DefaultOverlapTokens = 64
	// MinChunkTokens is the smallest chunk budget Parse accepts; smaller
	// values are raised to it.
	MinChunkTokens = 32
)

// Defaults of Document fields.
const (
	DefaultRetrievalPriority = 50
	DefaultTier              = "human"
	DefaultSourceType        = "markdown"
)

// Link provenances.
const (
	ProvenanceFrontmatter = "frontmatter"
	ProvenanceWikilink    = "wikilink"
)

// maxDerivedSummaryTokens caps a summary taken from the body's first
// paragraph (whole sentences are kept); a frontmatter summary is not capped.
const maxDerivedSummaryTokens = 128

// Options tune chunking. Zero values take the defaults.
type Options struct {
	ChunkTokens   int // budget of a chunk's text in CountTokens; default 512, at least 32
	OverlapTokens int // overlap between consecutive chunks of a section; default 64, negative for none; at most half of ChunkTokens
}

func (o Options) withDefaults() Options {
	if o.ChunkTokens <= 0 {
		o.ChunkTokens = DefaultChunkTokens
	}
	o.ChunkTokens = max(o.ChunkTokens, MinChunkTokens)
	switch {
	case o.OverlapTokens == 0:
		o.OverlapTokens = DefaultOverlapTokens
	case o.OverlapTokens < 0:
		o.OverlapTokens = 0
	}
	o.OverlapTokens = min(o.OverlapTokens, o.ChunkTokens/2)
	return o
}

// Document is one parsed, validated Markdown file.
type Document struct {
	Slug, Title, SourcePath, SourceType string
	Project                             string // frontmatter project: (overrides the ingest's project), "" if absent
	CanonicalType                       string // one of domain.NodeTypes(), or ""
	EntityType                          string // one of domain.EntityTypes(), or ""
	Status                              string // one of domain.Statuses(), or ""
	RetrievalPriority                   int    // 0-100, default 50
	Tier                                string // one of domain.Tiers(), default "human"
	EvidenceTier                        string // one of domain.EvidenceTiers(), or ""
	Tags, Owners                        []string
	Access                              []string // groups that may see the document; empty: every reader of the project
	EffectiveDate                       *time.Time
	Summary                             string     // frontmatter summary, else the first paragraph of the body
	SummaryWikilinks                    []Wikilink // in Summary
	Language                            string     // frontmatter lang: (ISO 639-1), "" if absent
	Links                               []Link
	Attendees, Entities                 []string
	Aliases, Members, Facts             []string
	Role                                string
	Chunks                              []Chunk
	// NoText: the body holds no text (an empty file, or frontmatter alone), so
	// its one chunk is its summary or title.
	NoText      bool
	ContentHash string // sha256 hex of the raw file bytes
}

// Link is a typed edge a document declares, by slug.
type Link struct {
	From, To   string
	EdgeType   string // one of domain.EdgeTypes()
	Weight     float64
	Provenance string // ProvenanceFrontmatter or ProvenanceWikilink
}

// Chunk is a piece of a document's text sized for retrieval.
type Chunk struct {
	Ordinal     int
	HeadingPath []string
	Text        string
	TokenCount  int // CountTokens(Text)
	IsSummary   bool
	Wikilinks   []Wikilink // in Text, in order
}

var bom = []byte("\ufeff")

// Parse parses and validates one file; path is relative to the ingest root
// (e.g. "decisions/dec-cache-v2.md"). Errors are *ParseError.
//
// Chunking: the body is cut into sections at top-level headings (headings in
// quotes and lists are text). A section's heading path is its chain of
// headings; it starts with the H1 when the section is under one, and with the
// document title otherwise (content before the first heading, documents
// without an H1), so every path starts with a title. Sections without text are
// skipped; small sections are not merged, so a heading path always names
// exactly the text under it. Within a section, paragraphs, lists, tables and
// code blocks are packed in order into chunks of at most ChunkTokens; a block
// that does not fit in what is left of a chunk starts the next one, and only a
// block longer than a whole chunk is split (paragraphs between sentences,
// lists, tables and code between lines, over-long pieces between words, and
// over-long words anywhere). Consecutive chunks of a section overlap by up to
// OverlapTokens: the last whole sentences or lines of the previous chunk, or,
// if even the last one is longer, its last words.
//
// A canonical document (CanonicalType != "") first gets one summary chunk
// (IsSummary, heading path [Title], text Summary, or Title when there is no
// summary, cut to ChunkTokens). A document whose body has no text still gets
// one chunk: for a canonical document its summary chunk, otherwise a chunk of
// its summary or title. Ordinals start at 0 and are contiguous.
func Parse(path string, content []byte, opts Options) (*Document, error) {
	return ParseWithSidecar(path, content, nil, opts)
}

// ParseWithSidecar is Parse for a Markdown file that has a sidecar (nil for
// none): the frontmatter and the sidecar are merged key by key, and a key set
// in both takes the frontmatter's value (the file speaks for itself).
func ParseWithSidecar(path string, content []byte, sidecar *Sidecar, opts Options) (*Document, error) {
	doc, err := parseMarkdown(path, content, sidecar, opts)
	if err != nil {
		return nil, err // a nil *ParseError must not become a non-nil error
	}
	return doc, nil
}

// Converted is a file of another format than Markdown, as its converter read it.
type Converted struct {
	Path       string // relative to the ingest root: the default slug and title, errors
	Content    []byte // the file's bytes, for the content hash
	SourceType string // the default source_type ("html", "text", "pdf", "docx")
	Outline    *Outline
}

// FromOutline makes a Document of a converted file: its metadata comes from
// the sidecar (nil for none), validated like frontmatter, and its outline is
// titled, summarised and chunked like a Markdown body. Errors are *ParseError.
func FromOutline(c Converted, sidecar *Sidecar, opts Options) (*Document, error) {
	var metas []metaSource
	if sidecar != nil {
		m, err := sidecar.source()
		if err != nil {
			return nil, err
		}
		metas = append(metas, m)
	}
	o := c.Outline
	if o == nil {
		o = &Outline{}
	}
	doc, err := assemble(c.Path, ContentHash(c.Content, sidecar), c.SourceType, metas, o, nil, opts)
	if err != nil {
		return nil, err
	}
	return doc, nil
}

// Sidecar is the metadata of a file kept beside it in <file>.meta.yaml, for
// formats without frontmatter: the same keys, validated the same way, errors
// at the sidecar's own lines.
type Sidecar struct {
	Path    string
	Content []byte
}

// SidecarSuffix ends the name of a sidecar: notes.pdf has notes.pdf.meta.yaml.
const SidecarSuffix = ".meta.yaml"

func (s *Sidecar) source() (metaSource, *ParseError) {
	src := normalizeNewlines(bytes.TrimPrefix(s.Content, bom))
	if err := checkEncoding(s.Path, src); err != nil {
		return metaSource{}, err
	}
	return metaSource{kind: "sidecar", path: s.Path, yaml: []byte(sanitizeMarks(string(src))), firstLine: 1}, nil
}

// ContentHash identifies what a document is made from: the file's bytes and
// its sidecar's (sha256, hex). A file without a sidecar hashes its bytes alone.
func ContentHash(content []byte, sidecar *Sidecar) string {
	if sidecar == nil {
		sum := sha256.Sum256(content)
		return hex.EncodeToString(sum[:])
	}
	h := sha256.New()
	h.Write(content)
	h.Write([]byte("\x00" + SidecarSuffix + "\x00"))
	h.Write(sidecar.Content)
	return hex.EncodeToString(h.Sum(nil))
}

func parseMarkdown(path string, content []byte, sidecar *Sidecar, opts Options) (*Document, *ParseError) {
	var metas []metaSource
	if sidecar != nil {
		m, err := sidecar.source()
		if err != nil {
			return nil, err
		}
		metas = append(metas, m)
	}
	src := normalizeNewlines(bytes.TrimPrefix(content, bom))
	if err := checkEncoding(path, src); err != nil {
		return nil, err
	}
	src = []byte(sanitizeMarks(string(src)))
	yamlSrc, bodySrc, bodyLine, err := splitFrontmatter(path, src)
	if err != nil {
		return nil, err
	}
	if yamlSrc != nil {
		metas = append(metas, metaSource{kind: "frontmatter", path: path, yaml: yamlSrc, firstLine: 2})
	}
	body := parseBody(bodySrc, bodyLine)
	return assemble(path, ContentHash(content, sidecar), DefaultSourceType, metas, &body.outline, body.links, opts)
}

// assemble builds a Document of any format from its metadata and its outline.
func assemble(path, hash, sourceType string, metas []metaSource, o *Outline, wikis []wikiRef, opts Options) (*Document, *ParseError) {
	opts = opts.withDefaults()
	doc := &Document{
		SourcePath:        path,
		SourceType:        sourceType,
		RetrievalPriority: DefaultRetrievalPriority,
		Tier:              DefaultTier,
		ContentHash:       hash,
	}
	fm, err := decodeMeta(metas, doc)
	if err != nil {
		return nil, err
	}

	doc.Slug = fm.id
	if doc.Slug == "" {
		doc.Slug = slugFromPath(path)
		if msg := checkSlug(doc.Slug); msg != "" {
			where := "the frontmatter"
			if sourceType != DefaultSourceType {
				where = path + SidecarSuffix
			}
			return nil, errorf(path, 1, `%s (from the file path; set "id:" in %s)`, msg, where)
		}
	}

	for _, t := range []string{o.h1, o.Title, titleFromPath(path), doc.Slug} {
		if doc.Title != "" {
			break
		}
		doc.Title = cleanText(t)
	}
	if doc.Summary == "" {
		doc.Summary = capSummary(collapseSpace(o.firstPara), maxDerivedSummaryTokens)
	}
	if err := doc.addLinks(path, fm.links, wikis); err != nil {
		return nil, err
	}
	doc.chunk(o.sections, opts)
	return doc, nil
}

// addLinks resolves frontmatter links against the slug and adds the wikilinks.
func (doc *Document) addLinks(path string, specs []linkSpec, wikis []wikiRef) *ParseError {
	type key struct{ from, to, edge string }
	seen := map[key]bool{}
	named := map[string]bool{} // slugs a frontmatter link names
	for _, s := range specs {
		if s.target == doc.Slug {
			return errorf(s.path, s.line, "%s: %q is this document's own slug", s.key, s.target)
		}
		l := Link{From: doc.Slug, To: s.target, EdgeType: s.edgeType, Weight: s.weight, Provenance: ProvenanceFrontmatter}
		if s.key == "rejects" {
			l.From, l.To = s.target, doc.Slug
		}
		if k := (key{l.From, l.To, l.EdgeType}); !seen[k] {
			seen[k] = true
			doc.Links = append(doc.Links, l)
		}
		named[s.target] = true
	}
	weight, _ := domain.DefaultEdgeWeight("related_to")
	for _, w := range wikis {
		if msg := checkSlug(w.target); msg != "" {
			return errorf(path, w.line, "wikilink %s: %s", w.raw, msg)
		}
		if w.target == doc.Slug || named[w.target] {
			continue
		}
		named[w.target] = true
		doc.Links = append(doc.Links, Link{From: doc.Slug, To: w.target, EdgeType: "related_to", Weight: weight, Provenance: ProvenanceWikilink})
	}
	return nil
}

// chunk fills doc.Chunks from the body's sections.
func (doc *Document) chunk(sections []section, opts Options) {
	fallback := doc.Summary
	if fallback == "" {
		fallback = doc.Title
	}
	fallback = truncateTokens(fallback, opts.ChunkTokens)
	if doc.CanonicalType != "" {
		doc.Chunks = append(doc.Chunks, Chunk{HeadingPath: []string{doc.Title}, Text: fallback, IsSummary: true})
	}
	for _, s := range sections {
		path := s.path
		if !s.underH1 {
			path = append([]string{doc.Title}, s.path...)
		}
		p := packer{budget: opts.ChunkTokens, overlap: opts.OverlapTokens, path: path}
		for _, b := range s.blocks {
			if pb := atomize(b, opts.ChunkTokens); len(pb.atoms) > 0 {
				p.blocks = append(p.blocks, pb)
			}
		}
		p.pack()
		doc.Chunks = append(doc.Chunks, p.out...)
	}
	if len(doc.Chunks) == 0 {
		doc.Chunks = append(doc.Chunks, Chunk{HeadingPath: []string{doc.Title}, Text: fallback})
	}
	doc.NoText = !slices.ContainsFunc(sections, func(s section) bool { return len(s.blocks) > 0 })
	for i := range doc.Chunks {
		c := &doc.Chunks[i]
		c.Ordinal = i
		c.Text, c.Wikilinks = stripMarks(c.Text)
		c.TokenCount = CountTokens(c.Text)
	}
	doc.Summary, doc.SummaryWikilinks = stripMarks(doc.Summary)
}

// capSummary keeps the first whole sentences of s that fit limit tokens (or
// its first words, if the first sentence does not fit).
func capSummary(s string, limit int) string {
	if CountTokens(s) <= limit {
		return s
	}
	var keep []string
	sum := 0
	for _, sen := range sentences(s) {
		c := CountTokens(sen.text)
		if sum+c > limit {
			break
		}
		keep = append(keep, sen.text)
		sum += c
	}
	if len(keep) == 0 {
		return truncateTokens(s, limit)
	}
	return strings.Join(keep, " ")
}

func normalizeNewlines(b []byte) []byte {
	if bytes.IndexByte(b, '\r') < 0 {
		return b
	}
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	return bytes.ReplaceAll(b, []byte("\r"), []byte("\n"))
}

// checkEncoding rejects invalid UTF-8 and NUL bytes, at the first bad byte.
func checkEncoding(path string, src []byte) *ParseError {
	if utf8.Valid(src) && bytes.IndexByte(src, 0) < 0 {
		return nil
	}
	line, col := 1, 1
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return errorf(path, line, "invalid UTF-8: byte 0x%02x at column %d", src[i], col)
		case r == 0:
			return errorf(path, line, "NUL byte at column %d", col)
		case r == '\n':
			line, col = line+1, 1
		default:
			col += size
		}
		i += size
	}
	return nil
}

// NormalizeText prepares a plain-text file as Parse does a Markdown one: a byte
// order mark dropped, line endings made LF, and invalid UTF-8 or a NUL byte
// reported (a *ParseError) at its line.
func NormalizeText(path string, content []byte) ([]byte, error) {
	src := normalizeNewlines(bytes.TrimPrefix(content, bom))
	if err := checkEncoding(path, src); err != nil {
		return nil, err
	}
	return src, nil
}
