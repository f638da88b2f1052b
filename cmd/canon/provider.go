package main

import (
	"fmt"

	"github.com/canonkb/canon/config"
	"github.com/canonkb/canon/llm"
)

// Default models when KB_LLM_MODEL is unset.
const (
	defaultOpenAIModel    = "gpt-4o-mini"
	defaultAnthropicModel = "claude-3-5-haiku-latest"
)

// newProvider builds the language model named by KB_LLM_PROVIDER.
func newProvider(cfg config.Config, prices map[string]llm.Price) (llm.Provider, error) {
	switch cfg.LLMProvider {
	case "extractive":
		return llm.NewExtractive(), nil
	case "openai":
		model := cfg.LLMModel
		if model == "" {
			model = defaultOpenAIModel
		}
		return llm.NewOpenAI(llm.OpenAIConfig{
			BaseURL: cfg.LLMBaseURL, Model: model, APIKey: cfg.LLMAPIKey, Timeout: cfg.LLMTimeout,
			MaxRetries: cfg.LLMMaxRetries, MaxTokens: cfg.LLMMaxTokens,
		})
	case "anthropic":
		model := cfg.LLMModel
		if model == "" {
			model = defaultAnthropicModel
		}
		return llm.NewAnthropic(llm.AnthropicConfig{
			BaseURL: cfg.LLMBaseURL, Model: model, APIKey: cfg.LLMAPIKey, Timeout: cfg.LLMTimeout,
			MaxRetries: cfg.LLMMaxRetries, MaxTokens: cfg.LLMMaxTokens,
		})
	}
	return nil, fmt.Errorf("KB_LLM_PROVIDER %q: use extractive, openai or anthropic", cfg.LLMProvider)
}
