package config

import (
	"regexp"
	"strings"
	"testing"

	"github.com/canonkb/canon/domain"
)

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.ListenAddr != "127.0.0.1:8787" {
		t.Errorf("canon serve must listen on loopback by default, got %q", c.ListenAddr)
	}
	if c.Embedder != "hash" || c.EmbeddingDim != 384 || c.LLMProvider != "extractive" || c.Profile() != "hash-keyword-led" {
		t.Errorf("%+v", c)
	}
	r, err := c.RankingDefaults()
	if err != nil || r.KeywordWeight != 0.90 || r.RRFK != 60 || r.MaxChunksPerDoc != 3 {
		t.Errorf("%+v %v", r, err)
	}
	// The package defaults agree with the variables' defaults.
	if c.Gate() != domain.DefaultGate() || r.RRFTrustPositions != domain.DefaultRRFTrustPositions {
		t.Errorf("gate %+v, rrf_trust_positions %v", c.Gate(), r.RRFTrustPositions)
	}
	if c.GraphExpansionMaxPerSeed != 5 || len(c.GraphExpansionHubTypes) != 1 || c.GraphExpansionHubTypes[0] != "project-index" {
		t.Errorf("graph: max per seed %d, hub types %v", c.GraphExpansionMaxPerSeed, c.GraphExpansionHubTypes)
	}
}

func TestProfileFollowsEmbedderAndEnvWins(t *testing.T) {
	t.Parallel()
	c, err := Parse([]string{"KB_EMBEDDER=openai", "KB_RERANK_VECTOR_WEIGHT=0.9", "KB_RRF_K=10",
		"KB_RRF_TRUST_POSITIONS=30", "OPENAI_API_KEY=sk-x"})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := c.RankingDefaults()
	if c.Profile() != "semantic-model" || r.VectorWeight != 0.9 || r.KeywordWeight != 0.25 || r.RRFK != 10 ||
		r.RRFTrustPositions != 30 {
		t.Errorf("profile %s, ranking %+v", c.Profile(), r)
	}
	if c.EmbeddingAPIKey != "sk-x" {
		t.Error("OPENAI_API_KEY should be the fallback key")
	}
}

func TestInvalidSettingsAreClear(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"KB_EMBEDDING_DIM=0":                     "KB_EMBEDDING_DIM",
		"KB_EMBEDDER=bert":                       "KB_EMBEDDER",
		"KB_RERANK_KEYWORD_WEIGHT=-1":            "keyword_weight",
		"KB_GRAPH_EXPANSION_EDGE_TYPES=likes":    "likes",
		"KB_GRAPH_EXPANSION_HUB_TYPES=wiki":      "wiki",
		"KB_GRAPH_EXPANSION_MAX_PER_SEED=-1":     "KB_GRAPH_EXPANSION_MAX_PER_SEED",
		"KB_LLM_PROVIDER=magic":                  "KB_LLM_PROVIDER",
		"KB_FUSION=magic":                        "KB_FUSION must be one of",
		"KB_REFUSAL_MIN_SIMILARITY=2":            "KB_REFUSAL_MIN_SIMILARITY",
		"KB_CHUNK_OVERLAP=600":                   "KB_CHUNK_OVERLAP",
		"KB_INGEST_WORKERS=-1":                   "KB_INGEST_WORKERS",
		"KB_RRF_K=abc":                           "KB_RRF_K",
		"KB_RRF_TRUST_POSITIONS=-2":              "rrf_trust_positions",
		"KB_DATABASE_EXEC_MODE=prepared":         "KB_DATABASE_EXEC_MODE",
		"KB_DATABASE_REPLICA_MAX_WAIT=-1s":       "KB_DATABASE_REPLICA_MAX_WAIT",
		"KB_DATABASE_REPLICA_CHECK_INTERVAL=1ms": "KB_DATABASE_REPLICA_CHECK_INTERVAL",
		"KB_QUERY_CACHE_SIZE=-5":                 "KB_QUERY_CACHE_SIZE must not be negative (0 turns the cache off; got -5)",
		"KB_MCP_SESSIONS_PER_KEY=-1":             "KB_MCP_SESSIONS_PER_KEY must not be negative (0 turns the cap off; got -1)",
		"KB_QUERY_CACHE_TTL=0s":                  "KB_QUERY_CACHE_TTL must be more than 0",
		"KB_SHUTDOWN_TIMEOUT=-1s":                "KB_SHUTDOWN_TIMEOUT must not be negative",
		"KB_LLM_TIMEOUT=0s":                      "KB_LLM_TIMEOUT must be more than 0",
		"KB_LLM_TIMEOUT=-5s":                     "KB_LLM_TIMEOUT must be more than 0",
		"KB_CHAT_LOG_QUEUE=0":                    "KB_CHAT_LOG_QUEUE must be at least 1",
	}
	for env, want := range cases {
		_, err := Parse([]string{env})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v should mention %s", env, err, want)
		}
	}
}

// TestReplicaURLs: each replica URL is checked at start; a bad one is named by
// its position and why it does not parse, never with its password.
func TestReplicaURLs(t *testing.T) {
	t.Parallel()
	cases := []struct{ value, want string }{
		{",,", "KB_DATABASE_REPLICA_URLS: entry 1 of 3 is empty"},
		{"postgres://r@a/canon,", "KB_DATABASE_REPLICA_URLS: entry 2 of 2 is empty"},
		{"postgres://r:hunter2@a/canon,postgres://r:hunter2@b:99999/canon",
			"KB_DATABASE_REPLICA_URLS: entry 2 of 2 is not a valid PostgreSQL connection string: invalid port"},
		{"postgres://r:hunter2@a/canon?sslmode=bogus", "entry 1 of 1 is not a valid PostgreSQL connection string: failed to configure TLS (sslmode is invalid)"},
		{"postgres://r:hunter 2@a/canon", "entry 1 of 1 is not a valid PostgreSQL connection string: failed to parse as URL"},
	}
	for _, c := range cases {
		t.Run(c.value, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]string{"KB_DATABASE_REPLICA_URLS=" + c.value})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to say %q", err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "hunter") {
				t.Errorf("error %v shows the password", err)
			}
		})
	}
	c, err := Parse([]string{"KB_DATABASE_REPLICA_URLS=postgres://r:pw@a/canon, host=b user=r"})
	if err != nil || len(c.DatabaseReplicaURLs) != 2 {
		t.Errorf("two good replicas: %v %q", err, c.DatabaseReplicaURLs)
	}
}

// goType is a Go type's name in a message meant for a person.
var goType = regexp.MustCompile(`\b(int|int64|float64|bool|time\.Duration)\b`)

// TestUnparsableValuesAreNamed: a value that is not of its variable's kind is
// refused with the variable, the value (cut when long) and what it should be, in
// words rather than Go types.
func TestUnparsableValuesAreNamed(t *testing.T) {
	t.Parallel()
	cases := []struct{ env, want string }{
		{"KB_MAX_STREAMS_PER_KEY=abc", "KB_MAX_STREAMS_PER_KEY=abc: not a whole number"},
		{"KB_MAX_STREAMS_PER_KEY=99999999999999999999", "KB_MAX_STREAMS_PER_KEY=99999999999999999999: a whole number too large"},
		{"KB_RATE_BURST=-99999999999999999999", "KB_RATE_BURST=-99999999999999999999: a whole number too small"},
		{"KB_RATE_LIMIT=abc", "KB_RATE_LIMIT=abc: not a number"},
		{"KB_SHUTDOWN_TIMEOUT=10", "KB_SHUTDOWN_TIMEOUT=10: not a duration (use a unit: 10s, 2m)"},
		{"KB_HIERARCHY_CACHE_TTL=soon", "KB_HIERARCHY_CACHE_TTL=soon: not a duration"},
		{"KB_GRAPH_EXPANSION_ENABLED=maybe", "KB_GRAPH_EXPANSION_ENABLED=maybe: use true or false"},
		{"KB_HIERARCHY_ENABLED=yes please", "KB_HIERARCHY_ENABLED=yes please: use true or false"},
		{"KB_CHUNK_TOKENS=" + strings.Repeat("9", 100), "KB_CHUNK_TOKENS=" + strings.Repeat("9", 40) + "…: a whole number too large"},
	}
	for _, c := range cases {
		t.Run(c.env, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]string{c.env})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to say %q", err, c.want)
			}
			if err != nil && goType.MatchString(err.Error()) {
				t.Errorf("error %v names a Go type", err)
			}
		})
	}
	// Several bad values are all reported.
	_, err := Parse([]string{"KB_RATE_LIMIT=x", "KB_RATE_BURST=y"})
	if err == nil || !strings.Contains(err.Error(), "KB_RATE_LIMIT=x") || !strings.Contains(err.Error(), "KB_RATE_BURST=y") {
		t.Errorf("two bad values: %v", err)
	}
}

// TestRankingVariables sets each knob's variable to a value in range but not its
// default, and to values out of range.
func TestRankingVariables(t *testing.T) {
	t.Parallel()
	for _, k := range domain.Knobs() {
		t.Run(k.Env, func(t *testing.T) {
			t.Parallel()
			def := k.DefaultFor(domain.ProfileHashKeywordLed)
			v := k.Max
			if v == def {
				v = k.Min
			}
			if k.MinExclusive && v == k.Min {
				v = (k.Min + k.Max) / 2
			}
			c, err := Parse([]string{k.Env + "=" + k.Format(v)})
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.RankingDefaults()
			if err != nil || k.Get(r) != v {
				t.Errorf("%s=%s: got %g, %v", k.Env, k.Format(v), k.Get(r), err)
			}
			unset, err := Parse([]string{k.Env + "="})
			if r, _ := unset.RankingDefaults(); err != nil || k.Get(r) != def {
				t.Errorf("%s empty: got %g, %v; want the default %g", k.Env, k.Get(r), err, def)
			}
			for _, bad := range []string{"NaN", "1e308", "-1e308", "x"} {
				_, err := Parse([]string{k.Env + "=" + bad})
				if err == nil || !strings.Contains(err.Error(), k.Env) || !strings.Contains(err.Error(), k.Name) {
					t.Errorf("%s=%s: error %v should name %s and %s", k.Env, bad, err, k.Env, k.Name)
				}
			}
		})
	}
}
