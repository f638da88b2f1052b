package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ReadsOptions tune a Reads.
type ReadsOptions struct {
	// CheckInterval is how often each replica's health and replay position are read.
	CheckInterval time.Duration
	// MaxWait bounds how long a read waits for a replica to replay this process's
	// latest write before it goes to the primary instead.
	MaxWait time.Duration
	Log     *slog.Logger
}

// Reads sends read-only work to a healthy streaming replica, round-robin, and
// to the primary when none is healthy, when the chosen one has not replayed
// this process's latest write (or the position the request carries, ReadAfter)
// within MaxWait (read-your-writes), or when the replica fails under the read
// (which then runs again on the primary). A nil *Reads reads from the primary.
type Reads struct {
	primary  *pgxpool.Pool
	replicas []*replica
	next     atomic.Uint64
	// written is the primary's WAL position (bytes) after this process's latest
	// ingest or lifecycle write: a replica serves reads once it has replayed it.
	written atomic.Int64
	opts    ReadsOptions
	stop    chan struct{}
	done    chan struct{}
}

type replica struct {
	pool     *pgxpool.Pool
	name     string
	healthy  atomic.Bool
	replayed atomic.Int64
}

// NewReads opens a pool per replica URL and starts checking them. A replica
// that is down at start is only unhealthy: reads go elsewhere until it answers.
// configure adjusts each pool as Connect's does. With no URLs it returns nil.
func NewReads(ctx context.Context, primary *pgxpool.Pool, urls []string, opts ReadsOptions,
	configure ...func(*pgxpool.Config)) (*Reads, error) {
	if len(urls) == 0 {
		return nil, nil
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	r := &Reads{primary: primary, opts: opts, stop: make(chan struct{}), done: make(chan struct{})}
	for i, url := range urls {
		cfg, err := poolConfig(url, configure...)
		if err != nil {
			r.closePools()
			return nil, fmt.Errorf("KB_DATABASE_REPLICA_URLS: entry %d of %d %w", i+1, len(urls), err)
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			r.closePools()
			return nil, err
		}
		r.replicas = append(r.replicas, &replica{pool: pool, name: Redact(url)})
	}
	r.checkAll(ctx)
	go r.run()
	return r, nil
}

// Close stops the checks and closes the replicas' pools (not the primary's).
func (r *Reads) Close() {
	if r == nil {
		return
	}
	close(r.stop)
	<-r.done
	r.closePools()
}

func (r *Reads) closePools() {
	for _, rep := range r.replicas {
		rep.pool.Close()
	}
}

func (r *Reads) run() {
	defer close(r.done)
	tick := time.NewTicker(r.opts.CheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
			// A check may take longer than a short interval on a busy machine.
			ctx, cancel := context.WithTimeout(context.Background(), max(r.opts.CheckInterval, time.Second))
			r.checkAll(ctx)
			cancel()
		}
	}
}

// checkAll reads each replica's state: healthy while it answers and is in
// recovery (a promoted replica is a primary of its own, not a copy of ours).
func (r *Reads) checkAll(ctx context.Context) {
	for _, rep := range r.replicas {
		var recovering bool
		var replayed int64
		err := rep.pool.QueryRow(ctx, `SELECT pg_is_in_recovery(),
			coalesce((pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint, 0)`).Scan(&recovering, &replayed)
		healthy := err == nil && recovering
		if was := rep.healthy.Swap(healthy); was != healthy {
			r.opts.Log.Info("read replica health changed", "replica", rep.name, "healthy", healthy, "err", err)
		}
		if healthy {
			rep.replayed.Store(replayed)
		}
	}
}

// Wrote records the primary's WAL position after a write this process's later
// reads must see. Call it once the write has committed.
func (r *Reads) Wrote(ctx context.Context) error {
	if r == nil {
		return nil
	}
	var pos int64
	if err := r.primary.QueryRow(ctx, `SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint`).Scan(&pos); err != nil {
		return err
	}
	for {
		cur := r.written.Load()
		if pos <= cur || r.written.CompareAndSwap(cur, pos) {
			return nil
		}
	}
}

// Position is the primary's WAL position (bytes) after this process's latest
// recorded write, 0 before any. A client of several canon processes carries it
// to the next one (ReadAfter), which then reads what this one wrote.
func (r *Reads) Position() int64 {
	if r == nil {
		return 0
	}
	return r.written.Load()
}

type readAfterKey struct{}

// ReadAfter makes the reads made with ctx wait, as for this process's own
// writes, for a replica that has replayed pos (a Position of any canon process
// on the same primary), or go to the primary.
func ReadAfter(ctx context.Context, pos int64) context.Context {
	return context.WithValue(ctx, readAfterKey{}, pos)
}

// FormatLSN writes a WAL position as PostgreSQL prints a pg_lsn: 0/16B3748.
func FormatLSN(pos int64) string {
	return fmt.Sprintf("%X/%X", uint64(pos)>>32, uint64(pos)&0xFFFFFFFF)
}

// ParseLSN reads a pg_lsn as FormatLSN writes it.
func ParseLSN(s string) (int64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if !ok || err1 != nil || err2 != nil || h>>31 != 0 {
		return 0, fmt.Errorf("%q is not a WAL position such as 0/16B3748", s)
	}
	return int64(h<<32 | l), nil
}

type readPoolKey struct{}

// ReadPool is the pool a read inside Reads.Do uses; fallback outside one.
func ReadPool(ctx context.Context, fallback *pgxpool.Pool) *pgxpool.Pool {
	if p, ok := ctx.Value(readPoolKey{}).(*pgxpool.Pool); ok {
		return p
	}
	return fallback
}

// WithReadPool runs the reads made with ctx on pool, as Do does for the server
// it picks (the latency bench reads through a pool of other settings).
func WithReadPool(ctx context.Context, pool *pgxpool.Pool) context.Context {
	return context.WithValue(ctx, readPoolKey{}, pool)
}

// Do runs read, which reads through ReadPool(ctx, …), on a replica or on the
// primary. A replica failing under it (IsUnavailable) is marked unhealthy and
// read runs again on the primary, so the caller sees no error. Inside another
// Do it runs where that one chose.
func (r *Reads) Do(ctx context.Context, read func(ctx context.Context) error) error {
	if r == nil || ctx.Value(readPoolKey{}) != nil {
		return read(ctx)
	}
	rep := r.pick(ctx)
	if rep == nil {
		return read(context.WithValue(ctx, readPoolKey{}, r.primary))
	}
	err := read(context.WithValue(ctx, readPoolKey{}, rep.pool))
	if err == nil || ctx.Err() != nil {
		return err
	}
	var pg *pgconn.PgError
	switch {
	case IsUnavailable(err):
		if rep.healthy.Swap(false) {
			r.opts.Log.Warn("read replica failed under a read; reading from the primary", "replica", rep.name, "err", err)
		}
	case errors.As(err, &pg) && pg.Code == "40001":
		// Cancelled by a conflict with recovery (the replica replaying a vacuum
		// of rows the read needed): the primary has no such conflict.
	default:
		return err
	}
	return read(context.WithValue(ctx, readPoolKey{}, r.primary))
}

// pick returns the next healthy replica that has replayed the latest write,
// waiting up to MaxWait for it; nil for the primary.
func (r *Reads) pick(ctx context.Context) *replica {
	n := len(r.replicas)
	start := int(r.next.Add(1) % uint64(n))
	for i := range n {
		rep := r.replicas[(start+i)%n]
		if !rep.healthy.Load() {
			continue
		}
		if r.caughtUp(ctx, rep) {
			return rep
		}
		return nil
	}
	return nil
}

// caughtUp reports whether rep has replayed the latest write, polling it for
// at most MaxWait.
func (r *Reads) caughtUp(ctx context.Context, rep *replica) bool {
	want := r.written.Load()
	if pos, ok := ctx.Value(readAfterKey{}).(int64); ok {
		want = max(want, pos)
	}
	if rep.replayed.Load() >= want {
		return true
	}
	deadline := time.Now().Add(r.opts.MaxWait)
	for {
		var replayed int64
		err := rep.pool.QueryRow(ctx, `SELECT coalesce((pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint, 0)`).Scan(&replayed)
		if err != nil {
			return false
		}
		if replayed > rep.replayed.Load() {
			rep.replayed.Store(replayed)
		}
		if replayed >= want {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
}
