package chatlog_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/canonkb/canon/chatlog"
	"github.com/canonkb/canon/internal/dbtest"
)

// The writer goroutine must have ended when Close returns and the tests end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestLogWhileClosing: handlers still logging while shutdown closes the logger
// lose their entries (counted as dropped) and never panic; every entry is
// either written or counted.
func TestLogWhileClosing(t *testing.T) {
	pool := dbtest.Pool(t)
	project := projectID(t, pool, "closing")
	l := chatlog.New(pool, 8, nil)
	const writers, perWriter = 16, 50
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range writers {
		wg.Go(func() {
			<-start
			for i := range perWriter {
				l.Log(chatlog.Entry{ProjectIDs: []int64{project}, Question: "q", Provider: "test", Model: "m", TotalMs: float64(i)})
			}
		})
	}
	close(start)
	time.Sleep(time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l.Close(ctx)
	l.Close(ctx) // twice is fine
	wg.Wait()
	l.Log(chatlog.Entry{Question: "after close"})
	s := l.Stats()
	if got := s.Written + s.Dropped + s.Failed; got != writers*perWriter+1 {
		t.Fatalf("written %d + dropped %d + failed %d = %d, want %d", s.Written, s.Dropped, s.Failed, got, writers*perWriter+1)
	}
	if s.Dropped == 0 {
		t.Errorf("the entry logged after Close was not counted as dropped: %+v", s)
	}
}

func projectID(t *testing.T, pool *pgxpool.Pool, key string) int64 {
	t.Helper()
	var id int64
	if err := pool.QueryRow(context.Background(), "INSERT INTO projects (project_key) VALUES ($1) RETURNING id", key).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestEntryWithoutProject: chat_logs rows carry their project (the key Citus
// would distribute by), so a turn naming no known project is counted as
// NoProject, not written, and the one naming a project is written.
func TestEntryWithoutProject(t *testing.T) {
	pool := dbtest.Pool(t)
	project := projectID(t, pool, "scoped")
	l := chatlog.New(pool, 8, slog.New(slog.DiscardHandler))
	l.Log(chatlog.Entry{Question: "nowhere", RefusalReason: "no_relevant_context"})
	l.Log(chatlog.Entry{ProjectIDs: []int64{project}, Question: "somewhere"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l.Close(ctx)
	if s := l.Stats(); s.Written != 1 || s.NoProject != 1 || s.Dropped != 0 || s.Failed != 0 || s.Gaps != 0 {
		t.Errorf("stats = %+v, want one written and one without a project", s)
	}
	var questions []string
	rows, err := pool.Query(ctx, "SELECT question FROM chat_logs WHERE question IN ('nowhere', 'somewhere')")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var q string
		if err := rows.Scan(&q); err != nil {
			t.Fatal(err)
		}
		questions = append(questions, q)
	}
	if rows.Err() != nil || len(questions) != 1 || questions[0] != "somewhere" {
		t.Errorf("chat_logs holds %v (%v), want [somewhere]", questions, rows.Err())
	}
}
