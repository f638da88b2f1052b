package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

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
	"github.com/canonkb/canon/telemetry"
)

// app is canon wired from its configuration.
type app struct {
	cfg  config.Config
	pool *pgxpool.Pool
	// reads routes search, chat retrieval, graph show and content gaps to the
	// read replicas (nil without KB_DATABASE_REPLICA_URLS).
	reads    *postgres.Reads
	embedder embed.Embedder
	searcher *search.Searcher
	// hierarchy answers SearchService.Search, `canon search` and the chat turn's
	// retrieval: the two-pass entity-guided search over searcher.
	hierarchy *hierarchy.Searcher
	ingester  *ingest.Ingester
	chat      *chat.Service
	chatLog   *chatlog.Logger
	obs       observability
	// stopListening ends listen (nil when it was not started).
	stopListening func()
}

func loadConfig(databaseURL string) (config.Config, error) {
	cfg, err := config.Load()
	if err != nil {
		return cfg, err
	}
	if databaseURL != "" {
		cfg.DatabaseURL = databaseURL
	}
	// In the URL, so every connection canon opens (pool, migrations) uses it.
	cfg.DatabaseURL = postgres.WithExecMode(cfg.DatabaseURL, cfg.DatabaseExecMode)
	for i, url := range cfg.DatabaseReplicaURLs {
		cfg.DatabaseReplicaURLs[i] = postgres.WithExecMode(strings.TrimSpace(url), cfg.DatabaseExecMode)
	}
	return cfg, nil
}

// observability is what `canon serve` adds to the app: metrics, traces, its logger.
// The zero value adds nothing (the other commands).
type observability struct {
	metrics *telemetry.Metrics
	tracer  trace.TracerProvider
	log     *slog.Logger
}

// stages is the stage observer the core packages report to (nil without metrics).
func (o observability) stages() domain.StageObserver {
	if o.metrics == nil {
		return nil
	}
	return o.metrics.ObserveStage
}

// refused counts chat refusals (nil without metrics).
func (o observability) refused() func(reason string) {
	if o.metrics == nil {
		return nil
	}
	return o.metrics.Refusal
}

// openApp connects and checks that the embedder matches the schema's dimension,
// so a mismatch is one clear message at startup.
func openApp(ctx context.Context, cfg config.Config) (*app, error) {
	return openObservedApp(ctx, cfg, observability{})
}

// openObservedApp is openApp reporting to obs.
func openObservedApp(ctx context.Context, cfg config.Config, obs observability) (*app, error) {
	var configure []func(*pgxpool.Config)
	if obs.tracer != nil {
		configure = append(configure, func(c *pgxpool.Config) { c.ConnConfig.Tracer = telemetry.PgxTracer(obs.tracer) })
	}
	pool, err := postgres.Connect(ctx, cfg.DatabaseURL, configure...)
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
	if err := checkVectorType(ctx, pool, &cfg); err != nil {
		pool.Close()
		return nil, err
	}
	if err := checkTableLayout(ctx, pool, &cfg); err != nil {
		pool.Close()
		return nil, err
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
	embedder := base
	if cfg.QueryCacheSize > 0 { // 0 turns the cache off (KB_QUERY_CACHE_SIZE)
		embedder = embed.NewCachedQueries(base, cfg.QueryCacheSize, cfg.QueryCacheTTL)
	}
	if obs.metrics != nil || obs.tracer != nil {
		embedder = telemetry.InstrumentEmbedder(embedder, obs.tracer, obs.stages())
	}
	ranking, err := cfg.RankingDefaults()
	if err != nil {
		pool.Close()
		return nil, err
	}
	reads, err := postgres.NewReads(ctx, pool, cfg.DatabaseReplicaURLs, postgres.ReadsOptions{
		CheckInterval: cfg.DatabaseReplicaCheckInterval, MaxWait: cfg.DatabaseReplicaMaxWait, Log: obs.log}, configure...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	a := &app{cfg: cfg, pool: pool, reads: reads, embedder: embedder, obs: obs}
	a.searcher = search.New(pool, embedder, search.Config{
		Ranking: ranking, Profile: cfg.Profile(), DefaultLimit: cfg.DefaultLimit, DefaultFusion: cfg.Fusion,
		Graph: search.GraphConfig{
			Expansion: cfg.GraphExpansionEnabled, EdgeTypes: cfg.GraphExpansionEdgeTypes, MaxNodes: cfg.GraphExpansionMaxNodes,
			MaxPerSeed: cfg.GraphExpansionMaxPerSeed, HubTypes: cfg.GraphExpansionHubTypes, SeedGate: cfg.Gate(),
			RejectedInjection: cfg.RejectedInjectionEnabled, RejectedMaxDocs: cfg.RejectedInjectionMaxDocs,
			RejectedMinSimilarity: cfg.RejectedMinSimilarity,
		},
		Stages: obs.stages(),
	})
	a.searcher.Reads = reads
	hcfg := hierarchyConfig(cfg)
	hcfg.Stages = obs.stages()
	if err := hcfg.Validate(); err != nil {
		reads.Close()
		pool.Close()
		return nil, err
	}
	a.hierarchy = hierarchy.New(pool, a.searcher, hcfg)
	a.ingester = ingest.New(pool, embedder, markdown.Options{ChunkTokens: cfg.ChunkTokens, OverlapTokens: cfg.ChunkOverlap})
	a.ingester.Workers = cfg.IngestWorkers
	a.ingester.Bulk = bulkPolicy(cfg)
	// An ingest that changed a project drops the two-pass caches' entries for it.
	afterChange := a.ingester.AfterChange
	a.ingester.AfterChange = func(projectKeys []string) {
		// Read-your-writes: the reads after this ingest wait for a replica to have it.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := a.reads.Wrote(ctx); err != nil {
			a.logger().Warn("reading the primary's WAL position after an ingest failed", "err", err)
		}
		cancel()
		if afterChange != nil {
			afterChange(projectKeys)
		}
		a.hierarchy.Invalidate(projectKeys)
		a.searcher.ForgetLanguages()
	}
	if err := a.openChat(); err != nil {
		reads.Close()
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
	if a.obs.metrics != nil || a.obs.tracer != nil {
		provider = telemetry.InstrumentProvider(provider, a.obs.tracer, a.obs.stages())
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
	a.chatLog = chatlog.New(a.pool, cfg.ChatLogQueue, a.logger())
	if a.obs.metrics != nil {
		a.obs.metrics.Register(telemetry.PoolCollector(a.pool), telemetry.ChatLogCollector(a.chatLog.Stats))
	}
	a.chat = chat.New(a.hierarchy, provider, prompt, a.chatLog, chat.Config{
		Gate:             cfg.Gate(),
		SupportThreshold: cfg.CitationSupportThreshold,
		Prices:           prices,
		MaxTokens:        cfg.LLMMaxTokens,
		Stages:           a.obs.stages(),
		Refused:          a.obs.refused(),
	})
	return nil
}

// Close drains the chat log (briefly) and closes the pool. The chat log may
// still be called by a request that outlived the server's shutdown: its entry is
// dropped and counted, never a panic.
func (a *app) Close() {
	if a.stopListening != nil {
		a.stopListening()
	}
	if a.chatLog != nil {
		ctx, cancel := context.WithTimeout(context.Background(), chatLogFlushTimeout)
		a.chatLog.Close(ctx)
		cancel()
	}
	a.reads.Close()
	a.pool.Close()
}

// listen keeps the app's caches in step with other processes' writes until
// Close: the projects' languages (search) and the two-pass entity caches
// (hierarchy). For the long-lived commands (serve, mcp); a one-shot command
// reads everything once anyway.
func (a *app) listen() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	l := postgres.Listener{
		Channels: []string{postgres.ChannelLanguages, postgres.ChannelChanges},
		Notify: func(channel, payload string) {
			switch channel {
			case postgres.ChannelLanguages:
				a.searcher.ForgetLanguages()
			case postgres.ChannelChanges:
				a.hierarchy.Invalidate([]string{payload})
			}
		},
		Listening: func() {
			a.searcher.ForgetLanguages()
			a.hierarchy.Forget()
		},
		Log: a.logger(),
	}
	go func() {
		defer close(done)
		l.Run(ctx, a.pool)
	}()
	a.stopListening = func() {
		cancel()
		<-done
	}
}

// logger is the app's logger: serve's, or the default.
func (a *app) logger() *slog.Logger {
	if a.obs.log != nil {
		return a.obs.log
	}
	return slog.Default()
}

// chatLogFlushTimeout bounds how long closing waits for queued chat-log rows.
const chatLogFlushTimeout = 3 * time.Second

// checkVectorType makes the database the truth about how embeddings are stored:
// cfg follows it, and a KB_VECTOR_TYPE naming the other type is an error that
// says how to convert (the statements would run, but not on the storage the
// operator asked for).
func checkVectorType(ctx context.Context, pool *pgxpool.Pool, cfg *config.Config) error {
	stored, err := postgres.EmbeddingType(ctx, pool)
	if err != nil {
		return err
	}
	if cfg.VectorType != "" && cfg.VectorType != stored {
		return fmt.Errorf("KB_VECTOR_TYPE is %s but the database stores chunks.embedding as %s: "+
			"run `canon migrate up` with KB_VECTOR_TYPE=%s to convert it (rewrites the chunks and rebuilds their HNSW indexes), "+
			"or unset KB_VECTOR_TYPE to use the database as it is", cfg.VectorType, stored, cfg.VectorType)
	}
	cfg.VectorType = stored
	return nil
}

// checkTableLayout makes the database the truth about the table layout, as
// checkVectorType does for the embedding type.
func checkTableLayout(ctx context.Context, pool *pgxpool.Pool, cfg *config.Config) error {
	stored, err := postgres.TableLayout(ctx, pool)
	if err != nil {
		return err
	}
	if cfg.TableLayout != "" && cfg.TableLayout != stored {
		return fmt.Errorf("KB_TABLE_LAYOUT is %s but the database's chunks, postings and lexeme_stats are %s: "+
			"run `canon migrate up` with KB_TABLE_LAYOUT=%s to convert them (copies every row and rebuilds every index), "+
			"or unset KB_TABLE_LAYOUT to use the database as it is", cfg.TableLayout, stored, cfg.TableLayout)
	}
	cfg.TableLayout = stored
	return nil
}

// checkSchema refuses a database whose schema is behind this binary's embedded
// migrations: a server would start and fail on the first query that needs the
// missing ones. A schema ahead (a newer canon migrated it) is served, with a
// warning, so an older binary keeps serving during a rolling upgrade.
func checkSchema(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	applied, embedded, err := postgres.MigrationVersions(ctx, pool)
	switch {
	case err != nil:
		return err
	case applied < embedded:
		return fmt.Errorf("the database's schema is at migration %d but this binary's go up to %d: run `canon migrate up`, then start again",
			applied, embedded)
	case applied > embedded:
		log.Warn("the database's schema is newer than this binary (upgrade canon to the release that migrated it)",
			"schema", applied, "binary", embedded)
	}
	return nil
}

// bulkPolicy is when an ingest builds the vector index after its rows, and how.
func bulkPolicy(cfg config.Config) ingest.BulkPolicy {
	return ingest.BulkPolicy{MinChunks: cfg.IngestBulkMinChunks, Ratio: cfg.IngestBulkRatio,
		BuildMemory: cfg.IndexBuildMemory, BuildWorkers: cfg.IndexBuildWorkers}
}
