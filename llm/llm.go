// Package llm talks to language models: one Provider interface, implemented for
// OpenAI-compatible chat completions, Anthropic's Messages API, and an offline
// extractive composer that needs no model at all.
//
// New builds one by kind ("extractive", the default; "openai"; "anthropic").
// The remote providers use the official SDKs (github.com/openai/openai-go/v3,
// github.com/anthropics/anthropic-sdk-go) for the streaming wire protocols and
// retries, configured only from OpenAIConfig/AnthropicConfig (never from the
// SDKs' environment variables). They retry before the first token only, close
// the upstream request when ctx is cancelled, and fail with a *ProviderError
// whose message never contains the API key, classified by what it asks of the
// caller (Failure: an outage or a rate limit, which match ErrUnavailable, or a
// refusal of canon's key or of the request). Cost prices a Usage from a
// configurable table of indicative list prices.
package llm

import (
	"context"
	"errors"

	"github.com/canonkb/canon/domain"
)

// Message is one turn of the conversation sent to the model.
type Message struct {
	Role    string // "user" or "assistant"
	Content string
}

// Passage is a numbered context chunk, as the prompt cites it ([N]), with what
// the prompt says about its document, so that a provider composing without a
// model (extractive) can weigh its sources as a model reading the prompt would.
type Passage struct {
	N    int
	Text string
	// Origin: why retrieval put it in the prompt (OriginPrimary, …).
	Origin      string
	DocID       string
	Title       string
	HeadingPath []string
	// CanonicalType is the document's node type (decision, runbook, …), "" for
	// notes, meeting notes and entity pages.
	CanonicalType string
	Status        string // draft, accepted, superseded…; "" without one
	Tier          string // human, or auto (generated, not reviewed)
	EvidenceTier  string // official, blog, unverified…; "" without one
	// IsSummary: the chunk is the document's summary, not its body.
	IsSummary bool
	// SourceType (meeting-notes, postmortem, …) and Attended (the document
	// lists attendees) complete the document's kind with CanonicalType.
	SourceType string
	Attended   bool
	// LinkingEntity is the chosen entity whose link brought the passage's
	// document (two-pass search), or "".
	LinkingEntity string
	// References are the titles Text reads for the documents its wikilinks
	// name (domain.Hit.References): they name another document, they are not
	// what the passage says.
	References []string
	// Owners are the document's owners by name, as the prompt shows them.
	Owners []string
}

// Kind is the kind of the passage's document, which question intents fit.
func (p Passage) Kind() domain.DocumentKind {
	return domain.DocumentKind{SourceType: p.SourceType, CanonicalType: p.CanonicalType, Attended: p.Attended}
}

// Origins of a passage, as the prompt's sections group them.
const (
	OriginPrimary  = "primary"           // the context that answers
	OriginExpanded = "graph_expansion"   // a graph neighbour of the context
	OriginRejected = "rejected_approach" // an option the team turned down
)

// Request is one generation.
type Request struct {
	// System carries the instructions and the numbered context (the rendered prompt).
	System   string
	Messages []Message
	// Question and Passages repeat what the prompt holds in structured form, for
	// providers that compose an answer without a model (extractive).
	Question string
	Passages []Passage
	// About is set when the question is about entities (the two-pass search
	// chose them): "what has Dana been working on?".
	About     *EntityQuestion
	MaxTokens int
}

// EntityQuestion names the entities a question is about.
type EntityQuestion struct {
	// Slugs are the chosen entities' page slugs (Passage.LinkingEntity).
	Slugs []string
	// Rest is the question without the words that named them.
	Rest string
}

// Usage counts tokens as the provider reports them.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// Response is a finished generation.
type Response struct {
	Text  string
	Usage Usage
	Model string
}

// Provider generates text. Stream calls onDelta with each piece of text as it
// arrives (in order; their concatenation is Response.Text) and returns when the
// generation ends. Cancelling ctx cancels the upstream request.
type Provider interface {
	Name() string
	Model() string
	Stream(ctx context.Context, req Request, onDelta func(string) error) (Response, error)
}

// ErrUnavailable marks failures of the provider itself (unreachable, 5xx after
// retries, rate limited): the caller reports them as Unavailable, never as a
// refusal. A provider refusing canon's key or the request does not match it
// (ProviderError.Failure says which).
var ErrUnavailable = errors.New("language model unavailable")
