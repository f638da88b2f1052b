package search

import (
	"context"
	"testing"

	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/internal/dbtest"
)

// The question's language is detected only when the searched projects hold
// more than one: with one, it could not change the ranking.
func TestQuestionLanguage(t *testing.T) {
	t.Parallel()
	pool := dbtest.FreshPool(t)
	ctx := context.Background()
	var en, mixed, declared int64
	if err := pool.QueryRow(ctx, `
		WITH p AS (
			INSERT INTO projects (project_key, language)
			VALUES ('en', NULL), ('mixed', NULL), ('declared', 'de')
			RETURNING id, project_key
		), l AS (
			INSERT INTO project_languages (project_id, language, chunk_count, total_length)
			SELECT p.id, l.language, 10, 100 FROM p
			JOIN (VALUES ('en', 'en'), ('mixed', 'en'), ('mixed', 'de')) AS l (project_key, language) USING (project_key)
		)
		SELECT (SELECT id FROM p WHERE project_key = 'en'), (SELECT id FROM p WHERE project_key = 'mixed'),
		       (SELECT id FROM p WHERE project_key = 'declared')`).Scan(&en, &mixed, &declared); err != nil {
		t.Fatal(err)
	}
	s := New(pool, embed.NewHash(8), Config{})
	const german = "Wie erneuere ich ein Zertifikat für den Server?"
	for _, c := range []struct {
		name     string
		projects []int64
		want     string
	}{
		{"one language", []int64{en}, ""},
		{"a declared language alone", []int64{declared}, ""},
		{"two languages", []int64{mixed}, "de"},
		{"two projects, two languages", []int64{en, declared}, "de"},
	} {
		got, err := s.questionLanguage(ctx, c.projects, german)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
