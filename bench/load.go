package bench

// `canon bench load`: concurrent clients mixing search, chat and small ingests
// against a running canon server for a fixed time, reporting errors, latency
// percentiles and throughput per RPC, and the server's memory.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"

	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
)

// The RPCs a load mixes, in report order.
const (
	LoadSearch = "SearchService.Search"
	LoadChat   = "ChatService.Chat"
	LoadIngest = "IngestService.Ingest"
)

var loadRPCs = []string{LoadSearch, LoadChat, LoadIngest}

// LoadOptions configures a load run.
type LoadOptions struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:8787.
	URL string
	// Clients run concurrently, each one request at a time (default 16).
	Clients int
	// Duration of the measured run (default 60 s), after a short warm-up.
	Duration time.Duration
	// Project is searched and asked about; Queries are the questions (cycled).
	Project string
	Queries []string
	// ChangesProject receives the small ingests (default Project + "-changes"),
	// so the corpus itself stays as loaded.
	ChangesProject string
	// Mix is the share of search, chat and ingest requests (default 6:3:1).
	Mix [3]int
	// ServerPID, when set, is the server process whose memory is read from
	// /proc/<pid>/status; otherwise the server's /metrics is read.
	ServerPID int
	// Pool, when set, describes the database in the report.
	Pool *pgxpool.Pool
	// Command and Commit are recorded in the report.
	Command, Commit string
	Log             func(format string, args ...any)
}

// LoadReport is the outcome of a load run.
type LoadReport struct {
	Command   string         `json:"command"`
	Commit    string         `json:"commit,omitempty"`
	StartedAt time.Time      `json:"started_at"`
	Machine   LatencyMachine `json:"machine"`
	Project   string         `json:"project"`
	Chunks    int64          `json:"chunks"`
	Documents int64          `json:"documents"`
	Clients   int            `json:"clients"`
	Mix       [3]int         `json:"mix_search_chat_ingest"`
	DurationS float64        `json:"duration_s"`
	Requests  int            `json:"requests"`
	Errors    int            `json:"errors"`
	QPS       float64        `json:"qps"`
	RPCs      []LoadRPC      `json:"rpcs"`
	Server    LoadServer     `json:"server"`
}

// LoadRPC is one RPC's figures: latencies of the successful requests.
type LoadRPC struct {
	Name       string  `json:"name"`
	Requests   int     `json:"requests"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	QPS        float64 `json:"qps"`
	MeanMs     float64 `json:"mean_ms"`
	P50Ms      float64 `json:"p50_ms"`
	P95Ms      float64 `json:"p95_ms"`
	P99Ms      float64 `json:"p99_ms"`
	MaxMs      float64 `json:"max_ms"`
}

// LoadServer is the server's resident memory.
type LoadServer struct {
	PID int `json:"pid,omitempty"`
	// PeakRSSMB is VmHWM (the process's peak) when the pid is known, else the
	// largest process_resident_memory_bytes seen in /metrics.
	PeakRSSMB float64 `json:"peak_rss_mb"`
	EndRSSMB  float64 `json:"end_rss_mb"`
	Source    string  `json:"source"`
}

func (o *LoadOptions) defaults() error {
	if o.URL == "" {
		return errors.New("load: no server URL")
	}
	if o.Clients <= 0 {
		o.Clients = 16
	}
	if o.Duration <= 0 {
		o.Duration = 60 * time.Second
	}
	if len(o.Queries) == 0 {
		return errors.New("load: no questions")
	}
	if o.ChangesProject == "" {
		o.ChangesProject = o.Project + "-changes"
	}
	if o.Mix == [3]int{} {
		o.Mix = [3]int{6, 3, 1}
	}
	if o.Mix[0] < 0 || o.Mix[1] < 0 || o.Mix[2] < 0 || o.Mix[0]+o.Mix[1]+o.Mix[2] == 0 {
		return fmt.Errorf("load: mix %v: give non-negative shares, not all zero", o.Mix)
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	return nil
}

// loadClient sends one kind of request after another.
type loadClient struct {
	o      *LoadOptions
	id     int
	search canonv1connect.SearchServiceClient
	chat   canonv1connect.ChatServiceClient
	ingest canonv1connect.IngestServiceClient
}

// kind is the RPC of a client's n-th request: the mix, spread over the clients.
func (c *loadClient) kind(n int) string {
	total := c.o.Mix[0] + c.o.Mix[1] + c.o.Mix[2]
	slot := (c.id + n) % total
	switch {
	case slot < c.o.Mix[0]:
		return LoadSearch
	case slot < c.o.Mix[0]+c.o.Mix[1]:
		return LoadChat
	}
	return LoadIngest
}

func (c *loadClient) do(ctx context.Context, rpc string, n int) error {
	q := c.o.Queries[(c.id*7919+n)%len(c.o.Queries)]
	filters := &canonv1.Filters{ProjectKeys: []string{c.o.Project}}
	var err error
	switch rpc {
	case LoadSearch:
		_, err = c.search.Search(ctx, connect.NewRequest(&canonv1.SearchRequest{Query: q, Filters: filters}))
	case LoadChat:
		_, err = c.chat.Chat(ctx, connect.NewRequest(&canonv1.ChatRequest{Question: q, Filters: filters}))
	case LoadIngest:
		// A small change: one of four notes per client, rewritten each time.
		note := n % 4
		_, err = c.ingest.Ingest(ctx, connect.NewRequest(&canonv1.IngestRequest{ProjectKey: c.o.ChangesProject,
			Files: []*canonv1.IngestFile{{Path: fmt.Sprintf("load/client-%02d-note-%d.md", c.id, note),
				Content: fmt.Appendf(nil, "# Load note %d.%d\n\nRevision %d: %s\n", c.id, note, n, q)}}}))
	}
	return err
}

// rpcSamples gathers one RPC's outcomes.
type rpcSamples struct {
	ok       []time.Duration
	errors   int
	firstErr string
}

// RunLoad runs o.Clients clients against o.URL for o.Duration.
func RunLoad(ctx context.Context, o LoadOptions) (*LoadReport, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	rep := &LoadReport{Command: o.Command, Commit: o.Commit, StartedAt: time.Now().UTC().Truncate(time.Second),
		Project: o.Project, Clients: o.Clients, Mix: o.Mix}
	rep.Machine.LoadAvgStart = loadAvg()
	if o.Pool != nil {
		if err := machine(ctx, o.Pool, &rep.Machine); err != nil {
			return nil, err
		}
		err := o.Pool.QueryRow(ctx, `SELECT coalesce(s.chunk_count, 0), (SELECT count(*) FROM documents d WHERE d.project_id = p.id)
			FROM projects p LEFT JOIN project_stats s ON s.project_id = p.id WHERE p.project_key = $1`, o.Project).
			Scan(&rep.Chunks, &rep.Documents)
		if err != nil {
			return nil, fmt.Errorf("load: project %s: %w", o.Project, err)
		}
	}
	transport := &http.Transport{MaxIdleConnsPerHost: o.Clients, MaxConnsPerHost: o.Clients}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport}
	clients := make([]*loadClient, o.Clients)
	for i := range clients {
		clients[i] = &loadClient{o: &o, id: i, search: canonv1connect.NewSearchServiceClient(hc, o.URL),
			chat: canonv1connect.NewChatServiceClient(hc, o.URL), ingest: canonv1connect.NewIngestServiceClient(hc, o.URL)}
	}

	// Warm-up, unmeasured: every client sends each RPC once (connections open,
	// statements prepare); a failure here stops the run with its reason.
	var wg sync.WaitGroup
	warmErrs := make([]error, len(clients))
	for i, c := range clients {
		wg.Go(func() {
			for _, rpc := range loadRPCs {
				rctx, cancel := context.WithTimeout(ctx, time.Minute)
				err := c.do(rctx, rpc, 0)
				cancel()
				if err != nil {
					warmErrs[i] = fmt.Errorf("warm-up %s: %w", rpc, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(warmErrs...); err != nil {
		return nil, err
	}

	mem := newMemorySampler(o.URL, o.ServerPID, hc)
	stopSampling := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Go(func() { mem.run(ctx, stopSampling) })

	o.Log("load: %d clients for %s against %s", o.Clients, o.Duration, o.URL)
	var mu sync.Mutex
	samples := map[string]*rpcSamples{}
	for _, rpc := range loadRPCs {
		samples[rpc] = &rpcSamples{}
	}
	start := time.Now()
	deadline := start.Add(o.Duration)
	for _, c := range clients {
		wg.Go(func() {
			mine := map[string]*rpcSamples{}
			for _, rpc := range loadRPCs {
				mine[rpc] = &rpcSamples{}
			}
			for n := 1; time.Now().Before(deadline) && ctx.Err() == nil; n++ {
				rpc := c.kind(n)
				rctx, cancel := context.WithTimeout(ctx, time.Minute)
				t0 := time.Now()
				err := c.do(rctx, rpc, n)
				d := time.Since(t0)
				cancel()
				s := mine[rpc]
				if err != nil {
					s.errors++
					if s.firstErr == "" {
						s.firstErr = err.Error()
					}
					continue
				}
				s.ok = append(s.ok, d)
			}
			mu.Lock()
			defer mu.Unlock()
			for rpc, s := range mine {
				all := samples[rpc]
				all.ok = append(all.ok, s.ok...)
				all.errors += s.errors
				if all.firstErr == "" {
					all.firstErr = s.firstErr
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stopSampling)
	sampling.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	rep.DurationS = elapsed.Seconds()
	for _, rpc := range loadRPCs {
		s := samples[rpc]
		r := LoadRPC{Name: rpc, Requests: len(s.ok) + s.errors, Errors: s.errors, FirstError: s.firstErr,
			QPS: float64(len(s.ok)) / elapsed.Seconds()}
		if len(s.ok) > 0 {
			var sum, longest time.Duration
			for _, d := range s.ok {
				sum += d
				longest = max(longest, d)
			}
			r.MeanMs = ms(sum / time.Duration(len(s.ok)))
			r.P50Ms, r.P95Ms, r.P99Ms = ms(Percentile(s.ok, 50)), ms(Percentile(s.ok, 95)), ms(Percentile(s.ok, 99))
			r.MaxMs = ms(longest)
		}
		rep.RPCs = append(rep.RPCs, r)
		rep.Requests += r.Requests
		rep.Errors += r.Errors
		rep.QPS += r.QPS
	}
	rep.Server = mem.report(ctx)
	rep.Machine.LoadAvgEnd = loadAvg()
	return rep, nil
}

// memorySampler follows the server's resident memory during the run.
type memorySampler struct {
	url    string
	pid    int
	client *http.Client
	peakMB float64
}

func newMemorySampler(url string, pid int, client *http.Client) *memorySampler {
	return &memorySampler{url: url, pid: pid, client: client}
}

func (m *memorySampler) run(ctx context.Context, stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if rss, err := m.rss(ctx); err == nil {
			m.peakMB = max(m.peakMB, rss)
		}
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// rss is the server's resident set now, in MiB.
func (m *memorySampler) rss(ctx context.Context) (float64, error) {
	if m.pid > 0 {
		return procStatusMB(m.pid, "VmRSS")
	}
	return metricsRSSMB(ctx, m.client, m.url)
}

func (m *memorySampler) report(ctx context.Context) LoadServer {
	s := LoadServer{PID: m.pid, PeakRSSMB: m.peakMB}
	if end, err := m.rss(ctx); err == nil {
		s.EndRSSMB = end
		s.PeakRSSMB = max(s.PeakRSSMB, end)
	}
	if m.pid > 0 {
		s.Source = "/proc/<pid>/status (VmHWM, VmRSS)"
		if hwm, err := procStatusMB(m.pid, "VmHWM"); err == nil {
			s.PeakRSSMB = hwm
		}
	} else {
		s.Source = "process_resident_memory_bytes from /metrics, sampled each second"
	}
	return s
}

// procStatusMB reads a "kB" field of /proc/<pid>/status.
func procStatusMB(pid int, field string) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, err := strconv.ParseFloat(f[0], 64)
				return kb / 1024, err
			}
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}

// metricsRSSMB reads process_resident_memory_bytes from the server's /metrics.
func metricsRSSMB(ctx context.Context, client *http.Client, url string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "process_resident_memory_bytes "); ok {
			b, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return b / (1 << 20), err
		}
	}
	return 0, errors.New("/metrics has no process_resident_memory_bytes")
}

// WriteMarkdown renders the report.
func (r *LoadReport) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "# Load: %d clients for %.0f s against `canon serve`\n\n", r.Clients, r.DurationS)
	fmt.Fprintf(w, "Generated by `%s`", r.Command)
	if r.Commit != "" {
		fmt.Fprintf(w, " at commit %s", r.Commit)
	}
	fmt.Fprintf(w, ", started %s.\n\n", r.StartedAt.Format(time.RFC3339))
	m := r.Machine
	fmt.Fprintf(w, "Machine: %d CPUs (%s/%s), load average %s at the start and %s at the end; PostgreSQL %s, pgvector %s, "+
		"shared_buffers %s, work_mem %s; pool of %d connections.\n\n",
		m.CPUs, m.GOOS, m.GOARCH, m.LoadAvgStart, m.LoadAvgEnd, m.Postgres, m.PGVector, m.SharedBuffers, m.WorkMem, m.PoolMaxConns)
	fmt.Fprintf(w, "Corpus: project `%s`, %d chunks in %d documents (the synthetic corpus of `canon bench latency`). "+
		"Each client sends one request at a time, search, chat and ingest in the ratio %d:%d:%d; chat uses the configured "+
		"language model (the extractive composer by default); ingest rewrites one of four small notes per client in a "+
		"project of its own. Latencies are of the successful requests, measured by the client over loopback.\n\n",
		r.Project, r.Chunks, r.Documents, r.Mix[0], r.Mix[1], r.Mix[2])
	fmt.Fprintf(w, "| RPC | requests | errors | QPS | mean ms | p50 ms | p95 ms | p99 ms | max ms |\n")
	fmt.Fprintf(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.RPCs {
		fmt.Fprintf(w, "| %s | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n",
			x.Name, x.Requests, x.Errors, x.QPS, x.MeanMs, x.P50Ms, x.P95Ms, x.P99Ms, x.MaxMs)
	}
	fmt.Fprintf(w, "| **all** | %d | %d | %.1f | | | | | |\n\n", r.Requests, r.Errors, r.QPS)
	fmt.Fprintf(w, "Server memory: peak resident set %.0f MiB, %.0f MiB at the end (%s).\n",
		r.Server.PeakRSSMB, r.Server.EndRSSMB, r.Server.Source)
	for _, x := range r.RPCs {
		if x.FirstError != "" {
			fmt.Fprintf(w, "\nFirst %s error: %s\n", x.Name, x.FirstError)
		}
	}
}

// WriteFiles writes load.json and load.md into dir.
func (r *LoadReport) WriteFiles(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	jsonPath, mdPath := filepath.Join(dir, "load.json"), filepath.Join(dir, "load.md")
	if err := os.WriteFile(jsonPath, append(js, '\n'), 0o644); err != nil {
		return nil, err
	}
	var md strings.Builder
	r.WriteMarkdown(&md)
	if err := os.WriteFile(mdPath, []byte(md.String()), 0o644); err != nil {
		return nil, err
	}
	return []string{jsonPath, mdPath}, nil
}
