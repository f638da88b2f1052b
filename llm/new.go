package llm

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Kinds of provider New accepts.
const (
	KindExtractive = "extractive"
	KindOpenAI     = "openai"
	KindAnthropic  = "anthropic"
)

// Kinds lists the values New accepts, for configuration errors and help texts.
func Kinds() []string { return []string{KindExtractive, KindOpenAI, KindAnthropic} }

// Config is the provider-independent configuration New maps onto OpenAIConfig
// or AnthropicConfig; zero values mean each provider's defaults. The extractive
// provider uses none of it.
type Config struct {
	BaseURL     string
	Model       string
	APIKey      string
	Timeout     time.Duration
	MaxRetries  int // 0: DefaultMaxRetries; negative: none
	Temperature *float64
	MaxTokens   int
	HTTPClient  *http.Client
	Prices      map[string]Price // nil: DefaultPrices()
	// AnthropicVersion is the anthropic-version header (anthropic only).
	AnthropicVersion string
}

// New builds the provider a deployment is configured with: "extractive" (also
// for an empty kind), "openai" (any OpenAI-compatible server) or "anthropic".
func New(kind string, cfg Config) (Provider, error) {
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case "", KindExtractive:
		return NewExtractive(), nil
	case KindOpenAI:
		return NewOpenAI(OpenAIConfig{
			BaseURL: cfg.BaseURL, Model: cfg.Model, APIKey: cfg.APIKey,
			Timeout: cfg.Timeout, MaxRetries: cfg.MaxRetries, Temperature: cfg.Temperature,
			MaxTokens: cfg.MaxTokens, HTTPClient: cfg.HTTPClient, Prices: cfg.Prices,
		})
	case KindAnthropic:
		return NewAnthropic(AnthropicConfig{
			BaseURL: cfg.BaseURL, Model: cfg.Model, APIKey: cfg.APIKey, Version: cfg.AnthropicVersion,
			Timeout: cfg.Timeout, MaxRetries: cfg.MaxRetries, Temperature: cfg.Temperature,
			MaxTokens: cfg.MaxTokens, HTTPClient: cfg.HTTPClient, Prices: cfg.Prices,
		})
	default:
		return nil, fmt.Errorf("unknown language model provider %q (valid: %s)", kind, strings.Join(Kinds(), ", "))
	}
}

// CostOf returns what resp cost in US dollars by p's price table, or 0 for a
// provider without one (the extractive provider, or a model not in the table).
func CostOf(p Provider, resp Response) float64 {
	if c, ok := p.(interface{ CostUSD(Response) float64 }); ok {
		return c.CostUSD(resp)
	}
	return 0
}
