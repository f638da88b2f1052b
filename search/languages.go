package search

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/language"
)

// projectLanguages are the languages of a set of searched projects and the
// text-search configurations that analyse a question to them, most chunks
// first (canon_project_languages): SearchRank's query_configs.
type projectLanguages struct {
	languages []string
	configs   []string
}

// languagesTTL bounds how long a set of projects' languages is reused while no
// WatchLanguages listens (or its connection is down).
const languagesTTL = 30 * time.Second

// languagesChannel is where migration 00070's triggers announce that a
// project's languages changed.
const languagesChannel = "canon_languages"

// projectLanguages returns the languages of the projects, cached. They are read
// from the primary, which sends the notifications: a replica behind it could
// hand back the list a notification has just retired.
func (s *Searcher) projectLanguages(ctx context.Context, projectIDs []int64) (projectLanguages, error) {
	key := fmt.Sprint(projectIDs)
	if langs, ok := s.languages.Get(key); ok {
		return langs, nil
	}
	generation := s.languagesGeneration.Load()
	rows, err := db.New(s.pool).ProjectLanguages(ctx,
		db.ProjectLanguagesParams{ProjectIds: projectIDs, DefaultLanguage: language.Default})
	if err != nil {
		return projectLanguages{}, fmt.Errorf("languages of the projects: %w", err)
	}
	var langs projectLanguages
	for _, r := range rows {
		langs.languages = append(langs.languages, r.Language)
		langs.configs = append(langs.configs, r.Config)
	}
	// A change announced while this read ran may not be in it: use it once, keep it not.
	if s.languagesGeneration.Load() == generation {
		s.languages.Add(key, langs)
	}
	return langs, nil
}

// questionLanguage returns the question's language when the projects hold
// several and the detector is sure of it: the statement analyses it first
// (query_languages). Projects in one language skip detection, 0.5 ms of trigram
// scoring that could not change the ranking. The detector weighs every
// language it knows: narrowed to the projects' few, it calls short English
// questions French with confidence.
func (l projectLanguages) questionLanguage(query string) string {
	if len(l.languages) < 2 {
		return ""
	}
	code, _ := language.Detector{}.Detect(query)
	return code
}

// ForgetLanguages empties the cache of the projects' languages: the next search
// reads them again.
func (s *Searcher) ForgetLanguages() {
	s.languagesGeneration.Add(1)
	s.languages.Purge()
}

// WatchLanguages keeps the cache of the projects' languages fresh while other
// processes ingest: it listens for migration 00070's notifications on a
// connection of its own and forgets the cache at each, and each time it starts
// listening (what changed before went unheard). It returns when ctx ends; a
// lost connection is retried with backoff, the cache's TTL covering the gap.
// listening, when not nil, is called each time LISTEN has taken effect.
func (s *Searcher) WatchLanguages(ctx context.Context, log *slog.Logger, listening func()) {
	const maxBackoff = languagesTTL
	backoff := time.Second
	for {
		heard, err := s.listenLanguages(ctx, listening)
		if ctx.Err() != nil {
			return
		}
		if heard {
			backoff = time.Second
		}
		log.Warn("listening for changes to the projects' languages failed; a new language may take "+
			"the cache's TTL to reach this process's searches", "err", err, "retry_in", backoff, "ttl", languagesTTL)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// listenLanguages listens until ctx ends or the connection fails; heard tells
// whether LISTEN took effect.
func (s *Searcher) listenLanguages(ctx context.Context, listening func()) (heard bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+languagesChannel); err != nil {
		return false, err
	}
	s.ForgetLanguages()
	if listening != nil {
		listening()
	}
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return true, err
		}
		s.ForgetLanguages()
	}
}
