// Package config reads canon's settings from the environment (DATABASE_URL and the
// KB_* variables). Command-line flags override what it reads; the README lists
// every variable with its default.
package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/caarlos0/env/v11"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/postgres"
)

// memorySetting is a PostgreSQL memory size (maintenance_work_mem's units).
var memorySetting = regexp.MustCompile(`^[1-9][0-9]*(kB|MB|GB|TB)$`)

// Config is everything canon reads from its environment.
type Config struct {
	DatabaseURL string `env:"DATABASE_URL"`
	// How pgx sends statements (pgx.QueryExecMode); empty keeps the URL's
	// default_query_exec_mode or pgx's cache_statement. See postgres.ExecModes.
	DatabaseExecMode string `env:"KB_DATABASE_EXEC_MODE"`
	// Streaming replicas that serve reads (search, chat retrieval, graph show,
	// content gaps); see postgres.Reads.
	DatabaseReplicaURLs []string `env:"KB_DATABASE_REPLICA_URLS" envSeparator:","`
	// How long a read waits for a replica to replay this process's latest write
	// before reading from the primary; how often replicas are checked.
	DatabaseReplicaMaxWait       time.Duration `env:"KB_DATABASE_REPLICA_MAX_WAIT" envDefault:"1s"`
	DatabaseReplicaCheckInterval time.Duration `env:"KB_DATABASE_REPLICA_CHECK_INTERVAL" envDefault:"1s"`
	ListenAddr                   string        `env:"KB_LISTEN_ADDR" envDefault:"127.0.0.1:8787"`
	// Logs: "text" or "json" (KB_LOG_FORMAT), one line per request.
	LogFormat string `env:"KB_LOG_FORMAT" envDefault:"text"`
	// How long `canon serve` lets requests in flight finish after SIGTERM/SIGINT
	// (0: cancel them at once).
	ShutdownTimeout time.Duration `env:"KB_SHUTDOWN_TIMEOUT" envDefault:"10s"`

	// Access control (package auth): required needs an API key on every route but
	// /healthz and /metrics; off is refused by canon serve on a non-loopback address.
	Auth string `env:"KB_AUTH" envDefault:"off"`
	// Each key's token bucket (requests a second, burst); 0 turns it off.
	RateLimit float64 `env:"KB_RATE_LIMIT" envDefault:"20"`
	RateBurst int     `env:"KB_RATE_BURST" envDefault:"40"`
	// Concurrent streaming calls (ChatStream) per key; 0 turns the cap off.
	MaxStreamsPerKey int `env:"KB_MAX_STREAMS_PER_KEY" envDefault:"4"`
	// MCP sessions (Streamable HTTP, /mcp) one key holds open; a new one past it
	// closes the key's oldest. 0 turns the cap off.
	MCPSessionsPerKey int `env:"KB_MCP_SESSIONS_PER_KEY" envDefault:"16"`
	// With KB_AUTH=off the server answers only requests addressed to localhost or a
	// loopback address (a web page elsewhere cannot reach it through a DNS name that
	// points at 127.0.0.1); these host names are answered too (comma-separated).
	AllowedHosts []string `env:"KB_ALLOWED_HOSTS" envSeparator:","`

	Embedder     string `env:"KB_EMBEDDER" envDefault:"hash"`
	EmbeddingDim int    `env:"KB_EMBEDDING_DIM" envDefault:"384"`
	// How chunks.embedding is stored: vector (4 bytes a dimension) or halfvec (2).
	// Migration gives a new database this type (vector when unset) and `canon
	// migrate up` converts an existing one to it; other commands follow the
	// database and refuse to start when this is set to the other type.
	VectorType string `env:"KB_VECTOR_TYPE"`
	// How chunks, postings and lexeme_stats are laid out: single (one table each)
	// or partitioned (a partition per project). Like KB_VECTOR_TYPE, migration
	// gives a new database this layout (single when unset), `canon migrate up`
	// converts an existing one, other commands follow the database.
	TableLayout string `env:"KB_TABLE_LAYOUT"`
	// OpenAI-compatible embeddings endpoint (KB_EMBEDDER=openai).
	EmbeddingBaseURL    string        `env:"KB_EMBEDDING_BASE_URL" envDefault:"https://api.openai.com/v1"`
	EmbeddingModel      string        `env:"KB_EMBEDDING_MODEL" envDefault:"text-embedding-3-small"`
	EmbeddingAPIKey     string        `env:"KB_EMBEDDING_API_KEY"`
	EmbeddingBatchSize  int           `env:"KB_EMBEDDING_BATCH_SIZE" envDefault:"64"`
	EmbeddingTimeout    time.Duration `env:"KB_EMBEDDING_TIMEOUT" envDefault:"30s"`
	EmbeddingMaxRetries int           `env:"KB_EMBEDDING_MAX_RETRIES" envDefault:"4"`
	// Send `dimensions` to models that can shorten their vectors (0: do not send).
	EmbeddingRequestDimensions int `env:"KB_EMBEDDING_REQUEST_DIMENSIONS" envDefault:"0"`

	// Query embeddings kept (LRU) and for how long; a size of 0 turns the cache off.
	QueryCacheSize int           `env:"KB_QUERY_CACHE_SIZE" envDefault:"50"`
	QueryCacheTTL  time.Duration `env:"KB_QUERY_CACHE_TTL" envDefault:"60s"`

	// Batches of documents an ingest stores at once (0: one per core, at most 4).
	IngestWorkers int `env:"KB_INGEST_WORKERS" envDefault:"0"`
	// A load of at least this many chunks, and at least KB_INGEST_BULK_RATIO times
	// the chunks already stored, builds the vector index after its rows (0: never).
	IngestBulkMinChunks int     `env:"KB_INGEST_BULK_MIN_CHUNKS" envDefault:"10000"`
	IngestBulkRatio     float64 `env:"KB_INGEST_BULK_RATIO" envDefault:"1"`
	// maintenance_work_mem and max_parallel_maintenance_workers of that build (0: one per core beside the leader).
	IndexBuildMemory  string `env:"KB_INDEX_BUILD_MEMORY" envDefault:"1GB"`
	IndexBuildWorkers int    `env:"KB_INDEX_BUILD_WORKERS" envDefault:"0"`

	ChunkTokens  int    `env:"KB_CHUNK_TOKENS" envDefault:"512"`
	ChunkOverlap int    `env:"KB_CHUNK_OVERLAP" envDefault:"64"`
	DefaultLimit int    `env:"KB_SEARCH_LIMIT" envDefault:"8"`
	Fusion       string `env:"KB_FUSION" envDefault:"weighted"`

	GraphExpansionEnabled   bool     `env:"KB_GRAPH_EXPANSION_ENABLED" envDefault:"true"`
	GraphExpansionEdgeTypes []string `env:"KB_GRAPH_EXPANSION_EDGE_TYPES" envDefault:"depends_on,implements,decision_for,related_to,supersedes,invalidated_by,documented_by"`
	GraphExpansionMaxNodes  int      `env:"KB_GRAPH_EXPANSION_MAX_NODES" envDefault:"20"`
	// Neighbours one seed may bring, and node types that are never seeds nor
	// neighbours (a project index links to everything).
	GraphExpansionMaxPerSeed int      `env:"KB_GRAPH_EXPANSION_MAX_PER_SEED" envDefault:"5"`
	GraphExpansionHubTypes   []string `env:"KB_GRAPH_EXPANSION_HUB_TYPES" envDefault:"project-index"`
	RejectedInjectionEnabled bool     `env:"KB_REJECTED_INJECTION_ENABLED" envDefault:"true"`
	RejectedInjectionMaxDocs int      `env:"KB_REJECTED_INJECTION_MAX_DOCS" envDefault:"3"`
	// Cosine a rejected approach's summary needs to be injected by similarity;
	// calibrated for the hash embedder (README). Linked ones need none.
	RejectedMinSimilarity float64 `env:"KB_REJECTED_MIN_SIMILARITY" envDefault:"0.30"`

	// Two-pass entity-guided search (package hierarchy; checked by hierarchy.Config.Validate).
	Hierarchy HierarchyEnv

	// Chat: the language model and the grounding rules.
	LLMProvider   string        `env:"KB_LLM_PROVIDER" envDefault:"extractive"`
	LLMBaseURL    string        `env:"KB_LLM_BASE_URL"`
	LLMModel      string        `env:"KB_LLM_MODEL"`
	LLMAPIKey     string        `env:"KB_LLM_API_KEY"`
	LLMTimeout    time.Duration `env:"KB_LLM_TIMEOUT" envDefault:"60s"`
	LLMMaxRetries int           `env:"KB_LLM_MAX_RETRIES" envDefault:"3"`
	LLMMaxTokens  int           `env:"KB_LLM_MAX_TOKENS" envDefault:"1024"`
	// Prices per million tokens, e.g. "gpt-4o-mini=0.15/0.60"; merged over the built-in table.
	LLMPrices      string `env:"KB_LLM_PRICES"`
	PromptTemplate string `env:"KB_PROMPT_TEMPLATE"`
	// Absolute evidence a question needs before the model is called (see README).
	RefusalMinSimilarity      float64 `env:"KB_REFUSAL_MIN_SIMILARITY" envDefault:"0.26"`
	RefusalMinKeywordCoverage float64 `env:"KB_REFUSAL_MIN_KEYWORD_COVERAGE" envDefault:"0.70"`
	CitationSupportThreshold  float64 `env:"KB_CITATION_SUPPORT_THRESHOLD" envDefault:"0.5"`
	ChatLogQueue              int     `env:"KB_CHAT_LOG_QUEUE" envDefault:"1000"`

	// Ranking knobs set by their variables (domain.Knobs); unset keeps the
	// embedder's profile default.
	Ranking domain.RankingOverride
}

// HierarchyEnv holds the KB_HIERARCHY_* variables (defaults: hierarchy.DefaultConfig).
type HierarchyEnv struct {
	Enabled           bool          `env:"KB_HIERARCHY_ENABLED" envDefault:"true"`
	NameGate          bool          `env:"KB_HIERARCHY_NAME_GATE" envDefault:"true"`
	MaxEntities       int           `env:"KB_HIERARCHY_MAX_ENTITIES" envDefault:"5"`
	EntityThreshold   float64       `env:"KB_HIERARCHY_ENTITY_THRESHOLD" envDefault:"0.5"`
	MinGap            float64       `env:"KB_HIERARCHY_MIN_GAP" envDefault:"0.1"`
	TeamDiscount      float64       `env:"KB_HIERARCHY_TEAM_DISCOUNT" envDefault:"0.8"`
	Alpha             float64       `env:"KB_HIERARCHY_ALPHA" envDefault:"0.5"`
	LinkStrength      bool          `env:"KB_HIERARCHY_LINK_STRENGTH" envDefault:"true"`
	StripNames        bool          `env:"KB_HIERARCHY_STRIP_NAMES" envDefault:"true"`
	BatchSize         int           `env:"KB_HIERARCHY_BATCH_SIZE" envDefault:"50"`
	StableRounds      int           `env:"KB_HIERARCHY_STABLE_ROUNDS" envDefault:"3"`
	MaxBatches        int           `env:"KB_HIERARCHY_MAX_BATCHES" envDefault:"20"`
	NameExactWeight   float64       `env:"KB_HIERARCHY_NAME_WEIGHT" envDefault:"0.50"`
	NameFuzzyWeight   float64       `env:"KB_HIERARCHY_FUZZY_NAME_WEIGHT" envDefault:"0.15"`
	RoleWeight        float64       `env:"KB_HIERARCHY_ROLE_WEIGHT" envDefault:"0.10"`
	FactsWeight       float64       `env:"KB_HIERARCHY_FACTS_WEIGHT" envDefault:"0.15"`
	VectorWeight      float64       `env:"KB_HIERARCHY_VECTOR_WEIGHT" envDefault:"0.10"`
	LinkPage          float64       `env:"KB_HIERARCHY_LINK_PAGE" envDefault:"1"`
	LinkDeclared      float64       `env:"KB_HIERARCHY_LINK_DECLARED" envDefault:"1"`
	LinkAttendee      float64       `env:"KB_HIERARCHY_LINK_ATTENDEE" envDefault:"1"`
	LinkTag           float64       `env:"KB_HIERARCHY_LINK_TAG" envDefault:"0.9"`
	LinkMemberMeeting float64       `env:"KB_HIERARCHY_LINK_MEMBER_MEETING" envDefault:"0.9"`
	LinkMention       float64       `env:"KB_HIERARCHY_LINK_MENTION" envDefault:"0.5"`
	IntentWeight      float64       `env:"KB_HIERARCHY_INTENT_WEIGHT" envDefault:"0.3"`
	CacheSize         int           `env:"KB_HIERARCHY_CACHE_SIZE" envDefault:"256"`
	CacheTTL          time.Duration `env:"KB_HIERARCHY_CACHE_TTL" envDefault:"60s"`
}

// Load reads the process environment.
func Load() (Config, error) { return Parse(os.Environ()) }

// Parse reads settings from KEY=VALUE pairs (tests pass their own).
func Parse(environ []string) (Config, error) {
	vars := env.ToMap(environ)
	var c Config
	if err := env.ParseWithOptions(&c, env.Options{Environment: vars}); err != nil {
		return Config{}, describe(err, vars)
	}
	ranking, err := parseRanking(vars)
	if err != nil {
		return Config{}, err
	}
	c.Ranking = ranking
	// The conventional variables work too, but the canon-specific ones win.
	if c.EmbeddingAPIKey == "" {
		c.EmbeddingAPIKey = vars["OPENAI_API_KEY"]
	}
	if c.LLMAPIKey == "" {
		switch c.LLMProvider {
		case "openai":
			c.LLMAPIKey = vars["OPENAI_API_KEY"]
		case "anthropic":
			c.LLMAPIKey = vars["ANTHROPIC_API_KEY"]
		}
	}
	return c, c.validate()
}

// describe names the variable a parse error is about, with its value and what
// it should be (the library names the Go field and type).
func describe(err error, vars map[string]string) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return fmt.Errorf("configuration: %w", err)
	}
	var msgs []string
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			name := envName(reflect.TypeOf(Config{}), pe.Name)
			msgs = append(msgs, fmt.Sprintf("%s=%s: %s", name, shown(vars[name]), expected(pe)))
			continue
		}
		msgs = append(msgs, e.Error())
	}
	return fmt.Errorf("configuration: %s", strings.Join(msgs, "; "))
}

// maxShownValue bounds how much of a bad value a message repeats.
const maxShownValue = 40

// shown is a value as a message repeats it: cut when long, quoted when it holds
// characters a terminal would not show as they are.
func shown(v string) string {
	if r := []rune(v); len(r) > maxShownValue {
		v = string(r[:maxShownValue]) + "…"
	}
	if strings.ContainsFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return strconv.Quote(v)
	}
	return v
}

// expected says what a value that failed to parse should have been.
func expected(pe env.ParseError) string {
	tooLarge := errors.Is(pe.Err, strconv.ErrRange)
	switch k := pe.Type.Kind(); {
	case pe.Type == reflect.TypeFor[time.Duration]():
		return "not a duration (use a unit: 10s, 2m)"
	case k == reflect.Bool:
		return "use true or false"
	case k >= reflect.Int && k <= reflect.Uint64:
		var num *strconv.NumError
		switch {
		case tooLarge && errors.As(pe.Err, &num) && strings.HasPrefix(num.Num, "-"):
			return "a whole number too small"
		case tooLarge:
			return "a whole number too large"
		}
		return "not a whole number"
	case k == reflect.Float32 || k == reflect.Float64:
		if tooLarge {
			return "a number too large"
		}
		return "not a number"
	}
	return pe.Err.Error()
}

func envName(t reflect.Type, field string) string {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Name == field {
			if tag := f.Tag.Get("env"); tag != "" {
				return tag
			}
		}
		if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == t.PkgPath() {
			if name := envName(f.Type, field); name != field {
				return name
			}
		}
	}
	return field
}

func (c Config) validate() error {
	if _, err := domain.ValidateFusion(c.Fusion, ""); err != nil || c.Fusion == "" {
		return fmt.Errorf("KB_FUSION must be one of %s (got %q)", strings.Join(domain.Fusions(), ", "), c.Fusion)
	}
	switch {
	case c.DatabaseExecMode != "" && !slices.Contains(postgres.ExecModes, c.DatabaseExecMode):
		return fmt.Errorf("KB_DATABASE_EXEC_MODE must be one of %s (got %q)", strings.Join(postgres.ExecModes, ", "), c.DatabaseExecMode)
	case c.DatabaseReplicaMaxWait < 0 || c.DatabaseReplicaMaxWait > time.Minute:
		return fmt.Errorf("KB_DATABASE_REPLICA_MAX_WAIT must be between 0 and 1m (got %s)", c.DatabaseReplicaMaxWait)
	case c.DatabaseReplicaCheckInterval < 10*time.Millisecond || c.DatabaseReplicaCheckInterval > time.Minute:
		return fmt.Errorf("KB_DATABASE_REPLICA_CHECK_INTERVAL must be between 10ms and 1m (got %s)", c.DatabaseReplicaCheckInterval)
	case c.ShutdownTimeout < 0:
		return fmt.Errorf("KB_SHUTDOWN_TIMEOUT must not be negative (0 cancels requests in flight at once; got %s)", c.ShutdownTimeout)
	case c.Auth != "required" && c.Auth != "off":
		return fmt.Errorf("KB_AUTH must be required or off (got %q)", c.Auth)
	case !(c.RateLimit >= 0) || math.IsInf(c.RateLimit, 0):
		return fmt.Errorf("KB_RATE_LIMIT must be a finite number of requests a second, 0 for none (got %g)", c.RateLimit)
	case c.RateBurst < 1:
		return fmt.Errorf("KB_RATE_BURST must be at least 1 (got %d)", c.RateBurst)
	case c.MaxStreamsPerKey < 0:
		return fmt.Errorf("KB_MAX_STREAMS_PER_KEY must not be negative (got %d)", c.MaxStreamsPerKey)
	case c.MCPSessionsPerKey < 0:
		return fmt.Errorf("KB_MCP_SESSIONS_PER_KEY must not be negative (0 turns the cap off; got %d)", c.MCPSessionsPerKey)
	case c.EmbeddingDim < 1 || c.EmbeddingDim > 16000:
		return fmt.Errorf("KB_EMBEDDING_DIM must be between 1 and 16000 (got %d)", c.EmbeddingDim)
	case c.VectorType != "" && c.VectorType != "vector" && c.VectorType != "halfvec":
		return fmt.Errorf("KB_VECTOR_TYPE must be vector or halfvec (got %q)", c.VectorType)
	case c.TableLayout != "" && c.TableLayout != "single" && c.TableLayout != "partitioned":
		return fmt.Errorf("KB_TABLE_LAYOUT must be single or partitioned (got %q)", c.TableLayout)
	case c.Embedder != "hash" && c.Embedder != "openai":
		return fmt.Errorf("KB_EMBEDDER must be hash or openai (got %q)", c.Embedder)
	case c.QueryCacheSize < 0:
		return fmt.Errorf("KB_QUERY_CACHE_SIZE must not be negative (0 turns the cache off; got %d)", c.QueryCacheSize)
	case c.QueryCacheTTL <= 0:
		return fmt.Errorf("KB_QUERY_CACHE_TTL must be more than 0 (KB_QUERY_CACHE_SIZE=0 turns the cache off; got %s)", c.QueryCacheTTL)
	case c.ChunkTokens < 32:
		return fmt.Errorf("KB_CHUNK_TOKENS must be at least 32 (got %d)", c.ChunkTokens)
	case c.ChunkOverlap < 0 || c.ChunkOverlap >= c.ChunkTokens:
		return fmt.Errorf("KB_CHUNK_OVERLAP must be between 0 and KB_CHUNK_TOKENS-1 (got %d)", c.ChunkOverlap)
	case c.IngestWorkers < 0 || c.IngestWorkers > 64:
		return fmt.Errorf("KB_INGEST_WORKERS must be between 0 (one per core) and 64 (got %d)", c.IngestWorkers)
	case c.IngestBulkMinChunks < 0:
		return fmt.Errorf("KB_INGEST_BULK_MIN_CHUNKS must not be negative (0 turns bulk loads off; got %d)", c.IngestBulkMinChunks)
	case !(c.IngestBulkRatio >= 0) || math.IsInf(c.IngestBulkRatio, 0):
		return fmt.Errorf("KB_INGEST_BULK_RATIO must be a finite number, 0 or more (got %g)", c.IngestBulkRatio)
	case !memorySetting.MatchString(c.IndexBuildMemory):
		return fmt.Errorf("KB_INDEX_BUILD_MEMORY must be a size such as 512MB or 2GB (got %q)", c.IndexBuildMemory)
	case c.IndexBuildWorkers < 0 || c.IndexBuildWorkers > 64:
		return fmt.Errorf("KB_INDEX_BUILD_WORKERS must be between 0 (one per core) and 64 (got %d)", c.IndexBuildWorkers)
	case c.DefaultLimit < 1 || c.DefaultLimit > 100:
		return fmt.Errorf("KB_SEARCH_LIMIT must be between 1 and 100 (got %d)", c.DefaultLimit)
	case c.RejectedMinSimilarity < -1 || c.RejectedMinSimilarity > 1:
		return fmt.Errorf("KB_REJECTED_MIN_SIMILARITY must be a cosine between -1 and 1 (got %g)", c.RejectedMinSimilarity)
	case c.LLMProvider != "extractive" && c.LLMProvider != "openai" && c.LLMProvider != "anthropic":
		return fmt.Errorf("KB_LLM_PROVIDER must be extractive, openai or anthropic (got %q)", c.LLMProvider)
	case c.LLMTimeout <= 0:
		return fmt.Errorf("KB_LLM_TIMEOUT must be more than 0: it bounds a whole answer (got %s)", c.LLMTimeout)
	case c.ChatLogQueue < 1:
		return fmt.Errorf("KB_CHAT_LOG_QUEUE must be at least 1 (got %d)", c.ChatLogQueue)
	case c.RefusalMinSimilarity < 0 || c.RefusalMinSimilarity > 1:
		return fmt.Errorf("KB_REFUSAL_MIN_SIMILARITY must be between 0 and 1 (got %g)", c.RefusalMinSimilarity)
	case c.RefusalMinKeywordCoverage < 0 || c.RefusalMinKeywordCoverage > 1:
		return fmt.Errorf("KB_REFUSAL_MIN_KEYWORD_COVERAGE must be between 0 and 1 (got %g)", c.RefusalMinKeywordCoverage)
	case c.CitationSupportThreshold < 0 || c.CitationSupportThreshold > 1:
		return fmt.Errorf("KB_CITATION_SUPPORT_THRESHOLD must be between 0 and 1 (got %g)", c.CitationSupportThreshold)
	}
	for i, url := range c.DatabaseReplicaURLs {
		if strings.TrimSpace(url) == "" {
			return fmt.Errorf("KB_DATABASE_REPLICA_URLS: entry %d of %d is empty (two commas in a row, or one at an end?)",
				i+1, len(c.DatabaseReplicaURLs))
		}
		if err := postgres.CheckURL(strings.TrimSpace(url)); err != nil {
			return fmt.Errorf("KB_DATABASE_REPLICA_URLS: entry %d of %d %w", i+1, len(c.DatabaseReplicaURLs), err)
		}
	}
	if c.GraphExpansionMaxPerSeed < 0 {
		return fmt.Errorf("KB_GRAPH_EXPANSION_MAX_PER_SEED must not be negative (got %d)", c.GraphExpansionMaxPerSeed)
	}
	for _, t := range c.GraphExpansionHubTypes {
		if !domain.IsNodeType(t) {
			return fmt.Errorf("KB_GRAPH_EXPANSION_HUB_TYPES: unknown node type %q", t)
		}
	}
	for _, t := range c.GraphExpansionEdgeTypes {
		if _, ok := domain.DefaultEdgeWeight(t); !ok {
			return fmt.Errorf("KB_GRAPH_EXPANSION_EDGE_TYPES: unknown edge type %q", t)
		}
	}
	if _, err := c.RankingDefaults(); err != nil {
		return err
	}
	return nil
}

// Gate is the refusal gate's evidence test; the graph step uses it to choose its seeds.
func (c Config) Gate() domain.Gate {
	return domain.Gate{MinSimilarity: c.RefusalMinSimilarity, MinKeywordCoverage: c.RefusalMinKeywordCoverage}
}

// Profile names the weight profile in force for the configured embedder.
func (c Config) Profile() string { return domain.ProfileFor(c.Embedder) }

// parseRanking reads the variables of the ranking knobs that are set, each
// checked against its knob's range.
func parseRanking(vars map[string]string) (domain.RankingOverride, error) {
	set := domain.RankingOverride{}
	for _, k := range domain.Knobs() {
		s := vars[k.Env]
		if strings.TrimSpace(s) == "" {
			continue // an empty variable is unset, as for every other variable
		}
		v, err := k.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("configuration: %s: %w", k.Env, err)
		}
		set[k.Name] = v
	}
	return set, nil
}

// RankingDefaults returns the profile's defaults with the environment's knobs applied.
func (c Config) RankingDefaults() (domain.Ranking, error) {
	r, err := domain.DefaultRanking(c.Profile()).WithOverride(c.Ranking)
	if err != nil {
		return r, fmt.Errorf("ranking configuration: %w", err)
	}
	return r, nil
}
