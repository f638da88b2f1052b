package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/chat"
	"github.com/canonkb/canon/chatlog"
	"github.com/canonkb/canon/config"
	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/hierarchy"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/llm"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/search"
)

// app is canon wired from its configuration.
type app struct {
	cfg      config.Config
	pool     *pgxpool.Pool
	embedder embed.Embedder
	searcher *search.Searcher
	// hierarchy answers SearchService.Search, `canon search` and the chat turn's
	// retrieval: the two-pass entity-guided search over searcher.
	hierarchy *hierarchy.Searcher
	ingester  *ingest.Ingester
	chat      *chat.Service
	chatLog   *chatlog.Logger
}

func loadConfig(databaseURL string) (config.Config, error) {
	cfg, err := config.Load()
	if err != nil {
		return cfg, err
	}
	if databaseURL != "" {
		cfg.DatabaseURL = databaseURL
	}
	return cfg, nil
}

// openApp connects and checks that the embedder matches the schema's dimension,
// so a mismatch is one clear message at startup.
func openApp(ctx context.Context, cfg config.Config) (*app, error) {
	pool, err := postgres.Connect(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	dim, err := postgres.EmbeddingDim(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if cfg.Embedder == "hash" && dim != cfg.EmbeddingDim {
		// The hash embedder can produce any width: follow the schema.
		cfg.EmbeddingDim = dim
	}
	if dim != cfg.EmbeddingDim {
		pool.Close()
		return nil, fmt.Errorf("KB_EMBEDDING_DIM is %d but the database's chunks.embedding is vector(%d): "+
			"set KB_EMBEDDING_DIM=%d or migrate a new database", cfg.EmbeddingDim, dim, dim)
	}
	base, err := embed.New(cfg.Embedder, cfg.EmbeddingDim, embed.OpenAIConfig{
		BaseURL: cfg.EmbeddingBaseURL, Model: cfg.EmbeddingModel, APIKey: cfg.EmbeddingAPIKey,
		BatchSize: cfg.EmbeddingBatchSize, Timeout: cfg.EmbeddingTimeout, MaxRetries: cfg.EmbeddingMaxRetries,
		Dim: cfg.EmbeddingDim, Dimensions: cfg.EmbeddingRequestDimensions,
	})
	if err != nil {
		pool.Close()
		return nil, err
	}
	if checker, ok := base.(interface{ Check(context.Context) error }); ok {
		if err := checker.Check(ctx); err != nil {
			pool.Close()
			return nil, err
		}
	}
	embedder := embed.NewCachedQueries(base, cfg.QueryCacheSize, cfg.QueryCacheTTL)
	ranking, err := cfg.RankingDefaults()
	if err != nil {
		pool.Close()
		return nil, err
	}
	a := &app{cfg: cfg, pool: pool, embedder: embedder}
	a.searcher = search.New(pool, embedder, search.Config{
		Ranking: ranking, Profile: cfg.Profile(), DefaultLimit: cfg.DefaultLimit, DefaultFusion: cfg.Fusion,
		Graph: search.GraphConfig{
			Expansion: cfg.GraphExpansionEnabled, EdgeTypes: cfg.GraphExpansionEdgeTypes, MaxNodes: cfg.GraphExpansionMaxNodes,
			MaxPerSeed: cfg.GraphExpansionMaxPerSeed, HubTypes: cfg.GraphExpansionHubTypes, SeedGate: cfg.Gate(),
			RejectedInjection: cfg.RejectedInjectionEnabled, RejectedMaxDocs: cfg.RejectedInjectionMaxDocs,
			RejectedMinSimilarity: cfg.RejectedMinSimilarity,
		},
	})
	hcfg := hierarchyConfig(cfg)
	if err := hcfg.Validate(); err != nil {
		pool.Close()
		return nil, err
	}
	a.hierarchy = hierarchy.New(pool, a.searcher, hcfg)
	a.ingester = ingest.New(pool, embedder, markdown.Options{ChunkTokens: cfg.ChunkTokens, OverlapTokens: cfg.ChunkOverlap})
	a.ingester.Workers = cfg.IngestWorkers
	// An ingest that changed a project drops the two-pass caches' entries for it.
	afterChange := a.ingester.AfterChange
	a.ingester.AfterChange = func(projectKeys []string) {
		if afterChange != nil {
			afterChange(projectKeys)
		}
		a.hierarchy.Invalidate(projectKeys)
	}
	if err := a.openChat(); err != nil {
		pool.Close()
		return nil, err
	}
	return a, nil
}

// openChat builds the chat turn: provider, prompt template, logger.
func (a *app) openChat() error {
	cfg := a.cfg
	prices := llm.DefaultPrices()
	if cfg.LLMPrices != "" {
		extra, err := llm.ParsePrices(cfg.LLMPrices)
		if err != nil {
			return fmt.Errorf("KB_LLM_PRICES: %w", err)
		}
		maps.Copy(prices, extra)
	}
	provider, err := newProvider(cfg, prices)
	if err != nil {
		return err
	}
	tmpl := domain.DefaultPromptTemplate()
	if cfg.PromptTemplate != "" {
		b, err := os.ReadFile(cfg.PromptTemplate)
		if err != nil {
			return fmt.Errorf("KB_PROMPT_TEMPLATE: %w", err)
		}
		tmpl = string(b)
	}
	prompt, err := domain.ParsePrompt(tmpl)
	if err != nil {
		return err
	}
	a.chatLog = chatlog.New(a.pool, cfg.ChatLogQueue, slog.Default())
	a.chat = chat.New(a.hierarchy, provider, prompt, a.chatLog, chat.Config{
		Gate:             cfg.Gate(),
		SupportThreshold: cfg.CitationSupportThreshold,
		Prices:           prices,
		MaxTokens:        cfg.LLMMaxTokens,
	})
	return nil
}

// Close drains the chat log (briefly) and closes the pool.
func (a *app) Close() {
	if a.chatLog != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		a.chatLog.Close(ctx)
		cancel()
	}
	a.pool.Close()
}
