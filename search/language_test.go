package search_test

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/internal/testdocs"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/search"
)

// languageSearcher searches the handbooks of testdocs.Handbooks in a database of
// their own: projects de, fr and en hold one language each (pages without
// `lang:` are detected), and mixed holds all three.
func languageSearcher(t *testing.T) *search.Searcher {
	t.Helper()
	pool := dbtest.FreshPool(t)
	in := ingest.New(pool, embed.NewHash(dim), markdown.Options{ChunkTokens: 512, OverlapTokens: 64})
	pages := testdocs.Handbooks()
	byLanguage := map[string][]ingest.File{}
	for _, path := range slices.Sorted(maps.Keys(pages)) {
		f := ingest.File{Path: path, Content: []byte(pages[path])}
		lang, _, _ := strings.Cut(path, "/")
		byLanguage[lang] = append(byLanguage[lang], f)
		byLanguage["mixed"] = append(byLanguage["mixed"], f)
	}
	for _, project := range slices.Sorted(maps.Keys(byLanguage)) {
		res, err := in.Ingest(context.Background(), byLanguage[project], ingest.Options{Project: project})
		if err != nil || len(res.Errors) > 0 {
			t.Fatalf("ingest %s: %v %v", project, err, res.Errors)
		}
	}
	return search.New(pool, embed.NewHash(dim), search.Config{Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed),
		Profile: domain.ProfileHashKeywordLed})
}

// TestLanguageSearch: a question finds the page that answers it by stem in its
// own language, alone or in a mixed project, under the default fusion and by
// BM25 alone; the configurations that analysed it are reported, the question's
// language first; a page in its language covers every term of the question
// whatever the other languages add (the refusal gate's evidence).
func TestLanguageSearch(t *testing.T) {
	t.Parallel()
	s := languageSearcher(t)
	coverage := map[string]float64{} // a question's coverage of its answer in the answer's own project
	for _, tc := range []struct {
		name, project, query, want string
		configs                    []string // the first, in a mixed project; all of them otherwise
		terms                      []string // the question's lexemes, when the project has one language
	}{
		// erneuere/erneuern -> erneu and Zertifikat/Zertifikate -> zertifikat: the
		// english configuration gives erneuer and matches nothing.
		{"german stems", "de", "Wie erneuere ich ein Zertifikat?", "de/zertifikate", []string{"german"}, []string{"erneu", "zertifikat"}},
		{"german plural", "de", "Datenbank sichern", "de/datenbanken", []string{"german"}, []string{"datenbank", "sich"}},
		// A compound is one lexeme: named whole, it matches.
		{"german compound", "de", "Signaturschlüssel wechseln", "de/signatur", []string{"german"}, []string{"signaturschlussel", "wechseln"}},
		{"german identifier", "de", "Was bedeutet E5032?", "de/fehler", []string{"german"}, []string{"bedeutet", "e5032"}},
		{"german snake case", "de", "KB_RRF_K fehlt", "de/fehler", []string{"german"}, []string{"fehlt", "k", "kb", "kb_rrf_k", "rrf"}},
		{"french stems", "fr", "Comment renouveler un certificat ?", "fr/certificats", []string{"french"}, []string{"certificat", "comment", "renouvel"}},
		{"french plural", "fr", "sauvegarde des bases de données", "fr/sauvegardes", []string{"french"}, []string{"bas", "don", "sauvegard"}},
		{"french identifier", "fr", "Que signifie l'erreur E5032 ?", "fr/erreurs", []string{"french"}, nil},
		{"english", "en", "How do I renew a certificate?", "en/certificates", []string{"english"}, []string{"certif", "renew"}},
		{"mixed german", "mixed", "Wie erneuere ich ein Zertifikat?", "de/zertifikate", []string{"german"}, nil},
		{"mixed french", "mixed", "Comment renouveler un certificat ?", "fr/certificats", []string{"french"}, nil},
		{"mixed english", "mixed", "How do I renew a certificate?", "en/certificates", []string{"english"}, nil},
		{"mixed german backups", "mixed", "Wie oft werden die Datenbanken gesichert?", "de/datenbanken", []string{"german"}, nil},
		{"mixed french backups", "mixed", "Quand les bases de données sont-elles sauvegardées ?", "fr/sauvegardes", []string{"french"}, nil},
		{"mixed english identifier", "mixed", "What does error E5032 mean?", "en/errors", []string{"english"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, fusion := range []string{"", domain.FusionKeywordOnly} {
				res, err := s.Search(context.Background(), &domain.SearchRequest{Query: tc.query,
					Filters: domain.RawFilters{ProjectKeys: []string{tc.project}},
					Options: domain.SearchOptions{Limit: 3, Fusion: fusion, Explain: true}})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Primary) == 0 || res.Primary[0].DocID != tc.want {
					t.Fatalf("fusion %q: top %v, want %s first (configs %v, terms %v)", fusion, docIDs(res.Primary), tc.want,
						res.Meta.QueryConfigs, res.Meta.QueryTerms)
				}
				got := res.Meta.QueryConfigs
				if tc.project == "mixed" && len(got) > 0 {
					got = got[:1]
					if len(res.Meta.QueryConfigs) != 3 {
						t.Errorf("configs %v, want all three", res.Meta.QueryConfigs)
					}
				}
				if !slices.Equal(got, tc.configs) {
					t.Errorf("configs %v, want %v", res.Meta.QueryConfigs, tc.configs)
				}
				if tc.terms != nil && !slices.Equal(slices.Sorted(slices.Values(res.Meta.QueryTerms)), tc.terms) {
					t.Errorf("terms %v, want %v", res.Meta.QueryTerms, tc.terms)
				}
				// The answer's coverage is the same whether other languages analysed
				// the question too (the mixed project) or not.
				top := res.Primary[0]
				if tc.project != "mixed" {
					coverage[tc.query] = top.KeywordCoverage
				} else if want, ok := coverage[tc.query]; ok && top.KeywordCoverage != want {
					t.Errorf("%s covers %.2f of the question's terms in the mixed project, %.2f alone", top.DocID,
						top.KeywordCoverage, want)
				}
				if top.KeywordCoverage == 0 {
					t.Errorf("%s covers none of the question's terms", top.DocID)
				}
			}
		})
	}
}

// TestIdentifiersInEveryLanguage extends TestIdentifierSignal and
// TestLexicalRescueOfExactIdentifiers to German, French and a mixed project:
// every configuration keeps E5032 and KB_RRF_K whole, a heading that names the
// identifier carries the identifier signal, and in a mixed project the page in
// the question's language comes first among the pages that name it.
func TestIdentifiersInEveryLanguage(t *testing.T) {
	t.Parallel()
	s := languageSearcher(t)
	for _, tc := range []struct {
		project, query, first string
		named                 []string // pages whose heading names the identifier, among the hits
		identifiers           []string // the question's identifier lexemes
	}{
		{"de", "Was bedeutet der Fehler E5032?", "de/fehler", []string{"de/fehler"}, []string{"e5032"}},
		{"de", "Wo setze ich KB_RRF_K?", "de/fehler", nil, []string{"kb_rrf_k"}},
		{"fr", "Que signifie l'erreur E5032 ?", "fr/erreurs", []string{"fr/erreurs"}, []string{"e5032"}},
		{"fr", "Où définir KB_RRF_K ?", "fr/erreurs", nil, []string{"kb_rrf_k"}},
		{"en", "What does error E5032 mean?", "en/errors", []string{"en/errors"}, []string{"e5032"}},
		{"mixed", "Was bedeutet der Fehler E5032?", "de/fehler", []string{"de/fehler", "en/errors", "fr/erreurs"}, []string{"e5032"}},
		{"mixed", "Que signifie l'erreur E5032 ?", "fr/erreurs", []string{"de/fehler", "en/errors", "fr/erreurs"}, []string{"e5032"}},
		{"mixed", "What does error E5032 mean?", "en/errors", []string{"de/fehler", "en/errors", "fr/erreurs"}, []string{"e5032"}},
	} {
		for _, fusion := range []string{domain.FusionWeighted, domain.FusionRRF} {
			t.Run(tc.project+"/"+tc.query+"/"+fusion, func(t *testing.T) {
				res, err := s.Search(context.Background(), &domain.SearchRequest{Query: tc.query,
					Filters: domain.RawFilters{ProjectKeys: []string{tc.project}},
					Options: domain.SearchOptions{Limit: 5, Fusion: fusion, Explain: true}})
				if err != nil {
					t.Fatal(err)
				}
				hits := append(slices.Clone(res.Primary), res.RunnerUp...)
				if len(hits) == 0 || hits[0].DocID != tc.first {
					t.Fatalf("%s should rank first: %v", tc.first, distinct(hits))
				}
				for _, id := range tc.identifiers {
					if !slices.Contains(res.Meta.QueryTerms, id) {
						t.Errorf("identifier %s not kept whole: %v", id, res.Meta.QueryTerms)
					}
				}
				named := map[string]bool{}
				for _, h := range hits {
					if h.Explain.Identifier == 1 {
						named[h.DocID] = true
					}
				}
				if got := slices.Sorted(maps.Keys(named)); !slices.Equal(got, tc.named) && len(got)+len(tc.named) > 0 {
					t.Errorf("pages named by their headings: %v, want %v", got, tc.named)
				}
			})
		}
	}
}

// TestStatementNamesConfigurations: `canon search --sql` says which
// configurations analysed the question, the question's language first.
func TestStatementNamesConfigurations(t *testing.T) {
	t.Parallel()
	s := languageSearcher(t)
	stmt, err := s.Statement(context.Background(), &domain.SearchRequest{Query: "Wie erneuere ich ein Zertifikat?",
		Filters: domain.RawFilters{ProjectKeys: []string{"mixed"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "-- The question is analysed with the text-search configurations german, english, french (its language: de).\n"; !strings.Contains(stmt, want) {
		t.Errorf("statement lacks %q:\n%s", want, stmt[:min(len(stmt), 400)])
	}
}

// TestLanguagesFollowOtherProcesses: a search keeps its projects' languages in
// memory and passes their configurations to the statement. Listening on
// postgres.ChannelLanguages makes a language another process brings in (an ingest, a project's declared
// language) analyse the next questions at once, not after the cache's TTL, and
// survives losing its connection.
func TestLanguagesFollowOtherProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.FreshPool(t)
	pages := testdocs.Handbooks()
	ingestPages := func(prefix string) {
		t.Helper()
		// An ingester of its own, as another process's: nothing tells the searchers.
		in := ingest.New(pool, embed.NewHash(dim), markdown.Options{ChunkTokens: 512, OverlapTokens: 64})
		var files []ingest.File
		for _, path := range slices.Sorted(maps.Keys(pages)) {
			if strings.HasPrefix(path, prefix) {
				files = append(files, ingest.File{Path: path, Content: []byte(pages[path])})
			}
		}
		res, err := in.Ingest(ctx, files, ingest.Options{Project: "grows"})
		if err != nil || len(res.Errors) > 0 {
			t.Fatalf("ingest %s: %v %v", prefix, err, res.Errors)
		}
	}
	ingestPages("en/")
	newSearcher := func() *search.Searcher {
		return search.New(pool, embed.NewHash(dim), search.Config{Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed),
			Profile: domain.ProfileHashKeywordLed})
	}
	watched, unwatched := newSearcher(), newSearcher()
	watchCtx, stop := context.WithCancel(ctx)
	listening := make(chan struct{}, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// As canon serve wires it (cmd/canon/app.go).
		postgres.Listener{Channels: []string{postgres.ChannelLanguages},
			Notify: func(string, string) { watched.ForgetLanguages() },
			Listening: func() {
				watched.ForgetLanguages()
				listening <- struct{}{}
			},
			Log: slog.New(slog.DiscardHandler)}.Run(watchCtx, pool)
	}()
	t.Cleanup(func() {
		stop()
		<-done
	})
	<-listening

	const german = "Wie erneuere ich ein Zertifikat?"
	configs := func(s *search.Searcher) ([]string, string) {
		t.Helper()
		res, err := s.Search(ctx, &domain.SearchRequest{Query: german,
			Filters: domain.RawFilters{ProjectKeys: []string{"grows"}}, Options: domain.SearchOptions{Limit: 3}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Primary) == 0 {
			return res.Meta.QueryConfigs, ""
		}
		return res.Meta.QueryConfigs, res.Primary[0].DocID
	}
	// waitFor searches with the watched searcher until its configurations are
	// want, in any order (most chunks first is TestProjectLanguages's).
	waitFor := func(what string, want []string) string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second) // far below the cache's 30 s
		for {
			got, top := configs(watched)
			if slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
				return top
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: configurations still %v after 10 s, want %v", what, got, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, s := range []*search.Searcher{watched, unwatched} {
		if got, _ := configs(s); !slices.Equal(got, []string{"english"}) {
			t.Fatalf("English pages alone: configurations %v, want [english]", got)
		}
	}

	// Another process ingests German pages: the project's second language.
	ingestPages("de/")
	if top := waitFor("German pages ingested", []string{"english", "german"}); top != "de/zertifikate" {
		t.Errorf("German pages ingested: top %q, want de/zertifikate found by its stems", top)
	}
	// The searcher that does not watch still holds what it read (the cache's TTL).
	if got, _ := configs(unwatched); !slices.Equal(got, []string{"english"}) {
		t.Errorf("unwatched searcher: configurations %v, want its cached [english]", got)
	}

	// A lost connection: the watcher listens again and hears what follows.
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN %canon_languages%'`); err != nil {
		t.Fatal(err)
	}
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher did not listen again after its connection was terminated")
	}
	// The project declares French: a language of its own, no chunk in it yet.
	if _, err := pool.Exec(ctx, `UPDATE projects SET language = 'fr' WHERE project_key = 'grows'`); err != nil {
		t.Fatal(err)
	}
	waitFor("the project's language set to French", []string{"english", "german", "french"})
}
