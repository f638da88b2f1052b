package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/canonkb/canon/bench"
	"github.com/canonkb/canon/internal/dbtest"
)

// TestBenchLoad runs `canon bench load` for a few seconds on a tiny corpus: it
// starts `canon serve` (this test binary, re-executed), and reports every RPC
// with requests, no errors, percentiles, QPS and the server's memory.
func TestBenchLoad(t *testing.T) {
	dbtest.URL(t) // skips, or fails in CI, without a database
	admin := os.Getenv("DATABASE_URL")
	name := fmt.Sprintf("canon_test_load_%d", time.Now().UnixNano()%1e9)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Error(err)
		}
	})
	saved := serverCommand
	t.Cleanup(func() { serverCommand = saved })
	serverCommand = func(ctx context.Context, args ...string) (*exec.Cmd, error) {
		cmd := exec.CommandContext(ctx, os.Args[0])
		cmd.Env = append(os.Environ(), runAsCanonEnv+"="+strings.Join(args, " "))
		return cmd, nil
	}
	// Equal shares: each client's first three requests are one of each RPC, so a
	// loaded machine's slow chats cannot leave ingest out of a 3 s run (6:3:1
	// reaches a client's ingest slot only by its 7th to 10th request).
	out, err := run(t, "bench", "load", "--database", name, "--chunks", "300", "--clients", "4", "--duration", "3s",
		"--queries", "50", "--mix", "1:1:1", "--json")
	if err != nil {
		t.Fatalf("bench load: %v\n%s", err, out)
	}
	var rep bench.LoadReport
	_, report, _ := strings.Cut(out, "\n{") // the progress lines come first
	if err := json.Unmarshal([]byte("{"+report), &rep); err != nil {
		t.Fatalf("not a JSON report: %v\n%s", err, out)
	}
	if rep.Errors != 0 || rep.Requests == 0 || rep.QPS <= 0 || rep.Clients != 4 || rep.Chunks != 300 {
		t.Errorf("report: %d requests, %d errors, %.1f QPS, %d clients, %d chunks", rep.Requests, rep.Errors, rep.QPS, rep.Clients, rep.Chunks)
	}
	var names []string
	for _, r := range rep.RPCs {
		names = append(names, r.Name)
		if r.Requests == 0 || r.Errors != 0 || r.P50Ms <= 0 || r.P50Ms > r.P95Ms || r.P95Ms > r.P99Ms || r.QPS <= 0 {
			t.Errorf("%s: %+v", r.Name, r)
		}
	}
	if got := strings.Join(names, ","); got != "SearchService.Search,ChatService.Chat,IngestService.Ingest" {
		t.Errorf("RPCs %s", got)
	}
	if rep.Server.PID == 0 || rep.Server.PeakRSSMB <= 0 || rep.Server.EndRSSMB <= 0 || rep.Machine.Postgres == "" {
		t.Errorf("server %+v, machine %+v", rep.Server, rep.Machine)
	}
	var md strings.Builder
	rep.WriteMarkdown(&md)
	if !strings.Contains(md.String(), "| SearchService.Search |") || !strings.Contains(md.String(), "peak resident set") {
		t.Errorf("markdown:\n%s", md.String())
	}
}
