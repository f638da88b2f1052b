package embed

import (
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	t.Parallel()
	oc := OpenAIConfig{Model: "nomic-embed-text", BaseURL: "http://localhost:11434/v1"}
	cases := []struct {
		kind     string
		dim      int
		oc       OpenAIConfig
		wantName string
		wantErr  string
	}{
		{kind: "hash", dim: 384, wantName: "hash"},
		{kind: " Hash ", dim: 768, wantName: "hash"},
		{kind: "openai", dim: 768, oc: oc, wantName: "openai:nomic-embed-text"},
		{kind: "openai", dim: 768, oc: OpenAIConfig{Model: "m", Dim: 768}, wantName: "openai:m"},
		{kind: "openai", dim: 768, oc: OpenAIConfig{Model: "m", Dim: 1536}, wantErr: "1536 dimensions but the database schema has 768"},
		{kind: "openai", dim: 768, wantErr: "Model is required"},
		{kind: "hash", dim: 0, wantErr: "must be positive"},
		{kind: "sentence-transformers", dim: 384, wantErr: `unknown embedder "sentence-transformers" (valid: hash, openai)`},
		{kind: "", dim: 384, wantErr: "valid: hash, openai"},
	}
	for _, c := range cases {
		t.Run(c.kind+"/"+c.wantName+c.wantErr, func(t *testing.T) {
			e, err := New(c.kind, c.dim, c.oc)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Name() != c.wantName || e.Dim() != c.dim {
				t.Errorf("Name/Dim = %q/%d, want %q/%d", e.Name(), e.Dim(), c.wantName, c.dim)
			}
		})
	}
}
