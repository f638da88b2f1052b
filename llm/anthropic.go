package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// Anthropic defaults.
const (
	DefaultAnthropicBaseURL   = "https://api.anthropic.com"
	DefaultAnthropicVersion   = "2023-06-01"
	DefaultAnthropicMaxTokens = 1024
)

// AnthropicConfig configures a provider for Anthropic's Messages API.
type AnthropicConfig struct {
	// BaseURL is the API root without /v1 (default DefaultAnthropicBaseURL);
	// "/v1/messages" is appended. A trailing "/v1" is tolerated and dropped.
	BaseURL string
	Model   string // required, e.g. "claude-3-5-haiku-latest"
	// APIKey is sent in the x-api-key header; required for Anthropic's own API.
	// It never appears in errors.
	APIKey string
	// Version is the anthropic-version header; default DefaultAnthropicVersion.
	Version string
	// MaxTokens caps the answer when the Request does not set its own (the API
	// requires a cap); default DefaultAnthropicMaxTokens.
	MaxTokens int
	// Timeout, MaxRetries, Temperature, HTTPClient and Prices work as in OpenAIConfig.
	Timeout     time.Duration
	MaxRetries  int
	Temperature *float64
	HTTPClient  *http.Client
	Prices      map[string]Price
}

// Anthropic streams from the Messages API through the official SDK
// (github.com/anthropics/anthropic-sdk-go), which provides the SSE decoding and
// the retries with backoff. The SDK's environment and profile credential
// loading is switched off: only the configuration counts.
type Anthropic struct {
	remote
	svc         anthropic.MessageService
	maxTokens   int
	temperature *float64
}

// NewAnthropic validates cfg and fills its defaults.
func NewAnthropic(cfg AnthropicConfig) (*Anthropic, error) {
	model := strings.TrimSpace(cfg.Model)
	if model == "" {
		return nil, errors.New("anthropic provider: Model is required (e.g. claude-3-5-haiku-latest)")
	}
	base := strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	if base == "" {
		base = DefaultAnthropicBaseURL
	}
	base = strings.TrimSuffix(base, "/v1")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic provider: BaseURL %q must be an http:// or https:// URL", redactor(cfg.APIKey).clean(base))
	}
	if strings.EqualFold(u.Hostname(), "api.anthropic.com") && cfg.APIKey == "" {
		return nil, errors.New("anthropic provider: APIKey is required for api.anthropic.com")
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic provider: MaxTokens must not be negative, got %d", cfg.MaxTokens)
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = DefaultAnthropicMaxTokens
	}
	version := strings.TrimSpace(cfg.Version)
	if version == "" {
		version = DefaultAnthropicVersion
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(hc),
		option.WithBaseURL(base),
		option.WithHeader("anthropic-version", version),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	client := anthropic.NewClient(opts...)
	return &Anthropic{
		remote:      newRemote("anthropic", model, cfg.Timeout, cfg.MaxRetries, cfg.APIKey, cfg.Prices),
		svc:         client.Messages,
		maxTokens:   cfg.MaxTokens,
		temperature: cfg.Temperature,
	}, nil
}

// Name is "anthropic".
func (p *Anthropic) Name() string { return "anthropic" }

// Model is the configured model.
func (p *Anthropic) Model() string { return p.model }

func (p *Anthropic) params(req Request) anthropic.MessageNewParams {
	var system []anthropic.TextBlockParam
	if req.System != "" {
		system = append(system, anthropic.TextBlockParam{Text: req.System})
	}
	var msgs []anthropic.MessageParam
	for _, m := range requestMessages(req) {
		if strings.TrimSpace(m.Content) == "" {
			continue // the API rejects empty text blocks
		}
		switch m.Role {
		case "assistant":
			msgs = append(msgs, anthropic.NewAssistantMessage(anthropic.NewTextBlock(m.Content)))
		case "system": // the Messages API has no system turns
			system = append(system, anthropic.TextBlockParam{Text: m.Content})
		default:
			msgs = append(msgs, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Content)))
		}
	}
	maxTokens := p.maxTokens
	if req.MaxTokens > 0 {
		maxTokens = req.MaxTokens
	}
	params := anthropic.MessageNewParams{
		Model:     p.model,
		MaxTokens: int64(maxTokens),
		System:    system,
		Messages:  msgs,
	}
	if p.temperature != nil {
		params.Temperature = anthropic.Float(*p.temperature)
	}
	return params
}

// Stream sends req to the Messages API with "stream": true and passes each
// text_delta to onDelta: message_start gives the input tokens, message_delta
// the output tokens, message_stop ends the answer, and an error event fails it
// (overloaded_error and the like as ErrUnavailable, retried when no text was
// emitted yet). Errors and cancellation behave as for OpenAI.Stream.
func (p *Anthropic) Stream(ctx context.Context, req Request, onDelta func(string) error) (Response, error) {
	params := p.params(req)
	return p.generate(ctx, onDelta, func(ctx context.Context, httpRetries int, emit func(string) error) attemptResult {
		var res attemptResult
		var httpResp *http.Response
		stream := p.svc.NewStreaming(ctx, params,
			option.WithMaxRetries(max(httpRetries, 0)),
			option.WithMiddleware(sdkMiddleware(&res.attempts)), //nolint:bodyclose // a middleware hands the response on; the SDK closes it
			option.WithResponseInto(&httpResp),
		)
		defer func() { _ = stream.Close() }()
		finished := false
		for stream.Next() {
			ev := stream.Current()
			switch ev.Type {
			case "message_start":
				res.model = ev.Message.Model
				res.usage.PromptTokens = int(ev.Message.Usage.InputTokens)
				res.usage.CompletionTokens = int(ev.Message.Usage.OutputTokens)
			case "content_block_delta":
				if ev.Delta.Type == "text_delta" {
					if err := emit(ev.Delta.Text); err != nil {
						res.err = err
						return res
					}
				}
			case "message_delta":
				// Counts in message_delta are cumulative.
				if ev.Usage.InputTokens > 0 {
					res.usage.PromptTokens = int(ev.Usage.InputTokens)
				}
				res.usage.CompletionTokens = int(ev.Usage.OutputTokens)
			case "message_stop":
				finished = true
			}
		}
		if err := stream.Err(); err != nil {
			res.err = p.classify(err, httpResp, res.attempts)
			return res
		}
		if !finished {
			res.err = errorFromTransport(p.provider, p.red, io.ErrUnexpectedEOF, true, res.attempts)
		}
		return res
	})
}

func (p *Anthropic) classify(err error, httpResp *http.Response, attempts int) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var apiErr *anthropic.Error
	hasAPIErr := errors.As(err, &apiErr)
	if httpResp != nil && httpResp.StatusCode >= 400 {
		var typ, msg string
		if hasAPIErr {
			typ, msg = parseErrorBody([]byte(apiErr.RawJSON()))
		}
		if msg == "" && httpResp.Body != nil {
			body, _ := io.ReadAll(io.LimitReader(httpResp.Body, 64<<10))
			typ, msg = parseErrorBody(body)
		}
		return errorFromStatus(p.provider, p.red, httpResp.StatusCode, typ, msg, attempts)
	}
	if hasAPIErr {
		// An "event: error" inside a 200 stream, e.g. overloaded_error.
		typ, msg := parseErrorBody([]byte(apiErr.RawJSON()))
		return errorFromStreamEvent(p.provider, p.red, typ, msg, attempts)
	}
	if httpResp != nil && strings.HasPrefix(err.Error(), "received error while streaming") {
		// The SDK's fallback for an error event that is not JSON.
		return errorFromStreamEvent(p.provider, p.red, "", strings.TrimPrefix(err.Error(), "received error while streaming: "), attempts)
	}
	return errorFromTransport(p.provider, p.red, err, httpResp != nil, attempts)
}
