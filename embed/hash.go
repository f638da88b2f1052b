package embed

import (
	"context"
	"sync"

	"github.com/canonkb/canon/embed/internal/hashfeat"
)

// DefaultHashDim is the hash embedder's dimension when none is given.
const DefaultHashDim = 384

// Hash is the model-free embedder: signed feature hashing of character n-grams.
// It needs no network and no corpus statistics, so a vector never goes stale as
// the corpus grows. See the package documentation for what it captures and the
// measurements behind its design.
type Hash struct {
	dim     int
	cfg     hashfeat.Config
	scratch sync.Pool // *hashfeat.Scratch: reused maps and buffers, one per concurrent call
}

// hashConfig is the shipped feature function. Changing it changes every vector:
// stored embeddings must then be recomputed, since Name() stays "hash".
func hashConfig() hashfeat.Config {
	return hashfeat.Config{MinN: 3, MaxN: 5, WordWeight: 1, StopWeight: 0}
}

// NewHash returns a hash embedder of dimension dim (DefaultHashDim when dim <= 0).
func NewHash(dim int) *Hash {
	if dim <= 0 {
		dim = DefaultHashDim
	}
	return &Hash{
		dim:     dim,
		cfg:     hashConfig(),
		scratch: sync.Pool{New: func() any { return hashfeat.NewScratch() }},
	}
}

// Name identifies the feature function in cache keys and response meta.
func (h *Hash) Name() string { return KindHash }

// Dim is the vector dimension.
func (h *Hash) Dim() int { return h.dim }

// EmbedDocuments embeds each text. Documents and queries share one function: the
// embedding is symmetric.
func (h *Hash) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	// One backing array keeps a large batch to a single allocation.
	flat := make([]float32, len(texts)*h.dim)
	s := h.scratch.Get().(*hashfeat.Scratch)
	defer h.scratch.Put(s)
	for i, t := range texts {
		// A long ingest should still stop promptly when its caller gives up.
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = flat[i*h.dim : (i+1)*h.dim : (i+1)*h.dim]
		h.cfg.Embed(t, out[i], nil, s)
	}
	return out, nil
}

// EmbedQuery embeds one text. A text without letters or digits yields the zero
// vector, whose cosine distance to everything is undefined; callers should skip
// the vector leg for it.
func (h *Hash) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]float32, h.dim)
	s := h.scratch.Get().(*hashfeat.Scratch)
	h.cfg.Embed(text, out, nil, s)
	h.scratch.Put(s)
	return out, nil
}
