package search

import (
	"context"
	"slices"
	"testing"

	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/internal/dbtest"
)

// The searched projects' languages come with their configurations, most chunks
// first (a declared language counts none; no language at all is the default's),
// and the question's language is detected only when there are several: with
// one, it could not change the ranking.
func TestProjectLanguages(t *testing.T) {
	t.Parallel()
	pool := dbtest.FreshPool(t)
	ctx := context.Background()
	var en, mixed, declared, empty int64
	if err := pool.QueryRow(ctx, `
		WITH p AS (
			INSERT INTO projects (project_key, language)
			VALUES ('en', NULL), ('mixed', NULL), ('declared', 'de'), ('empty', NULL)
			RETURNING id, project_key
		), l AS (
			INSERT INTO project_languages (project_id, language, chunk_count, total_length)
			SELECT p.id, l.language, l.chunks, 100 FROM p
			JOIN (VALUES ('en', 'en', 10), ('mixed', 'en', 5), ('mixed', 'de', 10), ('mixed', 'xx', 1))
				AS l (project_key, language, chunks) USING (project_key)
		)
		SELECT (SELECT id FROM p WHERE project_key = 'en'), (SELECT id FROM p WHERE project_key = 'mixed'),
		       (SELECT id FROM p WHERE project_key = 'declared'), (SELECT id FROM p WHERE project_key = 'empty')`,
	).Scan(&en, &mixed, &declared, &empty); err != nil {
		t.Fatal(err)
	}
	s := New(pool, embed.NewHash(8), Config{})
	const german = "Wie erneuere ich ein Zertifikat für den Server?"
	for _, c := range []struct {
		name      string
		projects  []int64
		languages []string
		configs   []string
		question  string // the detected language
	}{
		{"one language", []int64{en}, []string{"en"}, []string{"english"}, ""},
		{"a declared language alone", []int64{declared}, []string{"de"}, []string{"german"}, ""},
		{"no language yet: the default", []int64{empty}, []string{"en"}, []string{"english"}, ""},
		// xx has no snowball configuration: simple.
		{"several, most chunks first", []int64{mixed}, []string{"de", "en", "xx"}, []string{"german", "english", "simple"}, "de"},
		{"two projects, two languages", []int64{en, declared}, []string{"en", "de"}, []string{"english", "german"}, "de"},
	} {
		got, err := s.projectLanguages(ctx, c.projects)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.languages, c.languages) || !slices.Equal(got.configs, c.configs) {
			t.Errorf("%s: %v %v, want %v %v", c.name, got.languages, got.configs, c.languages, c.configs)
		}
		if q := got.questionLanguage(german); q != c.question {
			t.Errorf("%s: question language %q, want %q", c.name, q, c.question)
		}
	}
}

// The configurations are reported as the question's: the detected language
// first, then the one that kept the fewest of its terms (its stop words took
// the rest), then the bound order (most chunks); one language is its own.
func TestQuestionConfigs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		languages []string
		detected  string
		positions []int32 // query_config_positions
		want      []string
		language  string
	}{
		{"one language", []string{"en"}, "", []int32{1, 1, 1}, []string{"english"}, "en"},
		{"one language, no terms", []string{"en"}, "", nil, []string{"english"}, "en"},
		{"detected first", []string{"en", "de", "fr"}, "fr", []int32{1, 2, 2, 3, 3, 3}, []string{"french", "english", "german"}, "fr"},
		{"fewest terms first", []string{"en", "de", "fr"}, "", []int32{1, 1, 2, 3, 3}, []string{"german", "english", "french"}, "de"},
		{"ties keep the bound order", []string{"en", "de", "fr"}, "", []int32{1, 2, 3}, []string{"english", "german", "french"}, "en"},
		{"no terms at all", []string{"de", "en"}, "", nil, []string{"german", "english"}, "de"},
		{"a language that produced none leads", []string{"en", "de"}, "", []int32{1, 1}, []string{"german", "english"}, "de"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			configs := map[string]string{"en": "english", "de": "german", "fr": "french"}
			p := &plan{detected: tc.detected}
			for _, l := range tc.languages {
				p.params.Languages = append(p.params.Languages, l)
				p.params.Configs = append(p.params.Configs, configs[l])
			}
			got, language := questionConfigs(p, tc.positions)
			if !slices.Equal(got, tc.want) || language != tc.language {
				t.Errorf("got %v (%s), want %v (%s)", got, language, tc.want, tc.language)
			}
		})
	}
}
