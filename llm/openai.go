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

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// DefaultOpenAIBaseURL is OpenAI's API. Ollama (http://localhost:11434/v1), vLLM
// and llama.cpp's server (http://localhost:8080/v1) serve the same
// /chat/completions route under their own base URL.
const DefaultOpenAIBaseURL = "https://api.openai.com/v1"

// OpenAIConfig configures a provider for any OpenAI-compatible chat completions API.
type OpenAIConfig struct {
	BaseURL string // default DefaultOpenAIBaseURL; "/chat/completions" is appended
	Model   string // required, e.g. "gpt-4o-mini" or "llama3.1:8b"
	// APIKey is sent as a bearer token when set. It is required for OpenAI's own
	// API; local servers usually need none. It never appears in errors.
	APIKey string
	// Timeout bounds one whole generation: connecting, retries and streaming
	// the answer. Default DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is how many times a failed request is retried (connection
	// errors, 408, 409, 429 and 5xx with exponential backoff or the server's
	// Retry-After; and a stream that broke before its first text). Never after
	// text was emitted, and not when Retry-After asks for more than 30 s or
	// beyond Timeout (the error is returned at once instead). 0 means
	// DefaultMaxRetries, negative means none.
	MaxRetries int
	// Temperature is sent when set; nil leaves the server's default.
	Temperature *float64
	// MaxTokens caps the answer when the Request does not set its own; 0 sends
	// no cap. OpenAI's API gets max_completion_tokens (required by its reasoning
	// models), other servers max_tokens, which all compatible servers accept.
	MaxTokens int
	// HTTPClient sends the requests (tests, proxies); default a plain client
	// without its own timeout (Timeout applies through the context).
	HTTPClient *http.Client
	// Prices is the table CostUSD uses; nil means DefaultPrices().
	Prices map[string]Price
}

// OpenAI streams chat completions from an OpenAI-compatible server through the
// official SDK (github.com/openai/openai-go/v3), which provides the SSE
// decoding and the retries with backoff. The SDK's environment defaults
// (OPENAI_API_KEY, OPENAI_BASE_URL, …) are not used: only the configuration
// counts, so a key meant for OpenAI is never sent to a local server.
type OpenAI struct {
	remote
	svc             openai.ChatCompletionService
	temperature     *float64
	maxTokens       int
	completionField bool // send max_completion_tokens rather than max_tokens
}

// NewOpenAI validates cfg and fills its defaults.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	model := strings.TrimSpace(cfg.Model)
	if model == "" {
		return nil, errors.New("openai provider: Model is required (e.g. gpt-4o-mini)")
	}
	base := strings.TrimSpace(cfg.BaseURL)
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai provider: BaseURL %q must be an http:// or https:// URL", redactor(cfg.APIKey).clean(base))
	}
	official := strings.EqualFold(u.Hostname(), "api.openai.com")
	if official && cfg.APIKey == "" {
		return nil, errors.New("openai provider: APIKey is required for api.openai.com")
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("openai provider: MaxTokens must not be negative, got %d", cfg.MaxTokens)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithHTTPClient(hc),
		option.WithBaseURL(base),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	p := &OpenAI{
		remote: newRemote("openai", model, cfg.Timeout, cfg.MaxRetries, cfg.APIKey, cfg.Prices),
		// Built without openai.NewClient, which would read OPENAI_* variables.
		svc:             openai.NewChatCompletionService(opts...),
		temperature:     cfg.Temperature,
		maxTokens:       cfg.MaxTokens,
		completionField: official,
	}
	return p, nil
}

// Name is "openai" for every OpenAI-compatible server.
func (p *OpenAI) Name() string { return "openai" }

// Model is the configured model.
func (p *OpenAI) Model() string { return p.model }

func (p *OpenAI) params(req Request) openai.ChatCompletionNewParams {
	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, openai.SystemMessage(req.System))
	}
	for _, m := range requestMessages(req) {
		switch m.Role {
		case "assistant":
			msgs = append(msgs, openai.AssistantMessage(m.Content))
		case "system":
			msgs = append(msgs, openai.SystemMessage(m.Content))
		default:
			msgs = append(msgs, openai.UserMessage(m.Content))
		}
	}
	params := openai.ChatCompletionNewParams{
		Model:         p.model,
		Messages:      msgs,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if p.temperature != nil {
		params.Temperature = openai.Float(*p.temperature)
	}
	maxTokens := p.maxTokens
	if req.MaxTokens > 0 {
		maxTokens = req.MaxTokens
	}
	if maxTokens > 0 {
		if p.completionField {
			params.MaxCompletionTokens = openai.Int(int64(maxTokens))
		} else {
			params.MaxTokens = openai.Int(int64(maxTokens))
		}
	}
	return params
}

// Stream sends req as a streaming chat completion ("stream": true with
// "stream_options": {"include_usage": true}) and passes each content delta to
// onDelta. Usage comes from the final chunk. On error the Response holds the
// text streamed so far; see ProviderError for how failures are classified. An
// error returned by onDelta ends the generation (closing the upstream request)
// and is returned as is; so is the caller's context error, wrapped.
func (p *OpenAI) Stream(ctx context.Context, req Request, onDelta func(string) error) (Response, error) {
	params := p.params(req)
	return p.generate(ctx, onDelta, func(ctx context.Context, httpRetries int, emit func(string) error) attemptResult {
		var res attemptResult
		var httpResp *http.Response
		stream := p.svc.NewStreaming(ctx, params,
			option.WithMaxRetries(max(httpRetries, 0)),
			option.WithMiddleware(sdkMiddleware(&res.attempts)), //nolint:bodyclose // a middleware hands the response on; the SDK closes it
			option.WithResponseInto(&httpResp),
		)
		defer stream.Close()
		finished := false
		for stream.Next() {
			chunk := stream.Current()
			if chunk.Model != "" {
				res.model = chunk.Model
			}
			if u := chunk.Usage; u.PromptTokens > 0 || u.CompletionTokens > 0 {
				res.usage = Usage{PromptTokens: int(u.PromptTokens), CompletionTokens: int(u.CompletionTokens)}
				finished = true // the usage chunk is the last before [DONE]
			}
			for _, c := range chunk.Choices {
				if c.Index != 0 {
					continue
				}
				// A safety refusal arrives as "refusal" text instead of content.
				if err := emit(c.Delta.Content + c.Delta.Refusal); err != nil {
					res.err = err
					return res
				}
				if c.FinishReason != "" {
					finished = true
				}
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

// classify turns an SDK error into a *ProviderError (context errors pass through
// for generate to recognise).
func (p *OpenAI) classify(err error, httpResp *http.Response, attempts int) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if httpResp != nil && httpResp.StatusCode >= 400 {
		var typ, msg string
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			typ, msg = apiErr.Type, apiErr.Message
		}
		if msg == "" && httpResp.Body != nil {
			// The SDK leaves the error body readable; servers that do not use
			// OpenAI's {"error":{...}} envelope (vLLM) are parsed here.
			body, _ := io.ReadAll(io.LimitReader(httpResp.Body, 64<<10))
			typ, msg = parseErrorBody(body)
		}
		return errorFromStatus(p.provider, p.red, httpResp.StatusCode, typ, msg, attempts)
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		typ, msg := parseErrorBody(se.Event.Data)
		return errorFromStreamEvent(p.provider, p.red, typ, msg, attempts)
	}
	return errorFromTransport(p.provider, p.red, err, httpResp != nil, attempts)
}
