package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	"github.com/canonkb/canon/bench"
	"github.com/canonkb/canon/domain"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/server"
)

func newBenchLatencyCmd() *cobra.Command {
	var (
		databaseURL, database, concurrency, outDir, vocabDir, commit, name string
		methods                                                            []string
		chunks, projects, maxRequests, queries, limit                      int
		seed                                                               uint64
		duration                                                           time.Duration
		fresh, skipIndex, noHTTP, asJSON                                   bool
	)
	cmd := &cobra.Command{
		Use:   "latency [--chunks 100000] [--concurrency 1,4,16] [--duration 10s] [--json] [--out DIR]",
		Short: "Latency and throughput at scale, next to bare HNSW/BM25 and published SQL hybrids",
		Long: `Generates a deterministic synthetic corpus of --chunks chunks (Zipf-distributed words over
the example handbook's vocabulary plus generated terms; canonical documents of every type
and status, edges, people, meetings) and loads it through canon's ingest path into a
database of its own (--database, created and migrated on the server of DATABASE_URL;
reused while it holds the same corpus, --fresh reloads), reporting the ingest rate, the
time to rebuild the HNSW index on the loaded table and the database size.

Then, for each concurrency, runs bounded request loops (--duration or --max-requests per
cell) of canon's search per fusion method, the default search with its graph step
in-process and through canon's server on 127.0.0.1, the bare HNSW top-k and bare BM25
queries, Supabase's published hybrid_search function and the pgvector examples' RRF
statement (both created in the same database over canon's tables), and reports p50, p95,
p99, QPS and each p50 relative to canon. On questions naming the corpus's people it
times pass 1 of the two-pass entity search alone (hierarchy/pass1, target p50 under
10 ms), the whole two-pass search (hierarchy/two-pass) and the flat search on the same
questions (hierarchy/flat). EXPLAIN (ANALYZE, SUMMARY) shows which indexes
canon's statement uses and its planning versus execution time. --out writes
latency.json and latency.md (--name changes the base name).

KB_VECTOR_TYPE (vector or halfvec), when set, converts the bench's database to that
storage before measuring (a loaded corpus in place, timed), so one load serves both
types (make bench-1m). KB_TABLE_LAYOUT (single or partitioned) does the same for the
table layout, and --projects splits the --chunks over that many projects (a corpus each;
the searches name the first): --chunks 100000 --projects 10 measures one project's
searches beside nine others, in either layout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			levels, err := parseLevels(concurrency)
			if err != nil {
				return err
			}
			if projects < 1 || chunks/projects < 1 {
				return fmt.Errorf("--projects %d: use at least 1 and at most --chunks (%d)", projects, chunks)
			}
			if !reportName.MatchString(name) {
				return fmt.Errorf("--name %q: use lowercase letters, digits, '-' and '_'", name)
			}
			cfg, err := loadConfig(databaseURL)
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			logf := func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
			if vocabDir == "" {
				vocabDir = filepath.Join(repoRoot(), "examples", "handbook")
			}
			vocab, err := bench.HandbookVocabulary(vocabDir)
			if err != nil {
				return fmt.Errorf("vocabulary from %s: %w", vocabDir, err)
			}
			url, err := bench.EnsureLatencyDatabase(ctx, cfg.DatabaseURL, database, fresh, slices.Max(levels)+4)
			if err != nil {
				return err
			}
			cfg.DatabaseURL = url
			// The bench's database is its own: KB_VECTOR_TYPE converts it (bench.LatencyOptions.VectorType).
			vectorType, tableLayout := cfg.VectorType, cfg.TableLayout
			cfg.VectorType, cfg.TableLayout = "", ""
			a, err := openApp(ctx, cfg)
			if err != nil {
				return err
			}
			defer a.Close()
			ranking, err := cfg.RankingDefaults()
			if err != nil {
				return err
			}
			if commit == "" {
				commit = os.Getenv("BENCH_COMMIT")
			}
			setup := bench.LatencySetup{
				Pool: a.pool, Ingester: a.ingester, Searcher: a.searcher, Hierarchy: a.hierarchy, Embedder: a.embedder,
				Chunking: markdown.Options{ChunkTokens: cfg.ChunkTokens, OverlapTokens: cfg.ChunkOverlap},
				Ranking:  ranking, Profile: cfg.Profile(), Commit: commit,
			}
			if !noHTTP {
				client, stop, err := loopbackSearch(ctx, a, levels)
				if err != nil {
					return err
				}
				defer stop()
				setup.HTTP = client
			}
			rep, err := bench.Latency(ctx, setup, bench.LatencyOptions{
				Chunks: chunks, Seed: seed, Vocabulary: vocab, Concurrency: levels, Duration: duration,
				MaxRequests: maxRequests, Queries: queries, Limit: limit, Fresh: fresh, SkipIndexBuild: skipIndex,
				Methods: methods, VectorType: vectorType, TableLayout: tableLayout, Projects: projects, ReportName: name, Log: logf,
			})
			if err != nil {
				return err
			}
			if err := printReport(cmd.OutOrStdout(), rep, asJSON, outDir, logf); err != nil {
				return err
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&databaseURL, "database-url", "", "PostgreSQL URL of the server (default $DATABASE_URL); the bench uses its own database there")
	fl.StringVar(&database, "database", "canon_latency", "database the corpus lives in (created and migrated when missing; nothing else may be in it)")
	fl.IntVar(&chunks, "chunks", 100000, "chunks in the synthetic corpus")
	fl.IntVar(&projects, "projects", 1, "projects the chunks are split over (a corpus each); the searches name the first")
	fl.Uint64Var(&seed, "seed", 1, "generator seed")
	fl.StringVar(&concurrency, "concurrency", "1,4,16", "comma-separated concurrency levels")
	fl.DurationVar(&duration, "duration", 10*time.Second, "time per (method, concurrency) cell")
	fl.IntVar(&maxRequests, "max-requests", 20000, "requests per cell at most")
	fl.IntVar(&queries, "queries", 1000, "distinct generated questions, cycled through")
	fl.IntVar(&limit, "limit", 8, "primary hits per search (top-k of the references)")
	fl.StringSliceVar(&methods, "method", nil, "measure only these methods (repeatable; names as in the report)")
	fl.BoolVar(&fresh, "fresh", false, "drop the database and reload the corpus (times the ingest)")
	fl.BoolVar(&skipIndex, "skip-index-build", false, "do not time an HNSW rebuild on the loaded table")
	fl.BoolVar(&noHTTP, "no-http", false, "skip the measurements through canon's server on loopback")
	fl.StringVar(&vocabDir, "vocabulary", "", "Markdown directory whose words seed the vocabulary (default examples/handbook)")
	fl.StringVar(&outDir, "out", "", "write latency.json and latency.md into this directory")
	fl.StringVar(&name, "name", "latency", "base name of the files --out writes (make bench-1m: latency-1m)")
	fl.StringVar(&commit, "commit", "", "source revision to record (default $BENCH_COMMIT)")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// reportName is a file base name that stays inside --out.
var reportName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

func parseLevels(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > 256 {
			return nil, fmt.Errorf("--concurrency: %q is not a number from 1 to 256", p)
		}
		out = append(out, n)
	}
	return out, nil
}

// loopbackSearch serves canon's handler on 127.0.0.1 (an ephemeral port) and
// returns a Connect client of its SearchService.
func loopbackSearch(ctx context.Context, a *app, levels []int) (bench.Searcher, func(), error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := server.NewHTTPServer(ln.Addr().String(), server.Handler(server.Deps{
		Pool: a.pool, Searcher: a.searcher, SearchService: a.hierarchy, Ingester: a.ingester, Chat: a.chat,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}))
	go srv.Serve(ln) //nolint:errcheck // ends with Shutdown
	transport := &http.Transport{MaxIdleConnsPerHost: slices.Max(levels) + 4, MaxConnsPerHost: slices.Max(levels) + 4}
	client := canonv1connect.NewSearchServiceClient(&http.Client{Transport: transport}, "http://"+ln.Addr().String())
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx) //nolint:errcheck // the benchmark is over; a slow drain changes no result
		transport.CloseIdleConnections()
	}
	return connectSearch{client}, stop, nil
}

type connectSearch struct {
	client canonv1connect.SearchServiceClient
}

// Search runs req over Connect. The result carries the hits' identity and score
// only: the latency harness counts and orders hits, it does not read their text.
func (c connectSearch) Search(ctx context.Context, req *domain.SearchRequest) (*domain.SearchResult, error) {
	res, err := c.client.Search(ctx, connect.NewRequest(server.SearchRequestProto(req)))
	if err != nil {
		return nil, err
	}
	m := res.Msg.GetResult()
	hits := func(list []*canonv1.Hit) []*domain.Hit {
		out := make([]*domain.Hit, len(list))
		for i, h := range list {
			out[i] = &domain.Hit{DocID: h.GetDocId(), ChunkID: h.GetChunkId(), Score: h.GetScore(), Origin: h.GetOrigin()}
		}
		return out
	}
	return &domain.SearchResult{
		Primary: hits(m.GetPrimary()), Expanded: hits(m.GetExpanded()), Rejected: hits(m.GetRejected()),
		RunnerUp: hits(m.GetRunnerUp()),
		Meta:     domain.SearchMeta{SearchMode: m.GetMeta().GetSearchMode(), HierarchyReason: m.GetMeta().GetHierarchyReason()},
	}, nil
}
