package llm

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SelfRefusalSentinel is the whole answer of a provider that finds no answer in
// the context. The chat layer's prompt asks real models to reply with exactly
// this; the extractive provider returns it when no sentence overlaps the question.
const SelfRefusalSentinel = "NO_ANSWER_IN_CONTEXT"

// Extractive composes answers from the passages themselves: no model, no
// network, and the same answer for the same request every time. It is the
// default provider, so canon answers (with citations) out of the box.
//
// It reads each passage's Markdown structure (paragraphs into sentences, lists
// with their lead-in, tables into rows under their header), keeps only whole
// sentences, and scores each one by the question's content words it shares
// (stemmed, or a word derived from one; weighted by rarity; words of its
// heading count half), by the kind of document the question points at
// (domain.Intents), by how far
// its source can be trusted (canonical, current, human-written documents
// first: notes, generated and superseded documents answer only when nothing
// stronger does; a rejected approach is never the answer unless the question
// asks why something was turned down; graph neighbours only when the
// retrieved context does not), by what the question asks for (a decision, a
// name, a date, steps, reasons) and by its passage's rank. The
// answer leads with the best one and adds the next best, near-duplicates
// dropped: up to 4 sentences from at most 3 passages; for a how-question the
// steps as a list under their lead-in; for a table row, the matching rows
// under their header as a small table. Every sentence, item and row carries
// its passage's marker [N]. Without any overlapping sentence the answer is
// exactly SelfRefusalSentinel.
//
// The answer is streamed word by word. Usage counts whitespace-separated words,
// a rough stand-in for tokens: PromptTokens those of the question and passages,
// CompletionTokens those of the answer. Its cost is zero.
type Extractive struct{}

// NewExtractive returns the extractive provider.
func NewExtractive() *Extractive { return &Extractive{} }

// Name is "extractive".
func (*Extractive) Name() string { return "extractive" }

// Model is "extractive-v9"; a change to the algorithm that changes answers
// bumps it.
func (*Extractive) Model() string { return "extractive-v9" }

// CostUSD is always zero.
func (*Extractive) CostUSD(Response) float64 { return 0 }

// Stream composes the answer for req.Question (or, when empty, the last user
// message) from req.Passages and streams it through onDelta.
func (e *Extractive) Stream(ctx context.Context, req Request, onDelta func(string) error) (Response, error) {
	question := req.Question
	if strings.TrimSpace(question) == "" {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role != "assistant" {
				question = req.Messages[i].Content
				break
			}
		}
	}
	if onDelta == nil {
		onDelta = func(string) error { return nil }
	}
	answer := composeAbout(question, req.About, req.Passages)
	prompt := len(strings.Fields(question))
	for _, p := range req.Passages {
		prompt += len(strings.Fields(p.Text))
	}
	resp := Response{Model: e.Model(), Usage: Usage{PromptTokens: prompt}}
	var text strings.Builder
	for _, piece := range wordPieces(answer) {
		if err := ctx.Err(); err != nil {
			resp.Text = text.String()
			return resp, fmt.Errorf("extractive: generation stopped: %w", err)
		}
		if err := onDelta(piece); err != nil {
			resp.Text = text.String()
			return resp, err
		}
		text.WriteString(piece)
	}
	resp.Text = text.String()
	resp.Usage.CompletionTokens = len(strings.Fields(answer))
	return resp, nil
}

// wordPieces splits s into words, each with the whitespace that follows it, so
// that the pieces concatenate to s.
func wordPieces(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexFunc(s, unicode.IsSpace)
		if i < 0 {
			out = append(out, s)
			break
		}
		j := i
		for j < len(s) {
			r, size := utf8.DecodeRuneInString(s[j:])
			if !unicode.IsSpace(r) {
				break
			}
			j += size
		}
		out = append(out, s[:j])
		s = s[j:]
	}
	return out
}
