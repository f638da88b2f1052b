package chatlog_test

import (
	"context"
	"sync"
	"testing"
	"time"

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
	l := chatlog.New(pool, 8, nil)
	const writers, perWriter = 16, 50
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range writers {
		wg.Go(func() {
			<-start
			for i := range perWriter {
				l.Log(chatlog.Entry{Question: "q", Provider: "test", Model: "m", TotalMs: float64(i)})
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
