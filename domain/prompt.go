package domain

import (
	_ "embed"
	"fmt"
	"strings"
	"text/template"
)

// SelfRefusalSentinel is what the prompt tells the model to answer, alone, when the
// context does not contain the answer; canon turns it into refusal_reason
// llm_self_refusal.
const SelfRefusalSentinel = "NO_ANSWER_IN_CONTEXT"

//go:embed prompt.tmpl
var defaultPrompt string

// DefaultPromptTemplate returns the prompt template embedded in the binary.
func DefaultPromptTemplate() string { return defaultPrompt }

// PromptChunk is one numbered chunk of a prompt block.
type PromptChunk struct {
	N            int
	DocID        string
	Title        string
	HeadingPath  []string
	Status       string
	EvidenceTier string
	// Owners are the document's owners by name (Hit.Owners).
	Owners []string
	// Edge describes how a related chunk was reached, e.g. "depends_on from dec-cache-v2".
	Edge string
	Text string
}

// PromptInput fills the template's blocks, in the order the model reads them:
// rejected approaches, related context, then the primary context.
type PromptInput struct {
	Rejected []PromptChunk
	Related  []PromptChunk
	Context  []PromptChunk
	Sentinel string
}

// Prompt is a parsed prompt template.
type Prompt struct{ tmpl *template.Template }

// ParsePrompt parses a template in the format of prompt.tmpl.
func ParsePrompt(text string) (*Prompt, error) {
	t, err := template.New("prompt").Funcs(template.FuncMap{"join": strings.Join}).
		Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("prompt template: %w", err)
	}
	// Render once with sample data, so a broken template fails at startup, not per question.
	var b strings.Builder
	sample := PromptInput{Context: []PromptChunk{{N: 1, DocID: "d", Title: "t", Text: "x"}}, Sentinel: SelfRefusalSentinel}
	if err := t.Execute(&b, sample); err != nil {
		return nil, fmt.Errorf("prompt template: %w", err)
	}
	return &Prompt{tmpl: t}, nil
}

// Render renders the prompt.
func (p *Prompt) Render(in PromptInput) (string, error) {
	if in.Sentinel == "" {
		in.Sentinel = SelfRefusalSentinel
	}
	var b strings.Builder
	if err := p.tmpl.Execute(&b, in); err != nil {
		return "", fmt.Errorf("render prompt: %w", err)
	}
	return strings.TrimSpace(b.String()) + "\n", nil
}
