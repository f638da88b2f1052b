package convert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/canonkb/canon/markdown"
)

// errNoPoppler says how to get PDF support.
var errNoPoppler = errors.New("PDF files need pdftotext and pdfinfo from poppler-utils " +
	"(apt-get install poppler-utils; make test and make demo install it)")

// convertPDF reads a PDF's text layer page by page with poppler's pdftotext:
// each page is a section whose heading path is [title, "Page N"], its
// paragraphs separated by blank lines. The title is the PDF's Title property
// (pdfinfo) when it has one. A PDF without any text (a scan) is an error:
// canon does not run OCR.
func convertPDF(ctx context.Context, c *Converter, _ string, content []byte) (*markdown.Outline, error) {
	limits := c.Limits.withDefaults()
	pdftotext, pdfinfo, err := c.poppler()
	if err != nil {
		return nil, err
	}
	// poppler reads files, not pipes: the PDF goes to a private temporary file.
	tmp, err := os.CreateTemp("", "canon-*.pdf")
	if err != nil {
		return nil, fmt.Errorf("pdf: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("pdf: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("pdf: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, limits.PDFTimeout)
	defer cancel()

	text, err := runPoppler(ctx, limits, pdftotext, "-enc", "UTF-8", "-eol", "unix", tmp.Name(), "-")
	if err != nil {
		return nil, err
	}
	var o markdown.Outline
	if info, err := runPoppler(ctx, limits, pdfinfo, "-enc", "UTF-8", tmp.Name()); err == nil {
		o.Title = pdfTitle(info)
	}
	pages := strings.Split(string(text), "\f")
	empty := true
	for i, page := range pages {
		paras := blankLineRe.Split(strings.ReplaceAll(page, "\r", ""), -1)
		var kept []string
		for _, p := range paras {
			if t := strings.Join(strings.Fields(p), " "); t != "" {
				kept = append(kept, t)
			}
		}
		if len(kept) == 0 {
			continue
		}
		empty = false
		o.Heading(2, fmt.Sprintf("Page %d", i+1))
		for _, p := range kept {
			o.Paragraph(p)
		}
	}
	if empty {
		return nil, errors.New("the PDF has no text layer (a scanned document? canon does not run OCR)")
	}
	return &o, nil
}

// poppler finds pdftotext and pdfinfo.
func (c *Converter) poppler() (pdftotext, pdfinfo string, err error) {
	look := func(name string) (string, error) {
		if c.PopplerDir != "" {
			p := filepath.Join(c.PopplerDir, name)
			if _, err := os.Stat(p); err != nil {
				return "", errNoPoppler
			}
			return p, nil
		}
		p, err := exec.LookPath(name)
		if err != nil {
			return "", errNoPoppler
		}
		return p, nil
	}
	if pdftotext, err = look("pdftotext"); err != nil {
		return "", "", err
	}
	if pdfinfo, err = look("pdfinfo"); err != nil {
		return "", "", err
	}
	return pdftotext, pdfinfo, nil
}

// runPoppler runs one poppler tool, bounded in time and output.
func runPoppler(ctx context.Context, limits Limits, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	stdout := &cappedBuffer{limit: limits.ExtractedBytes}
	stderr := &cappedBuffer{limit: 64 << 10, truncate: true}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	switch {
	case stdout.over:
		return nil, fmt.Errorf("the PDF yields more than %s of text", size(limits.ExtractedBytes))
	case ctx.Err() == context.DeadlineExceeded:
		return nil, fmt.Errorf("%s took longer than %s on this PDF", filepath.Base(name), limits.PDFTimeout)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, fmt.Errorf("not a readable PDF: %s", popplerReason(stderr.buf.String(), err))
	}
	return stdout.buf.Bytes(), nil
}

// popplerReason is the last error line poppler printed (its first ones are
// often warnings about the same damage).
func popplerReason(stderr string, err error) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.Contains(l, "Error") {
			return l
		}
	}
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return err.Error()
}

// pdfTitle reads the Title line of pdfinfo's output.
func pdfTitle(info []byte) string {
	for _, l := range strings.Split(string(info), "\n") {
		if t, ok := strings.CutPrefix(l, "Title:"); ok {
			return strings.TrimSpace(t)
		}
	}
	return ""
}

// cappedBuffer keeps at most limit bytes. Past it, a truncating buffer drops
// the rest; any other remembers it was asked for more and fails the write, so
// the tool is stopped rather than read further.
type cappedBuffer struct {
	buf      bytes.Buffer // not embedded: its ReadFrom would bypass Write
	limit    int64
	truncate bool
	over     bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - int64(b.buf.Len()); int64(len(p)) > room {
		if b.truncate {
			b.buf.Write(p[:max(room, 0)])
			return len(p), nil
		}
		b.over = true
		return 0, errors.New("output limit reached")
	}
	return b.buf.Write(p)
}
