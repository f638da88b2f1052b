package embed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// DefaultOpenAIBaseURL is OpenAI's API. Ollama, vLLM and text-embeddings-inference
// serve the same /embeddings route under their own base URL (e.g.
// http://localhost:11434/v1 for Ollama).
const DefaultOpenAIBaseURL = "https://api.openai.com/v1"

// OpenAIConfig configures an embedder for any OpenAI-compatible embeddings API.
type OpenAIConfig struct {
	BaseURL string // default DefaultOpenAIBaseURL; "/embeddings" is appended
	Model   string // required, e.g. "text-embedding-3-small"
	// APIKey is sent as a bearer token when set; local servers usually need none.
	// It never appears in errors.
	APIKey    string
	BatchSize int           // inputs per request; default 64
	Timeout   time.Duration // per request attempt, reading the response included; a hung attempt is retried; default 30s
	// MaxRetries is how many times a failed request is retried: connection
	// errors, attempt timeouts, 408, 409, 429 and 5xx, after exponential backoff
	// (0.5 s doubling, at most 8 s) or the server's Retry-After when it asks for
	// at most 2 minutes (a longer wait fails at once). Default 4, negative means none.
	MaxRetries int
	// Dim is the dimension the database schema stores (KB_EMBEDDING_DIM); every
	// returned vector must have exactly this length.
	Dim int
	// Dimensions, when > 0, is sent as the request's "dimensions" field, which
	// asks models that support it (OpenAI text-embedding-3-*) for shortened
	// vectors. Servers that do not support it may reject the request, so it is
	// sent only when set.
	Dimensions int
	// HTTPClient sends the requests (proxies, tests); default a plain client. A
	// copy is used whose Timeout is the per-attempt Timeout above.
	HTTPClient *http.Client
}

// OpenAI embeds text with an OpenAI-compatible embeddings endpoint through the
// official SDK (github.com/openai/openai-go/v3), which sends the requests and
// retries them. The SDK's environment defaults (OPENAI_API_KEY,
// OPENAI_BASE_URL, …) are not used: only the configuration counts, so a key
// meant for OpenAI is never sent to a local server. Vectors are returned as the
// server gives them, without re-normalising: canon compares them by cosine,
// which ignores length.
type OpenAI struct {
	cfg      OpenAIConfig
	endpoint string // for messages only; the SDK builds the URL
	svc      openai.EmbeddingService
	// maxRetryDelay, when > 0, caps the backoff and the Retry-After the SDK
	// honours; tests shorten it.
	maxRetryDelay time.Duration
}

// NewOpenAI validates cfg and fills its defaults.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("openai embedder: Model is required")
	}
	if cfg.Dim <= 0 {
		return nil, fmt.Errorf("openai embedder: Dim must be the schema's vector dimension (KB_EMBEDDING_DIM), got %d", cfg.Dim)
	}
	if cfg.Dimensions < 0 {
		return nil, fmt.Errorf("openai embedder: Dimensions must not be negative, got %d", cfg.Dimensions)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultOpenAIBaseURL
	}
	if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai embedder: BaseURL %q must start with http:// or https://", redactor(cfg.APIKey).clean(cfg.BaseURL))
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 64
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 4
	} else if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	// The SDK's own per-attempt timeout ends the whole call instead of retrying
	// the attempt, so the attempt timeout is the client's.
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		hc = &c
	}
	hc.Timeout = cfg.Timeout
	opts := []option.RequestOption{
		option.WithHTTPClient(hc),
		option.WithBaseURL(cfg.BaseURL),
		option.WithMaxRetries(cfg.MaxRetries),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &OpenAI{
		cfg:      cfg,
		endpoint: strings.TrimRight(cfg.BaseURL, "/") + "/embeddings",
		// Built without openai.NewClient, which would read OPENAI_* variables.
		svc: openai.NewEmbeddingService(opts...),
	}, nil
}

// Name is "openai:<model>": vectors of different models are not comparable, so
// the model is part of cache keys and meta.
func (o *OpenAI) Name() string { return KindOpenAI + ":" + o.cfg.Model }

// Dim is the configured vector dimension.
func (o *OpenAI) Dim() int { return o.cfg.Dim }

// Check embeds one short text so that startup fails fast, with an actionable
// message, when the endpoint is unreachable, the key is wrong, or the model's
// dimension differs from the schema's.
func (o *OpenAI) Check(ctx context.Context) error {
	_, err := o.EmbedQuery(ctx, "canon embedding check")
	return err
}

// EmbedQuery embeds one text.
func (o *OpenAI) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	vecs, err := o.EmbedDocuments(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	return vecs[0], nil
}

// EmbedDocuments embeds texts in batches of BatchSize, one request at a time so
// that a rate-limited account is not hit by a burst.
func (o *OpenAI) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += o.cfg.BatchSize {
		batch := texts[start:min(start+o.cfg.BatchSize, len(texts))]
		vecs, err := o.embedBatch(ctx, batch)
		if err != nil {
			if len(texts) > len(batch) {
				return nil, fmt.Errorf("%w (batch of inputs %d–%d of %d)", err, start, start+len(batch)-1, len(texts))
			}
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (o *OpenAI) embedBatch(ctx context.Context, batch []string) ([][]float32, error) {
	params := openai.EmbeddingNewParams{
		Model:          o.cfg.Model,
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: batch},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	}
	if o.cfg.Dimensions > 0 {
		params.Dimensions = openai.Int(int64(o.cfg.Dimensions))
	}
	attempts := 0
	var httpResp *http.Response
	opts := []option.RequestOption{
		option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			attempts++
			return next(req)
		}),
		option.WithResponseInto(&httpResp),
	}
	if o.maxRetryDelay > 0 {
		opts = append(opts, option.WithMaxRetryDelay(o.maxRetryDelay))
	}
	res, err := o.svc.New(ctx, params, opts...)
	if err != nil {
		return nil, o.failure(ctx, err, httpResp, attempts)
	}
	return o.vectors(res, len(batch))
}

// failure turns an SDK error into one that names the endpoint and the server's
// own message. The SDK's error is never wrapped: it holds the request, whose
// headers carry the key.
func (o *OpenAI) failure(ctx context.Context, err error, httpResp *http.Response, attempts int) error {
	red := redactor(o.cfg.APIKey)
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", o.Name(), ctx.Err())
	}
	tries := ""
	if attempts > 1 {
		tries = fmt.Sprintf(" after %d attempts", attempts)
	}
	var detail string
	switch {
	case httpResp != nil && httpResp.StatusCode >= 400:
		var body []byte
		if httpResp.Body != nil {
			// The SDK leaves an error body readable; the cap only guards memory.
			body, _ = io.ReadAll(io.LimitReader(httpResp.Body, 64<<10))
		}
		detail = fmt.Sprintf("%d %s", httpResp.StatusCode, http.StatusText(httpResp.StatusCode))
		if msg := serverMessage(body); msg != "" {
			detail += ": " + msg
		}
	case httpResp != nil:
		detail = "unreadable response: " + err.Error()
	default:
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its URL is already in the message
		}
		detail = "no response: " + err.Error()
	}
	return fmt.Errorf("%s: POST %s%s: %s", o.Name(), o.endpoint, tries, red.clean(detail))
}

// vectors checks the response against the batch: one vector per input, each
// index once, each of the schema's dimension.
func (o *OpenAI) vectors(res *openai.CreateEmbeddingResponse, n int) ([][]float32, error) {
	if len(res.Data) != n {
		return nil, fmt.Errorf("%s: %s returned %d embeddings for %d inputs", o.Name(), o.endpoint, len(res.Data), n)
	}
	out := make([][]float32, n)
	for _, d := range res.Data {
		if d.Index < 0 || d.Index >= int64(n) || out[d.Index] != nil {
			return nil, fmt.Errorf("%s: %s returned an invalid or repeated index %d for %d inputs", o.Name(), o.endpoint, d.Index, n)
		}
		if len(d.Embedding) != o.cfg.Dim {
			return nil, o.dimError(len(d.Embedding))
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		out[d.Index] = v
	}
	return out, nil
}

// serverMessage extracts {"error":{"message":...}} (OpenAI, vLLM), {"error":"..."}
// (Ollama, TEI) or else a trimmed prefix of the body.
func serverMessage(body []byte) string {
	var withObject struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &withObject) == nil && withObject.Error.Message != "" {
		return withObject.Error.Message
	}
	var withString struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &withString) == nil && withString.Error != "" {
		return withString.Error
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func (o *OpenAI) dimError(got int) error {
	hint := fmt.Sprintf("migrate a new database with KB_EMBEDDING_DIM=%d and ingest into it, or choose a model that returns %d dimensions",
		got, o.cfg.Dim)
	if o.cfg.Dimensions == 0 && got > o.cfg.Dim {
		hint += fmt.Sprintf(" (models such as text-embedding-3-* can shorten their vectors: set KB_EMBEDDING_REQUEST_DIMENSIONS=%d)", o.cfg.Dim)
	}
	return fmt.Errorf("embedder %s returned %d-dimensional vectors but the database schema has %d (KB_EMBEDDING_DIM); %s",
		o.Name(), got, o.cfg.Dim, hint)
}

// redactor removes the API key from text that may echo it (some servers quote
// the rejected key in their error message).
type redactor string

func (r redactor) clean(s string) string {
	if r == "" {
		return s
	}
	return strings.ReplaceAll(s, string(r), "[redacted]")
}
