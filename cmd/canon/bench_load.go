package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/canonkb/canon/bench"
	"github.com/canonkb/canon/markdown"
)

// serverCommand is the `canon serve` process a load run starts: this binary
// (tests replace it, their binary being a test runner).
var serverCommand = func(ctx context.Context, args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.CommandContext(ctx, exe, args...), nil
}

func newBenchLoadCmd() *cobra.Command {
	var (
		databaseURL, database, url, outDir, vocabDir, commit, mix string
		clients, chunks, queries                                  int
		seed                                                      uint64
		duration                                                  time.Duration
		fresh, asJSON                                             bool
	)
	cmd := &cobra.Command{
		Use:   "load [--clients 16] [--duration 60s] [--chunks 100000] [--url URL] [--json] [--out DIR]",
		Short: "Concurrent clients mixing search, chat and ingest against canon serve: errors, p50/p95/p99, QPS, server RSS",
		Long: `Loads the synthetic corpus of --chunks chunks (the one ` + "`canon bench latency`" + ` uses, in the
same database --database on the server of DATABASE_URL; reused while whole), starts
` + "`canon serve`" + ` on a loopback port over it, and runs --clients clients for --duration,
each sending one request at a time: SearchService.Search and ChatService.Chat with
questions about the corpus, and IngestService.Ingest of a small note (one of four per
client, in a project of its own), in the ratio --mix (search:chat:ingest). Chat uses
the configured language model (KB_LLM_PROVIDER; the extractive composer by default).

Reports per RPC the requests, errors, QPS and latency percentiles of the successful
requests, and the server's peak and final resident memory (/proc/<pid>/status).
With --url it runs against that server instead (no corpus load; --chunks and --seed
then only choose the questions and project, and memory comes from its /metrics).
--out writes load.json and load.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			shares, err := parseMix(mix)
			if err != nil {
				return err
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
			if url == "" {
				dbURL, err := bench.EnsureLatencyDatabase(ctx, cfg.DatabaseURL, database, false, clients+4)
				if err != nil {
					return err
				}
				cfg.DatabaseURL = dbURL
			}
			a, err := openApp(ctx, cfg)
			if err != nil {
				return err
			}
			defer a.Close()
			setup := bench.LatencySetup{Pool: a.pool, Ingester: a.ingester,
				Chunking: markdown.Options{ChunkTokens: cfg.ChunkTokens, OverlapTokens: cfg.ChunkOverlap}}
			opts := bench.LatencyOptions{Chunks: chunks, Seed: seed, Vocabulary: vocab, Queries: queries, Fresh: fresh, Log: logf}
			// With --url the corpus must be there already, in DATABASE_URL's database.
			project, questions, err := bench.EnsureCorpus(ctx, setup, opts, url == "")
			if err != nil {
				return err
			}
			pid := 0
			if url == "" {
				srv, err := startServer(ctx, cfg.DatabaseURL, logf)
				if err != nil {
					return err
				}
				defer srv.stop(logf)
				url, pid = srv.url, srv.cmd.Process.Pid
			}
			if commit == "" {
				commit = os.Getenv("BENCH_COMMIT")
			}
			rep, err := bench.RunLoad(ctx, bench.LoadOptions{
				URL: url, Clients: clients, Duration: duration, Project: project, Queries: questions, Mix: shares,
				ServerPID: pid, Pool: a.pool, Command: "canon " + strings.Join(os.Args[1:], " "), Commit: commit, Log: logf,
			})
			if err != nil {
				return err
			}
			if err := printReport(cmd.OutOrStdout(), rep, asJSON, outDir, logf); err != nil {
				return err
			}
			if rep.Errors > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("%d of %d requests failed", rep.Errors, rep.Requests)}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&databaseURL, "database-url", "", "PostgreSQL URL of the server (default $DATABASE_URL); the bench uses its own database there")
	fl.StringVar(&database, "database", "canon_latency", "database the corpus lives in (created and migrated when missing)")
	fl.StringVar(&url, "url", "", "run against this canon server instead of starting one")
	fl.IntVar(&clients, "clients", 16, "concurrent clients")
	fl.DurationVar(&duration, "duration", 60*time.Second, "measured time (after a warm-up of one request of each kind per client)")
	fl.IntVar(&chunks, "chunks", 100000, "chunks in the synthetic corpus")
	fl.Uint64Var(&seed, "seed", 1, "generator seed")
	fl.IntVar(&queries, "queries", 1000, "distinct generated questions, cycled through")
	fl.StringVar(&mix, "mix", "6:3:1", "shares of search, chat and ingest requests")
	fl.BoolVar(&fresh, "fresh", false, "reload the corpus even when it is there")
	fl.StringVar(&vocabDir, "vocabulary", "", "Markdown directory whose words seed the vocabulary (default examples/handbook)")
	fl.StringVar(&outDir, "out", "", "write load.json and load.md into this directory")
	fl.StringVar(&commit, "commit", "", "source revision to record (default $BENCH_COMMIT)")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func parseMix(s string) ([3]int, error) {
	var m [3]int
	if _, err := fmt.Sscanf(s, "%d:%d:%d", &m[0], &m[1], &m[2]); err != nil || m[0] < 0 || m[1] < 0 || m[2] < 0 || m[0]+m[1]+m[2] == 0 {
		return m, fmt.Errorf("--mix %q: give three non-negative shares search:chat:ingest, e.g. 6:3:1", s)
	}
	return m, nil
}

// loadServer is a `canon serve` subprocess on a loopback port.
type loadServer struct {
	cmd    *exec.Cmd
	url    string
	exited chan error
	stderr *tailBuffer
}

// startServer starts `canon serve --addr 127.0.0.1:0` over databaseURL and waits
// until it answers /healthz.
func startServer(ctx context.Context, databaseURL string, logf func(string, ...any)) (*loadServer, error) {
	cmd, err := serverCommand(ctx, "serve", "--addr", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "DATABASE_URL="+databaseURL, "KB_AUTH=off")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &loadServer{cmd: cmd, exited: make(chan error, 1), stderr: &tailBuffer{max: 16 << 10}}
	cmd.Stderr = s.stderr
	// SIGTERM first, as an operator would; the context's end kills it.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "canon listening on "); ok {
				addr <- strings.TrimSpace(a)
				continue
			}
			fmt.Fprintln(s.stderr, sc.Text())
		}
		s.exited <- cmd.Wait()
	}()
	select {
	case s.url = <-addr:
	case err := <-s.exited:
		return nil, fmt.Errorf("canon serve exited before listening (%w): %s", err, s.stderr.String())
	case <-time.After(time.Minute):
		s.stop(logf)
		return nil, fmt.Errorf("canon serve did not listen within a minute: %s", s.stderr.String())
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/healthz", nil)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			s.stop(logf)
			return nil, fmt.Errorf("canon serve at %s is not healthy after 30 s: %s", s.url, s.stderr.String())
		}
	}
	logf("load: canon serve (pid %d) listening on %s", cmd.Process.Pid, s.url)
	return s, nil
}

// stop sends SIGTERM and waits for the graceful shutdown.
func (s *loadServer) stop(logf func(string, ...any)) {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		logf("load: stopping canon serve: %v", err)
	}
	select {
	case err := <-s.exited:
		if err != nil {
			logf("load: canon serve exited: %v: %s", err, s.stderr.String())
		}
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill() //nolint:errcheck // it did not stop on SIGTERM; Wait reports what happened
		if err := <-s.exited; err != nil {
			logf("load: canon serve killed after 30 s: %v", err)
		}
	}
}

// tailBuffer keeps the last max bytes written to it (a server's stderr, for
// the error message should it fail).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
