package llm

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	PromptPerMTok     float64
	CompletionPerMTok float64
}

func (p Price) cost(u Usage) float64 {
	return (float64(u.PromptTokens)*p.PromptPerMTok + float64(u.CompletionTokens)*p.CompletionPerMTok) / 1e6
}

// defaultPrices are list prices (USD per million tokens, standard tier, no
// caching or batch discounts) as published by OpenAI and Anthropic in 2025.
// They are indicative only: providers change them, and deployments override or
// extend them with ParsePrices (the chat layer reads an environment variable).
var defaultPrices = map[string]Price{
	"gpt-4o":            {2.50, 10.00},
	"gpt-4o-mini":       {0.15, 0.60},
	"gpt-4.1":           {2.00, 8.00},
	"gpt-4.1-mini":      {0.40, 1.60},
	"gpt-4.1-nano":      {0.10, 0.40},
	"gpt-5":             {1.25, 10.00},
	"gpt-5-mini":        {0.25, 2.00},
	"gpt-5-nano":        {0.05, 0.40},
	"o4-mini":           {1.10, 4.40},
	"claude-3-5-haiku":  {0.80, 4.00},
	"claude-haiku-4-5":  {1.00, 5.00},
	"claude-3-5-sonnet": {3.00, 15.00},
	"claude-3-7-sonnet": {3.00, 15.00},
	"claude-sonnet-4":   {3.00, 15.00},
	"claude-opus-4":     {15.00, 75.00},
	"claude-opus-4-1":   {15.00, 75.00},
	"claude-opus-4-5":   {5.00, 25.00},
}

// DefaultPrices returns a copy of the built-in, indicative price table.
func DefaultPrices() map[string]Price { return maps.Clone(defaultPrices) }

// Cost returns what usage u of model cost in US dollars according to prices,
// or 0 for a model the table does not know (local models, the extractive
// provider). A model matches its exact key, else the longest key it starts with
// followed by '-', ':', '@' or '/', so a dated snapshot such as
// "gpt-4o-mini-2024-07-18" or "claude-3-5-haiku-20241022" is priced like its
// family ("gpt-4o-mini", "claude-3-5-haiku"). Matching ignores case, and a
// routing prefix such as "openai/" is tried without it too.
func Cost(prices map[string]Price, model string, u Usage) float64 {
	p, ok := lookupPrice(prices, model)
	if !ok {
		return 0
	}
	return p.cost(u)
}

func lookupPrice(prices map[string]Price, model string) (Price, bool) {
	model = strings.ToLower(strings.TrimSpace(model))
	if model == "" || len(prices) == 0 {
		return Price{}, false
	}
	if p, ok := matchPrice(prices, model); ok {
		return p, true
	}
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		return matchPrice(prices, model[i+1:])
	}
	return Price{}, false
}

func matchPrice(prices map[string]Price, model string) (Price, bool) {
	best, bestLen, found := Price{}, -1, false
	for k, p := range prices {
		k = strings.ToLower(k)
		if k == model {
			return p, true
		}
		if len(k) > bestLen && len(model) > len(k) && strings.HasPrefix(model, k) && strings.IndexByte("-:@/", model[len(k)]) >= 0 {
			best, bestLen, found = p, len(k), true
		}
	}
	return best, found
}

// ParsePrices reads a price table in the form
//
//	gpt-4o-mini=0.15/0.60,claude-3-5-haiku=0.8/4
//
// (model=prompt/completion in USD per million tokens, comma-separated; spaces
// are ignored). An empty string yields an empty table. To extend the defaults
// rather than replace them: t := DefaultPrices(); maps.Copy(t, parsed).
func ParsePrices(s string) (map[string]Price, error) {
	out := map[string]Price{}
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		model, rates, ok := strings.Cut(entry, "=")
		model = strings.TrimSpace(model)
		if !ok || model == "" {
			return nil, fmt.Errorf("price %q: want model=prompt/completion (USD per million tokens)", entry)
		}
		in, outRate, ok := strings.Cut(rates, "/")
		if !ok {
			return nil, fmt.Errorf("price %q: want model=prompt/completion (USD per million tokens)", entry)
		}
		pin, err := parseRate(in)
		if err != nil {
			return nil, fmt.Errorf("price %q: prompt rate: %w", entry, err)
		}
		pout, err := parseRate(outRate)
		if err != nil {
			return nil, fmt.Errorf("price %q: completion rate: %w", entry, err)
		}
		if _, dup := out[model]; dup {
			return nil, fmt.Errorf("price for %q given twice", model)
		}
		out[model] = Price{PromptPerMTok: pin, CompletionPerMTok: pout}
	}
	return out, nil
}

func parseRate(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", strings.TrimSpace(s))
	}
	if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q must be a finite number >= 0", strings.TrimSpace(s))
	}
	return v, nil
}
