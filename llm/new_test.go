package llm

import (
	"strings"
	"testing"
	"time"
)

// The providers implement Provider.
var (
	_ Provider = (*Extractive)(nil)
	_ Provider = (*OpenAI)(nil)
	_ Provider = (*Anthropic)(nil)
)

func TestNew(t *testing.T) {
	t.Parallel()
	cfg := Config{BaseURL: "http://localhost:11434/v1", Model: "llama3.1:8b", Timeout: time.Second, MaxRetries: -1, MaxTokens: 64}
	tests := []struct {
		kind      string
		cfg       Config
		wantName  string
		wantModel string
		wantErr   string
	}{
		{"", Config{}, "extractive", "extractive-v9", ""},
		{"extractive", Config{}, "extractive", "extractive-v9", ""},
		{" OpenAI ", cfg, "openai", "llama3.1:8b", ""},
		{"anthropic", Config{Model: "claude-3-5-haiku-latest", APIKey: "k"}, "anthropic", "claude-3-5-haiku-latest", ""},
		{"openai", Config{}, "", "", "Model is required"},
		{"anthropic", Config{Model: "claude-3-5-haiku-latest"}, "", "", "APIKey is required"},
		{"gemini", Config{}, "", "", "valid: extractive, openai, anthropic"},
	}
	for _, tc := range tests {
		p, err := New(tc.kind, tc.cfg)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("New(%q) err = %v, want %q", tc.kind, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("New(%q): %v", tc.kind, err)
			continue
		}
		if p.Name() != tc.wantName || p.Model() != tc.wantModel {
			t.Errorf("New(%q) = %s/%s, want %s/%s", tc.kind, p.Name(), p.Model(), tc.wantName, tc.wantModel)
		}
	}
	p, _ := New("openai", cfg)
	o := p.(*OpenAI)
	if o.timeout != time.Second || o.maxRetries != 0 || o.maxTokens != 64 {
		t.Errorf("config not carried over: timeout %s, retries %d, max tokens %d", o.timeout, o.maxRetries, o.maxTokens)
	}
}
