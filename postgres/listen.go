package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Channels canon notifies on, and what a payload names.
const (
	// ChannelLanguages: a project's languages changed (migration 00070's
	// triggers); the payload is the project's id.
	ChannelLanguages = "canon_languages"
	// ChannelChanges: an ingest changed a project's documents (ingest.Ingester,
	// after it committed); the payload is the project's key.
	ChannelChanges = "canon_changes"
)

// Listener delivers the notifications of some channels to a long-lived
// process, which keeps caches that other processes' writes make stale.
type Listener struct {
	// Channels to LISTEN on.
	Channels []string
	// Notify receives each notification, in order, on the listening goroutine.
	Notify func(channel, payload string)
	// Listening runs each time LISTEN has taken effect, the first time and after
	// each reconnection: what changed while nothing listened went unheard, so a
	// cache should forget everything here.
	Listening func()
	// Log reports a lost connection (nil: slog.Default()).
	Log *slog.Logger
}

// maxListenBackoff bounds the wait between reconnections.
const maxListenBackoff = 30 * time.Second

// Run listens on a connection of its own (the pool's configuration, not one of
// its connections) until ctx ends. A lost connection is retried with backoff;
// until then the caches rely on their TTL.
func (l Listener) Run(ctx context.Context, pool *pgxpool.Pool) {
	log := l.Log
	if log == nil {
		log = slog.Default()
	}
	backoff := time.Second
	for {
		heard, err := l.listen(ctx, pool.Config().ConnConfig.Copy())
		if ctx.Err() != nil {
			return
		}
		if heard {
			backoff = time.Second
		}
		log.Warn("listening for other processes' changes failed; caches follow them only by their TTL until it is back",
			"err", err, "channels", l.Channels, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxListenBackoff)
	}
}

// listen runs one connection until ctx ends or it fails; heard says whether
// LISTEN took effect.
func (l Listener) listen(ctx context.Context, cfg *pgx.ConnConfig) (heard bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	for _, ch := range l.Channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return false, fmt.Errorf("listen %s: %w", ch, err)
		}
	}
	if l.Listening != nil {
		l.Listening()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		if l.Notify != nil {
			l.Notify(n.Channel, n.Payload)
		}
	}
}
