package hierarchy

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/internal/expiring"
	"github.com/canonkb/canon/postgres"
)

// WordSeparators split a question into the words EntityRank compares with names
// fuzzily, and the name gate too (a regular expression of PostgreSQL's).
const WordSeparators = `[[:space:][:punct:]]+`

// printableASCII is what NameGateSettings lowercases to see whether the database
// lowercases ASCII as Go does.
const printableASCII = " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"

// typographic is punctuation phones and word processors type for ASCII's (quotes,
// dashes, an ellipsis): a question holding it is decided too when the database
// splits words at it and has no case for it (NameGateSettings).
const typographic = "\u2018\u2019\u201c\u201d\u2013\u2014\u2026"

// similaritySlack absorbs pg_trgm's float4 rounding of a word similarity, so a
// bound equal to the threshold in float64 still counts as reaching it.
const similaritySlack = 1e-6

// nameGate decides, without a statement, that a question names no entity of its
// projects, so pass 1 cannot choose two passes and need not run. Pass 1's score
// is a weighted mean; when the weights of role, facts and vector together stay
// under the threshold, only an entity with a name signal can reach it, and a name
// signal needs one of two things EntityRank tests:
//   - a form of a name (name, alias, a person's first or last name) inside the
//     lowercased question (strpos), for name_exact;
//   - a word of the question (3 characters or more) whose pg_trgm word similarity
//     to a name reaches word_similarity_threshold (the <% operator), for name_fuzzy.
//
// The gate tests every form of every entity, whatever the caller may see, and
// bounds the similarity from above (the shared trigrams over the word's: pg_trgm's
// similarity of any extent of the name is at most that), so it can only err
// towards running pass 1. It decides for questions in ASCII (typographic quotes
// and dashes allowed), with the database's own lowercasing and word separators
// checked, and leaves the rest to pass 1.
type nameGate struct {
	pool     *pgxpool.Pool
	names    *expiring.Cache[int64, *projectNames]
	settings *expiring.Cache[struct{}, *gateSettings]
}

// projectNames are a project's entities as the gate tests them.
type projectNames struct {
	key string
	// forms are found in the lowercased question as written.
	forms []string
	// trigrams maps each trigram of a name (show_trgm's spelling) to the names
	// that have it, by index; a name's trigrams are distinct.
	trigrams map[string][]int32
	count    int
}

// gateSettings are how the database reads a question for EntityRank. usable is
// false when it lowercases ASCII differently or pg_trgm's threshold is unknown:
// the gate then always runs pass 1.
type gateSettings struct {
	usable     bool
	separators [128]bool
	// typographic are the characters of typographic the database treats as
	// separators without case.
	typographic map[rune]bool
	threshold   float64
}

func newNameGate(pool *pgxpool.Pool, cfg Config) *nameGate {
	return &nameGate{
		pool:     pool,
		names:    expiring.New[int64, *projectNames](cfg.CacheSize, cfg.CacheTTL),
		settings: expiring.New[struct{}, *gateSettings](1, cfg.CacheTTL),
	}
}

// canSkip reports whether the weights let a pass-1 score reach threshold only
// with a name signal. The weights are non-negative (Config.Validate) and each
// signal is at most 1.
func canSkip(p Pass1Params) bool {
	w := p.Weights
	sum := w.NameExact + w.NameFuzzy + w.Role + w.Facts + w.Vector
	return sum > 0 && (w.Role+w.Facts+w.Vector)/sum < p.Threshold-similaritySlack
}

// namesNone reports whether query certainly names no entity of the projects.
func (g *nameGate) namesNone(ctx context.Context, query string, projectIDs []int64) (bool, error) {
	set, err := g.readSettings(ctx)
	if err != nil || !set.usable {
		return false, err
	}
	lowered, ok := set.lower(query)
	if !ok {
		return false, nil
	}
	projects, err := g.readNames(ctx, projectIDs)
	if err != nil {
		return false, err
	}
	for _, p := range projects {
		for _, f := range p.forms {
			if strings.Contains(lowered, f) {
				return false, nil
			}
		}
	}
	// Each word of three characters or more as its trigrams, once for every project.
	var words [][]string
	for _, w := range set.splitWords(lowered) {
		if tri := trigrams(w); len(w) >= 3 && len(tri) > 0 {
			words = append(words, tri)
		}
	}
	for _, p := range projects {
		shared := make([]int32, p.count)
		for _, tri := range words {
			clear(shared)
			most := int32(0)
			for _, t := range tri {
				for _, n := range p.trigrams[t] {
					shared[n]++
					most = max(most, shared[n])
				}
			}
			if float64(most)/float64(len(tri)) >= set.threshold-similaritySlack {
				return false, nil
			}
		}
	}
	return true, nil
}

// forget drops the names of the projects with these keys (Searcher.Invalidate).
func (g *nameGate) forget(projectKeys map[string]bool) {
	for _, id := range g.names.Keys() {
		if p, ok := g.names.Get(id); ok && projectKeys[p.key] {
			g.names.Remove(id)
		}
	}
}

func (g *nameGate) purge() {
	g.names.Purge()
	g.settings.Purge()
}

func (g *nameGate) readSettings(ctx context.Context) (*gateSettings, error) {
	if s, ok := g.settings.Get(struct{}{}); ok {
		return s, nil
	}
	row, err := db.New(postgres.ReadPool(ctx, g.pool)).NameGateSettings(ctx, db.NameGateSettingsParams{
		Ascii: printableASCII, WordSeparators: WordSeparators, Typographic: typographic,
	})
	if err != nil {
		return nil, fmt.Errorf("name gate settings: %w", err)
	}
	s := &gateSettings{typographic: map[rune]bool{}}
	for _, r := range row.TypographicSeparators {
		s.typographic[r] = true
	}
	threshold, err := strconv.ParseFloat(row.WordSimilarityThreshold, 64)
	s.threshold = threshold
	s.usable = err == nil && row.TrgmLoaded &&
		row.Lowered == strings.ToLower(printableASCII)
	for _, c := range []byte(row.Separators) {
		if c < 128 {
			s.separators[c] = true
		}
	}
	g.settings.Add(struct{}{}, s)
	return s, nil
}

// readNames returns the projects' names, reading those not cached in one statement.
func (g *nameGate) readNames(ctx context.Context, projectIDs []int64) ([]*projectNames, error) {
	out := make([]*projectNames, 0, len(projectIDs))
	var missing []int64
	for _, id := range projectIDs {
		if p, ok := g.names.Get(id); ok {
			out = append(out, p)
		} else {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	rows, err := db.New(postgres.ReadPool(ctx, g.pool)).EntityNames(ctx, missing)
	if err != nil {
		return nil, fmt.Errorf("entity names: %w", err)
	}
	read := map[int64]*projectNames{}
	for _, r := range rows {
		p := read[r.ProjectID]
		if p == nil {
			p = &projectNames{key: r.ProjectKey, trigrams: map[string][]int32{}}
			read[r.ProjectID] = p
		}
		if !r.IsEntity {
			continue
		}
		if r.Name != "" {
			p.forms = append(p.forms, r.Name)
		}
		p.forms = append(p.forms, r.Aliases...)
		// An empty name part is found in every question, as strpos finds it.
		p.forms = append(p.forms, r.NameParts...)
		for _, t := range r.NameTrigrams {
			p.trigrams[t] = append(p.trigrams[t], int32(p.count))
		}
		p.count++
	}
	for _, id := range missing {
		// A project that vanished has no names; it is not cached.
		if p := read[id]; p != nil {
			g.names.Add(id, p)
			out = append(out, p)
		}
	}
	return out, nil
}

// lower lowercases a question of ASCII and typographic separators, which have no
// case; ok is false for any other.
func (s *gateSettings) lower(q string) (string, bool) {
	for _, r := range q {
		if r >= 0x80 && !s.typographic[r] {
			return "", false
		}
	}
	return strings.ToLower(q), true
}

// splitWords splits a lowered question at runs of separators, as
// regexp_split_to_table(text, WordSeparators) does (empty pieces dropped: they
// are shorter than any word the fuzzy test reads).
func (s *gateSettings) splitWords(q string) []string {
	return strings.FieldsFunc(q, func(r rune) bool { return r < 128 && s.separators[r] || s.typographic[r] })
}

// trigrams are pg_trgm's trigrams of an ASCII word: each run of letters and
// digits padded with two spaces before and one after, every three characters,
// each once.
func trigrams(w string) []string {
	var out []string
	seen := map[string]bool{}
	for _, run := range strings.FieldsFunc(w, func(r rune) bool { return !isAlnumASCII(r) }) {
		padded := "  " + run + " "
		for i := 0; i+3 <= len(padded); i++ {
			if t := padded[i : i+3]; !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

func isAlnumASCII(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}
