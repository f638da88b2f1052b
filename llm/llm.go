// Package llm talks to language models: one Provider interface, implemented for
// OpenAI-compatible chat completions, Anthropic's Messages API, and an offline
// extractive composer that needs no model at all.
package llm

import (
	"context"
	"errors"
)

// Message is one turn of the conversation sent to the model.
type Message struct {
	Role    string // "user" or "assistant"
	Content string
}

// Passage is a numbered context chunk, as the prompt cites it ([N]).
type Passage struct {
	N    int
	Text string
}

// Request is one generation.
type Request struct {
	// System carries the instructions and the numbered context (the rendered prompt).
	System   string
	Messages []Message
	// Question and Passages repeat what the prompt holds in structured form, for
	// providers that compose an answer without a model (extractive).
	Question  string
	Passages  []Passage
	MaxTokens int
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
// retries, rate limited, bad credentials): the caller reports them as Unavailable,
// never as a refusal.
var ErrUnavailable = errors.New("language model unavailable")
