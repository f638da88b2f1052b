// Package convert turns the files canon ingests into documents: Markdown
// through package markdown, and HTML, plain text, PDF and DOCX through one
// converter each, which reads the file into a markdown.Outline (headings and
// blocks of text) that is then titled, summarised and chunked exactly like a
// Markdown body. Metadata for a format without frontmatter comes from a
// sidecar, <file>.meta.yaml.
//
// Every input is bounded (Limits): the file's size, and for the binary formats
// the text they may yield, the entries and expansion of a DOCX zip and the time
// pdftotext may take. A file over a limit, corrupt or unreadable is an error
// naming the reason; the caller reports it as `path: reason`.
package convert

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/canonkb/canon/markdown"
)

// Limits bound what one file may cost.
type Limits struct {
	TextFileBytes   int64         // size of a .md, .markdown, .html, .htm or .txt file
	BinaryFileBytes int64         // size of a .pdf or .docx file
	ExtractedBytes  int64         // text (or XML) a PDF or a DOCX part may yield
	ZipEntries      int           // entries of a DOCX zip
	ZipRatio        int64         // how many times a DOCX part larger than 1 MiB may expand
	PDFTimeout      time.Duration // how long pdftotext may take on one file
}

// DefaultLimits are the limits canon runs with.
func DefaultLimits() Limits {
	return Limits{
		TextFileBytes:   8 << 20,
		BinaryFileBytes: 64 << 20,
		ExtractedBytes:  32 << 20,
		ZipEntries:      5000,
		ZipRatio:        100,
		PDFTimeout:      60 * time.Second,
	}
}

// Converter makes Documents of files. The zero value is ready to use.
type Converter struct {
	Chunking markdown.Options
	// Limits; zero fields take DefaultLimits'.
	Limits Limits
	// PopplerDir holds pdftotext and pdfinfo; "" looks them up on PATH.
	PopplerDir string
}

// format is one kind of file canon ingests.
type format struct {
	name       string // the default source_type
	extensions []string
	binary     bool
	convert    func(ctx context.Context, c *Converter, path string, content []byte) (*markdown.Outline, error)
}

var formats = []format{
	{name: markdown.DefaultSourceType, extensions: []string{".md", ".markdown"}},
	{name: "html", extensions: []string{".html", ".htm"}, convert: convertHTML},
	{name: "text", extensions: []string{".txt"}, convert: convertText},
	{name: "pdf", extensions: []string{".pdf"}, binary: true, convert: convertPDF},
	{name: "docx", extensions: []string{".docx"}, binary: true, convert: convertDOCX},
}

func formatOf(p string) (format, bool) {
	ext := strings.ToLower(path.Ext(p))
	for _, f := range formats {
		if slices.Contains(f.extensions, ext) {
			return f, true
		}
	}
	return format{}, false
}

// Extensions lists the file extensions canon ingests, lower-case with the dot.
func Extensions() []string {
	var out []string
	for _, f := range formats {
		out = append(out, f.extensions...)
	}
	return out
}

// Supported reports whether a file of this name is ingested (by extension,
// case-insensitively). Sidecars are not: they belong to their file.
func Supported(name string) bool {
	_, ok := formatOf(name)
	return ok && !IsSidecar(name)
}

// IsSidecar reports whether a file of this name is the metadata of another.
func IsSidecar(name string) bool {
	return strings.HasSuffix(strings.ToLower(name), markdown.SidecarSuffix)
}

// SidecarOf is the path of the file a sidecar describes.
func SidecarOf(sidecar string) string { return sidecar[:len(sidecar)-len(markdown.SidecarSuffix)] }

// MaxBytes is the size limit of a file of this name (a sidecar is text).
func (l Limits) MaxBytes(name string) int64 {
	l = l.withDefaults()
	if f, ok := formatOf(name); ok && f.binary && !IsSidecar(name) {
		return l.BinaryFileBytes
	}
	return l.TextFileBytes
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.TextFileBytes > 0 {
		d.TextFileBytes = l.TextFileBytes
	}
	if l.BinaryFileBytes > 0 {
		d.BinaryFileBytes = l.BinaryFileBytes
	}
	if l.ExtractedBytes > 0 {
		d.ExtractedBytes = l.ExtractedBytes
	}
	if l.ZipEntries > 0 {
		d.ZipEntries = l.ZipEntries
	}
	if l.ZipRatio > 0 {
		d.ZipRatio = l.ZipRatio
	}
	if l.PDFTimeout > 0 {
		d.PDFTimeout = l.PDFTimeout
	}
	return d
}

// Document converts one file, chosen by its extension, with its sidecar (nil
// for none). Errors are a *markdown.ParseError (a line is known) or an error
// whose message is the reason alone.
func (c *Converter) Document(ctx context.Context, path string, content []byte, sidecar *markdown.Sidecar) (*markdown.Document, error) {
	f, ok := formatOf(path)
	if !ok || IsSidecar(path) {
		return nil, fmt.Errorf("unsupported file type %q: canon ingests %s (metadata goes in <file>%s)",
			strings.ToLower(pathExt(path)), strings.Join(Extensions(), ", "), markdown.SidecarSuffix)
	}
	limits := c.Limits.withDefaults()
	if limit := limits.MaxBytes(path); int64(len(content)) > limit {
		return nil, fmt.Errorf("file is over the %s limit for %s files", size(limit), f.name)
	}
	if sidecar != nil && int64(len(sidecar.Content)) > limits.TextFileBytes {
		return nil, fmt.Errorf("sidecar %s is over the %s limit", sidecar.Path, size(limits.TextFileBytes))
	}
	if f.convert == nil {
		return markdown.ParseWithSidecar(path, content, sidecar, c.Chunking)
	}
	o, err := f.convert(ctx, c, path, content)
	if err != nil {
		return nil, err
	}
	return markdown.FromOutline(markdown.Converted{Path: path, Content: content, SourceType: f.name, Outline: o}, sidecar, c.Chunking)
}

func pathExt(p string) string {
	if e := path.Ext(p); e != "" {
		return e
	}
	return "(none)"
}

// size prints a byte count the way the limits are chosen: in MiB, or KiB below one.
func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
