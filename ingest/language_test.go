package ingest_test

import (
	"context"
	"slices"
	"testing"

	"github.com/canonkb/canon/ingest"
)

// germanRunbook and frenchRunbook are small handbook pages: the German one
// declares its language, the French one leaves it to detection.
const germanRunbook = `---
title: Schlüsselrotation
lang: de
---
# Schlüsselrotation

Die Signaturschlüssel werden alle neunzig Tage erneuert. Der Fehler E5032 bedeutet,
dass der Schlüssel abgelaufen ist; KB_RRF_K bleibt unverändert.
`

const frenchRunbook = `---
title: Rotation des clés
---
# Rotation des clés

Les clés de signature sont renouvelées tous les quatre-vingt-dix jours. L'erreur E5032
signifie que la clé a expiré ; KB_RRF_K ne change pas.
`

const englishRunbook = `---
title: Key rotation
---
# Key rotation

The signing keys are renewed every ninety days. Error E5032 means the key expired;
KB_RRF_K stays as it is.
`

// TestDocumentLanguages: each document and chunk records its language (declared,
// detected, or the project's), its lexemes come from that language's
// configuration with identifiers kept whole, and project_languages counts them.
func TestDocumentLanguages(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	run(t, in, "mixed", false, file("de.md", germanRunbook), file("fr.md", frenchRunbook), file("en.md", englishRunbook))

	for _, tc := range []struct {
		slug, language string
		lexemes        []string // in the document's chunks
		absent         []string // words another configuration would have kept
	}{
		{"de", "de", []string{"abgelauf", "schlussel", "e5032", "kb_rrf_k", "signaturschlussel"}, []string{"die", "der", "ist"}},
		{"fr", "fr", []string{"renouvel", "clé", "expir", "e5032", "kb_rrf_k"}, []string{"les", "de", "que"}},
		{"en", "en", []string{"renew", "key", "e5032", "kb_rrf_k"}, []string{"the"}},
	} {
		t.Run(tc.slug, func(t *testing.T) {
			if got := scalar[string](t, pool, `SELECT language FROM documents WHERE slug = $1`, tc.slug); got != tc.language {
				t.Errorf("document language %s, want %s", got, tc.language)
			}
			langs := queryStrings(t, pool, `SELECT DISTINCT c.language FROM chunks c JOIN documents d ON d.id = c.document_id
				WHERE d.slug = $1`, tc.slug)
			if !slices.Equal(langs, []string{tc.language}) {
				t.Errorf("chunk languages %v, want [%s]", langs, tc.language)
			}
			lexemes := queryStrings(t, pool, `SELECT DISTINCT p.lexeme FROM postings p JOIN chunks c ON c.id = p.chunk_id
				JOIN documents d ON d.id = c.document_id WHERE d.slug = $1 ORDER BY 1`, tc.slug)
			for _, l := range tc.lexemes {
				if !slices.Contains(lexemes, l) {
					t.Errorf("lexeme %q missing from %v", l, lexemes)
				}
			}
			for _, l := range tc.absent {
				if slices.Contains(lexemes, l) {
					t.Errorf("stop word %q kept: %v", l, lexemes)
				}
			}
		})
	}
	counts := queryStrings(t, pool, `SELECT l.language || ' ' || l.chunk_count FROM project_languages l
		JOIN projects p ON p.id = l.project_id WHERE p.project_key = 'mixed' ORDER BY 1`)
	if want := []string{"de 1", "en 1", "fr 1"}; !slices.Equal(counts, want) {
		t.Errorf("project_languages %v, want %v", counts, want)
	}
	// The languages' statistics add up to the project's.
	if bad := scalar[int64](t, pool, `SELECT count(*) FROM project_stats s
		LEFT JOIN (SELECT project_id, sum(chunk_count) AS n, sum(total_length) AS len FROM project_languages GROUP BY project_id) l
		ON l.project_id = s.project_id
		WHERE s.chunk_count <> coalesce(l.n, 0) OR s.total_length <> coalesce(l.len, 0)`); bad != 0 {
		t.Errorf("%d projects whose languages' statistics do not add up", bad)
	}

	// Pruning the German document drops its language from the project.
	run(t, in, "mixed", true, file("fr.md", frenchRunbook), file("en.md", englishRunbook))
	counts = queryStrings(t, pool, `SELECT l.language FROM project_languages l JOIN projects p ON p.id = l.project_id
		WHERE p.project_key = 'mixed' ORDER BY 1`)
	if want := []string{"en", "fr"}; !slices.Equal(counts, want) {
		t.Errorf("after pruning de: project_languages %v, want %v", counts, want)
	}
}

// TestProjectLanguage: `--language` is stored on the project and applies to its
// documents that declare none, now and in later runs; changing it re-ingests
// them; a declared lang: still wins.
func TestProjectLanguage(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	ctx := context.Background()
	files := []ingest.File{file("en.md", englishRunbook), file("de.md", germanRunbook)}
	if _, err := in.Ingest(ctx, files, ingest.Options{Project: "p", Language: "FR"}); err != nil {
		t.Fatal(err)
	}
	languages := func() []string {
		return queryStrings(t, pool, `SELECT slug || ' ' || language FROM documents ORDER BY slug`)
	}
	if got, want := languages(), []string{"de de", "en fr"}; !slices.Equal(got, want) {
		t.Errorf("documents %v, want %v", got, want)
	}
	if got := scalar[string](t, pool, `SELECT language FROM projects WHERE project_key = 'p'`); got != "fr" {
		t.Errorf("project language %q, want fr", got)
	}
	// A later run without --language keeps the project's: nothing changes.
	res, err := in.Ingest(ctx, files, ingest.Options{Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Unchanged != 2 {
		t.Errorf("a run without --language re-ingested: %+v", res)
	}
	// Another language re-ingests the documents that declare none.
	res, err = in.Ingest(ctx, files, ingest.Options{Project: "p", Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Updated != 2 {
		t.Errorf("changing the project's language: %+v", res)
	}
	if got, want := languages(), []string{"de de", "en en"}; !slices.Equal(got, want) {
		t.Errorf("documents %v, want %v", got, want)
	}
	if _, err := in.Ingest(ctx, files, ingest.Options{Project: "p", Language: "german"}); err == nil ||
		err.Error() != `invalid language "german": want a two-letter ISO 639-1 code such as en, de or fr` {
		t.Errorf("--language german: %v", err)
	}
}
