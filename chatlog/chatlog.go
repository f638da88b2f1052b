// Package chatlog records chat turns off the request path. Entries go through a
// bounded queue to one writer goroutine: a failing insert, a full queue or a dead
// database loses the log row (counted, and reported in the server log), never the
// user's answer.
package chatlog

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
)

// Entry is one chat turn.
type Entry struct {
	// ProjectIDs the turn searched; the log row carries the first (one row per turn),
	// a refusal counts as a content gap in each.
	ProjectIDs []int64
	Question   string
	// AskerGroups are the groups of the asker's document view (nil: it sees every
	// document); a refusal's content gap is listed only to callers holding them.
	AskerGroups   []string
	Filters       domain.Filters
	RefusalReason string
	Citations     any
	Provider      string
	Model         string
	RetrievalMs   float64
	GenerationMs  float64
	TotalMs       float64
	PromptTokens  int
	CompletionTok int
	// Error is why the turn failed after retrieval (the language model's
	// redacted error); empty for an answer or a refusal.
	Error string
	At    time.Time
}

// Stats counts what happened to entries.
type Stats struct {
	Written, Dropped, Failed, Gaps int64
	// NoProject counts turns whose project keys named no known project: not written.
	NoProject int64
}

// Logger writes entries in the background.
type Logger struct {
	pool    *pgxpool.Pool
	queue   chan Entry
	log     *slog.Logger
	timeout time.Duration
	written atomic.Int64
	dropped atomic.Int64
	failed  atomic.Int64
	gaps    atomic.Int64
	// noProject: see Stats.NoProject.
	noProject atomic.Int64
	done      chan struct{}
	// mu guards closed: Log sends under the read lock and Close closes the queue
	// under the write lock, so a handler still running when shutdown gives up on
	// it loses its entry (counted) instead of panicking on a closed channel.
	mu     sync.RWMutex
	closed bool
}

// New starts a logger with a queue of size entries.
func New(pool *pgxpool.Pool, size int, log *slog.Logger) *Logger {
	if size < 1 {
		size = 1
	}
	if log == nil {
		log = slog.Default()
	}
	l := &Logger{pool: pool, queue: make(chan Entry, size), log: log, timeout: 5 * time.Second, done: make(chan struct{})}
	go l.run()
	return l
}

// Log queues an entry and never blocks: with the queue full, or the logger
// closed, the entry is dropped.
func (l *Logger) Log(e Entry) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		n := l.dropped.Add(1)
		l.log.Warn("chat log closed; entry dropped", "dropped_total", n)
		return
	}
	select {
	case l.queue <- e:
	default:
		n := l.dropped.Add(1)
		l.log.Warn("chat log queue full; entry dropped", "dropped_total", n)
	}
}

// Stats returns the counters.
func (l *Logger) Stats() Stats {
	return Stats{Written: l.written.Load(), Dropped: l.dropped.Load(), Failed: l.failed.Load(), Gaps: l.gaps.Load(),
		NoProject: l.noProject.Load()}
}

// Close stops accepting entries and waits (until ctx ends) for the queue to
// drain. It is safe to call more than once and while Log is being called.
func (l *Logger) Close(ctx context.Context) {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.queue)
	}
	l.mu.Unlock()
	select {
	case <-l.done:
	case <-ctx.Done():
	}
}

func (l *Logger) run() {
	defer close(l.done)
	for e := range l.queue {
		l.write(e)
	}
}

func (l *Logger) write(e Entry) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	q := db.New(l.pool)
	filters, _ := json.Marshal(filtersJSON(e.Filters))
	citations, _ := json.Marshal(e.Citations)
	if e.Citations == nil {
		citations = []byte("[]")
	}
	if len(e.ProjectIDs) == 0 {
		// chat_logs is keyed by project (distributable by it): a turn whose
		// project keys name no project has nowhere to go, and no gap to count.
		n := l.noProject.Add(1)
		l.log.Info("chat turn names no known project; not logged", "no_project_total", n)
		return
	}
	var reason, failure *string
	if e.RefusalReason != "" {
		reason = &e.RefusalReason
	}
	if e.Error != "" {
		failure = &e.Error
	}
	err := q.ChatLogInsert(ctx, db.ChatLogInsertParams{
		ProjectID: e.ProjectIDs[0], Question: e.Question, Filters: string(filters), RefusalReason: reason, Citations: string(citations),
		Provider: e.Provider, Model: e.Model, RetrievalMs: e.RetrievalMs, GenerationMs: e.GenerationMs,
		TotalMs: e.TotalMs, PromptTokens: int32(e.PromptTokens), CompletionTokens: int32(e.CompletionTok),
		Error: failure,
	})
	if err != nil {
		n := l.failed.Add(1)
		l.log.Warn("chat log insert failed; entry lost", "err", err, "failed_total", n)
	} else {
		l.written.Add(1)
	}
	// The gap rollup is written on its own: a broken chat_logs table must not hide
	// what users could not get answered.
	if e.RefusalReason == "" {
		return
	}
	norm := domain.NormalizeQuestion(e.Question)
	for _, pid := range e.ProjectIDs {
		if err := q.ContentGapRecord(ctx, db.ContentGapRecordParams{
			ProjectID: pid, NormalizedQuestion: norm, ExampleQuestion: e.Question, At: e.At, AskerGroups: e.AskerGroups,
		}); err != nil {
			n := l.failed.Add(1)
			l.log.Warn("content gap insert failed", "err", err, "failed_total", n)
			continue
		}
		l.gaps.Add(1)
	}
}
