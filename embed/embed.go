package embed

import (
	"context"
	"fmt"
	"strings"
)

// Embedder turns text into vectors of a fixed dimension.
type Embedder interface {
	Name() string // "hash" or "openai:<model>", used in cache keys and meta
	Dim() int
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
}

// Kinds of embedder New accepts.
const (
	KindHash   = "hash"
	KindOpenAI = "openai"
)

// Kinds lists the values New accepts, for configuration errors and help texts.
func Kinds() []string { return []string{KindHash, KindOpenAI} }

// New builds the embedder a deployment is configured with. dim is the vector
// dimension of the database schema (KB_EMBEDDING_DIM); every embedder must
// produce exactly that many dimensions. oc is used only by "openai".
func New(kind string, dim int, oc OpenAIConfig) (Embedder, error) {
	if dim <= 0 {
		return nil, fmt.Errorf("embedding dimension must be positive, got %d (KB_EMBEDDING_DIM)", dim)
	}
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case KindHash:
		return NewHash(dim), nil
	case KindOpenAI:
		if oc.Dim != 0 && oc.Dim != dim {
			return nil, fmt.Errorf("openai embedder configured for %d dimensions but the database schema has %d (KB_EMBEDDING_DIM)", oc.Dim, dim)
		}
		oc.Dim = dim
		return NewOpenAI(oc)
	default:
		return nil, fmt.Errorf("unknown embedder %q (valid: %s)", kind, strings.Join(Kinds(), ", "))
	}
}
