package english_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/internal/english"
)

// The stop list must be the one PostgreSQL's english configuration applies,
// asked of the server itself: ts_lexize drops each of our words, keeps each
// filler (so fillers really are canon's own addition), and, where the role may
// read server files, the server's english.stop holds exactly our words.
func TestStopWordsArePostgresEnglish(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	ours := english.StopWords()
	if len(ours) != 127 {
		t.Errorf("%d stop words, want PostgreSQL's 127", len(ours))
	}

	var kept []string
	err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(w), '{}') FROM unnest($1::text[]) AS w
		WHERE ts_lexize('english_stem', w) <> '{}'`, ours).Scan(&kept)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) > 0 {
		t.Errorf("PostgreSQL's english_stem keeps %q, which canon treats as stop words", kept)
	}

	fillers := []string{"also", "could", "would", "explain", "tell", "using", "via", "without"}
	var dropped []string
	err = pool.QueryRow(ctx, `SELECT coalesce(array_agg(w), '{}') FROM unnest($1::text[]) AS w
		WHERE ts_lexize('english_stem', w) = '{}'`, fillers).Scan(&dropped)
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) > 0 {
		t.Errorf("PostgreSQL already drops %q: they belong to the stop list, not the fillers", dropped)
	}
	for _, w := range fillers {
		if english.IsStopWord(w) || !english.IsFiller(w) {
			t.Errorf("%q: IsStopWord %v, IsFiller %v; want a filler only", w, english.IsStopWord(w), english.IsFiller(w))
		}
	}

	var file string
	err = pool.QueryRow(ctx, `SELECT pg_read_file(setting || '/tsearch_data/english.stop')
		FROM pg_config WHERE name = 'SHAREDIR'`).Scan(&file)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" { // insufficient_privilege
		t.Logf("the role may not read the server's english.stop; checked word by word only")
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	theirs := strings.Fields(file)
	slices.Sort(theirs)
	sorted := slices.Sorted(slices.Values(ours))
	if !slices.Equal(sorted, theirs) {
		t.Errorf("the server's english.stop differs from canon's:\n server %q\n canon  %q", theirs, sorted)
	}
}

func TestIsStopWordAndFiller(t *testing.T) {
	tests := []struct {
		word           string
		stop, isFiller bool
	}{
		{"the", true, true},
		{"yourselves", true, true},
		{"don", true, true},
		{"s", true, true},
		{"would", false, true},
		{"tell", false, true},
		{"theme", false, false},
		{"rollback", false, false},
		{"The", false, false}, // callers lower-case first
		{"", false, false},
	}
	for _, tc := range tests {
		if got := english.IsStopWord(tc.word); got != tc.stop {
			t.Errorf("IsStopWord(%q) = %v, want %v", tc.word, got, tc.stop)
		}
		if got := english.IsFiller(tc.word); got != tc.isFiller {
			t.Errorf("IsFiller(%q) = %v, want %v", tc.word, got, tc.isFiller)
		}
	}
}

func TestStem(t *testing.T) {
	groups := [][]string{
		{"store", "stores", "stored", "storing"},
		{"embedding", "embeddings"},
		{"policy", "policies"},
		{"box", "boxes"},
		{"run", "running"},
		{"index", "indexes", "indexed", "indexing"},
		{"backup", "backups"},
		{"cache", "caches", "cached", "caching"},
		{"use", "uses"},
		{"rate", "rates"},
		{"migrate", "migrates", "migrated", "migrating"},
		{"apply", "applies", "applied", "applying"},
		{"retry", "retries", "retried"},
	}
	for _, g := range groups {
		want := english.Stem(g[0])
		for _, w := range g[1:] {
			if got := english.Stem(w); got != want {
				t.Errorf("Stem(%q) = %q, Stem(%q) = %q: want equal", w, got, g[0], want)
			}
		}
	}
	apart := [][2]string{{"configuration", "configure"}, {"status", "stat"}, {"string", "str"}}
	for _, p := range apart {
		if english.Stem(p[0]) == english.Stem(p[1]) {
			t.Errorf("Stem(%q) = Stem(%q) = %q: want them apart", p[0], p[1], english.Stem(p[0]))
		}
	}
	for _, w := range []string{"string", "status", "analysis", "class", "bus", "is"} {
		if got := english.Stem(w); len(got) < len(w)-1 {
			t.Errorf("Stem(%q) = %q: over-stemmed", w, got)
		}
	}
}
