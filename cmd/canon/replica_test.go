//go:build unix

package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/canonkb/canon/config"
	"github.com/canonkb/canon/domain"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/server"
)

// TestReadReplicas runs canon on a primary of the test's own and a streaming
// replica made from it by pg_basebackup -R (ports derived like every extra
// server's, dbtest.Port): searches read from the replica, an ingest's change is
// seen by the next search although the replica has stopped replaying (it waits
// KB_DATABASE_REPLICA_MAX_WAIT, then reads the primary), and a replica killed
// while searches run costs them nothing. Across two canon processes the
// position a write's response names (Canon-Read-After) carries read-your-writes.
func TestReadReplicas(t *testing.T) {
	ctx := context.Background()
	primary := dbtest.Primary(t, dbtest.Port(t, 1))
	admin := mustConnect(t, primary.URL)
	if _, err := admin.Exec(ctx, "CREATE DATABASE canon"); err != nil {
		t.Fatal(err)
	}
	if err := postgres.Migrate(ctx, primary.DatabaseURL("canon"), "up", postgres.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	replica := dbtest.Replica(t, primary, dbtest.Port(t, 2))
	standby := mustConnect(t, replica.DatabaseURL("canon"))
	t.Setenv("DATABASE_URL", primary.DatabaseURL("canon"))
	t.Setenv("KB_DATABASE_REPLICA_URLS", replica.DatabaseURL("canon"))
	t.Setenv("KB_DATABASE_REPLICA_MAX_WAIT", "300ms")
	t.Setenv("KB_DATABASE_REPLICA_CHECK_INTERVAL", "50ms")
	cfg, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	a, err := openApp(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	files, err := ingest.ReadDirs([]string{"../../examples/handbook"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ingester.Ingest(ctx, files, ingest.Options{Project: "platform"}); err != nil {
		t.Fatal(err)
	}
	// Read-your-writes: the ingest's rows, at once, wherever they are read.
	if title := topTitle(t, a, "what cache layer did we standardise on?"); title == "" {
		t.Fatal("the search after the ingest found nothing")
	}

	// Routing: with replay paused, a change made behind canon's back (no
	// write recorded) is not seen: the search read the replica.
	waitReplayed(t, admin, standby)
	if _, err := standby.Exec(ctx, "SELECT pg_wal_replay_pause()"); err != nil {
		t.Fatal(err)
	}
	before := topTitle(t, a, "what cache layer did we standardise on?")
	primaryDB := mustConnect(t, primary.DatabaseURL("canon"))
	tag, err := primaryDB.Exec(ctx, "UPDATE documents SET title = 'Changed behind canon' WHERE title = $1", before)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("update: %v %v", tag, err)
	}
	if got := topTitle(t, a, "what cache layer did we standardise on?"); got != before {
		t.Errorf("with replay paused the search saw %q: it did not read the replica", got)
	}

	// Lag: an ingest through canon records its write; the next search waits for
	// the paused replica, gives up after the bound and reads the primary.
	changed := append([]ingest.File(nil), files...)
	for i, f := range changed {
		if strings.HasSuffix(f.Path, "rb-deploy-rollback.md") {
			changed[i].Content = append(append([]byte(nil), f.Content...), []byte("\n\nThe quokka protocol applies.\n")...)
		}
	}
	if _, err := a.ingester.Ingest(ctx, changed, ingest.Options{Project: "platform"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if got := topDoc(t, a, "quokka protocol"); got != "rb-deploy-rollback" {
		t.Errorf("the search after the ingest found %q, not the changed runbook: read-your-writes failed", got)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("the search took %s: it did not wait for the lagging replica", took)
	}
	readAfterAcrossProcesses(t, cfg, a)
	if _, err := standby.Exec(ctx, "SELECT pg_wal_replay_resume()"); err != nil {
		t.Fatal(err)
	}
	waitReplayed(t, admin, standby)

	// A replica killed under load: every search still answers.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	stop := make(chan struct{})
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := a.hierarchy.Search(ctx, searchRequest("how do deployment rollbacks work?")); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	replica.Kill()
	time.Sleep(700 * time.Millisecond)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a search failed when the replica died: %v", err)
	}
	if got := topDoc(t, a, "quokka protocol"); got != "rb-deploy-rollback" {
		t.Errorf("after the replica died the search found %q", got)
	}
}

func mustConnect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func searchRequest(q string) *domain.SearchRequest {
	return &domain.SearchRequest{Query: q, Filters: domain.RawFilters{ProjectKeys: []string{"platform"}}}
}

func topHit(t *testing.T, a *app, q string) *domain.Hit {
	t.Helper()
	res, err := a.hierarchy.Search(context.Background(), searchRequest(q))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Primary) == 0 {
		return &domain.Hit{}
	}
	return res.Primary[0]
}

func topTitle(t *testing.T, a *app, q string) string { t.Helper(); return topHit(t, a, q).Title }
func topDoc(t *testing.T, a *app, q string) string   { t.Helper(); return topHit(t, a, q).DocID }

// waitReplayed waits (at most 30 s) until the standby has replayed what the
// primary has written.
func waitReplayed(t *testing.T, primary, standby *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	var lsn string
	if err := primary.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var done bool
		if err := standby.QueryRow(ctx, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn).Scan(&done); err != nil {
			t.Fatal(err)
		}
		if done {
			return
		}
	}
	t.Fatal(errors.New("the replica did not replay the primary's WAL in 30 s"))
}

// readAfterAcrossProcesses: process a has written (the quokka runbook) while the
// replica's replay is paused. A second process, b, knows nothing of it: its
// search reads the stale replica, unless the request carries the position a
// later write's response named (Canon-Read-After, past the runbook's), when it
// waits for the replica and then reads the primary.
func readAfterAcrossProcesses(t *testing.T, cfg config.Config, a *app) {
	t.Helper()
	ctx := context.Background()
	b, err := openApp(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	serve := func(p *app) string {
		srv := httptest.NewServer(server.Handler(server.Deps{Pool: p.pool, Reads: p.reads, Searcher: p.searcher,
			SearchService: p.hierarchy, Ingester: p.ingester, Chat: p.chat}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	aURL, bURL := serve(a), serve(b)

	// A write through a's API names the position after it.
	change, err := canonv1connect.NewCanonServiceClient(http.DefaultClient, aURL).Deprecate(ctx,
		connect.NewRequest(&canonv1.DeprecateRequest{ProjectKey: "platform", Slug: "std-go-database-access"}))
	if err != nil {
		t.Fatal(err)
	}
	named := change.Header().Get(server.ReadAfterHeader)
	if pos, err := postgres.ParseLSN(named); err != nil || pos != a.reads.Position() || pos == 0 {
		t.Fatalf("the write's %s is %q (%v); want %s", server.ReadAfterHeader, named, err, postgres.FormatLSN(a.reads.Position()))
	}

	search := canonv1connect.NewSearchServiceClient(http.DefaultClient, bURL)
	top := func(header string) (string, time.Duration, error) {
		req := connect.NewRequest(&canonv1.SearchRequest{Query: "quokka protocol", ProjectKey: "platform"})
		if header != "" {
			req.Header().Set(server.ReadAfterHeader, header)
		}
		start := time.Now()
		res, err := search.Search(ctx, req)
		if err != nil {
			return "", 0, err
		}
		if hits := res.Msg.GetResult().GetPrimary(); len(hits) > 0 {
			return hits[0].GetDocId(), time.Since(start), nil
		}
		return "", time.Since(start), nil
	}
	if got, _, err := top(""); err != nil || got == "rb-deploy-rollback" {
		t.Errorf("process b without the position found %q (%v): it did not read the paused replica", got, err)
	}
	got, took, err := top(named)
	if err != nil || got != "rb-deploy-rollback" {
		t.Errorf("process b with %s: %s found %q (%v); want the quokka runbook a wrote", server.ReadAfterHeader, named, got, err)
	}
	if took < 300*time.Millisecond {
		t.Errorf("process b with the position answered in %s: it did not wait for the lagging replica", took)
	}
	if _, _, err := top("not-a-position"); connect.CodeOf(err) != connect.CodeInvalidArgument ||
		!strings.Contains(err.Error(), "is not a WAL position such as 0/16B3748") {
		t.Errorf("a malformed %s: %v; want invalid_argument naming the form", server.ReadAfterHeader, err)
	}
}
