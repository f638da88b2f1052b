package llm

import (
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestCost(t *testing.T) {
	t.Parallel()
	u := Usage{PromptTokens: 1_000_000, CompletionTokens: 500_000}
	prices := DefaultPrices()
	tests := []struct {
		model string
		want  float64
	}{
		{"gpt-4o-mini", 0.15 + 0.30},
		{"gpt-4o-mini-2024-07-18", 0.15 + 0.30}, // dated snapshot: longest prefix, not gpt-4o
		{"gpt-4o-2024-08-06", 2.50 + 5.00},
		{"GPT-4o-Mini", 0.15 + 0.30},
		{"openai/gpt-4o-mini", 0.15 + 0.30},
		{"claude-3-5-haiku-20241022", 0.80 + 2.00},
		{"claude-sonnet-4-5-20250929", 3.00 + 7.50},
		{"claude-opus-4-5-20251101", 5.00 + 12.50},
		{"gpt-4", 0},       // not in the table, and not a prefix match of gpt-4o
		{"gpt-4o2", 0},     // a prefix must end at a separator
		{"llama3.1:8b", 0}, // local model
		{"extractive-v9", 0},
		{"", 0},
	}
	for _, tc := range tests {
		if got := Cost(prices, tc.model, u); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Cost(%q) = %v, want %v", tc.model, got, tc.want)
		}
	}
	if got := Cost(nil, "gpt-4o-mini", u); got != 0 {
		t.Errorf("Cost with no table = %v", got)
	}
	if got := Cost(map[string]Price{"llama3.1": {1, 2}}, "llama3.1:8b", Usage{PromptTokens: 2e6, CompletionTokens: 1e6}); got != 4 {
		t.Errorf("Ollama tag = %v, want 4", got)
	}
}

func TestDefaultPricesIsACopy(t *testing.T) {
	t.Parallel()
	p := DefaultPrices()
	p["gpt-4o-mini"] = Price{100, 100}
	if DefaultPrices()["gpt-4o-mini"].PromptPerMTok != 0.15 {
		t.Error("DefaultPrices returned the shared table")
	}
}

func TestParsePrices(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    map[string]Price
		wantErr string
	}{
		{"gpt-4o-mini=0.15/0.60,claude-3-5-haiku=0.8/4", map[string]Price{"gpt-4o-mini": {0.15, 0.60}, "claude-3-5-haiku": {0.8, 4}}, ""},
		{" llama3.1 = 0 / 0 , ", map[string]Price{"llama3.1": {0, 0}}, ""},
		{"", map[string]Price{}, ""},
		{"gpt-4o-mini", nil, "want model=prompt/completion"},
		{"=1/2", nil, "want model=prompt/completion"},
		{"m=1", nil, "want model=prompt/completion"},
		{"m=x/2", nil, "prompt rate"},
		{"m=1/-2", nil, "completion rate"},
		{"m=1/Inf", nil, "completion rate"},
		{"m=1/2,m=3/4", nil, "given twice"},
	}
	for _, tc := range tests {
		got, err := ParsePrices(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParsePrices(%q) err = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParsePrices(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestCostOfProvider(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { openAIStream(w, "ok") })
	custom := map[string]Price{"my-model": {PromptPerMTok: 1e6, CompletionPerMTok: 2e6}}
	p := newTestOpenAI(t, srv.URL, func(c *OpenAIConfig) { c.Model = "my-model"; c.Prices = custom })
	resp, err := p.Stream(testContext(t), testRequest, (&collector{}).add)
	if err != nil {
		t.Fatal(err)
	}
	// The server reports gpt-4o-mini-2024-07-18, which the custom table does not
	// know, so the configured model's price applies: 42*1 + 7*2.
	if got := CostOf(p, resp); got != 56 {
		t.Errorf("CostOf = %v, want 56", got)
	}
	d := newTestOpenAI(t, srv.URL, nil) // default table
	if got, want := CostOf(d, resp), (42*0.15+7*0.60)/1e6; math.Abs(got-want) > 1e-15 {
		t.Errorf("CostOf with defaults = %v, want %v", got, want)
	}
	if got := CostOf(NewExtractive(), Response{Usage: Usage{PromptTokens: 1000}}); got != 0 {
		t.Errorf("extractive cost = %v", got)
	}
}
