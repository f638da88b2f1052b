package search_test

import (
	"context"
	"testing"
)

// chunks.lexeme_bloom lets the ranking statement skip a postings probe when a
// chunk cannot contain the term. It must never rule out a lexeme the chunk has
// (that would drop the term from the chunk's BM25), and it must rule out most of
// the lexemes it lacks, or it saves nothing. The exact-score tests
// (TestApproximateKeywordLegScoresExactly, the golden rankings) cover the
// statement that reads it.
func TestLexemeBloom(t *testing.T) {
	t.Parallel()
	handbook(t)
	ctx := context.Background()

	var pairs, missed int
	if err := pool.QueryRow(ctx, `
		SELECT count(*), count(*) FILTER (WHERE (c.lexeme_bloom & canon_lexeme_bits(l)) <> canon_lexeme_bits(l))
		FROM chunks c CROSS JOIN LATERAL unnest(tsvector_to_array(c.tsv)) AS l`).Scan(&pairs, &missed); err != nil {
		t.Fatal(err)
	}
	if pairs < 1000 || missed != 0 {
		t.Fatalf("%d of %d (chunk, own lexeme) pairs are missing from the chunk's filter", missed, pairs)
	}

	// Every lexeme of the handbook against every chunk that lacks it.
	var absent, passed int
	if err := pool.QueryRow(ctx, `
		WITH lexemes AS (SELECT DISTINCT l FROM chunks, unnest(tsvector_to_array(tsv)) AS l)
		SELECT count(*), count(*) FILTER (WHERE (c.lexeme_bloom & canon_lexeme_bits(x.l)) = canon_lexeme_bits(x.l))
		FROM chunks c CROSS JOIN lexemes x
		WHERE NOT x.l = ANY (tsvector_to_array(c.tsv))`).Scan(&absent, &passed); err != nil {
		t.Fatal(err)
	}
	// The handbook's chunks hold 34 lexemes on average, 108 at most: three bits
	// each in 1,024 let about 0.1% of absent lexemes through.
	if share := float64(passed) / float64(absent); absent < 10000 || share > 0.01 {
		t.Fatalf("the filter let %d of %d absent (chunk, lexeme) pairs through (%.2f%%)", passed, absent, 100*share)
	}
	t.Logf("the filter let %d of %d absent (chunk, lexeme) pairs through", passed, absent)

	// The column follows the text: an edited chunk's filter has its new words.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		// The rollback undoes the edit for the tests that share this database.
		if err := tx.Rollback(ctx); err != nil {
			t.Errorf("rollback: %v", err)
		}
	}()
	var has bool
	if err := tx.QueryRow(ctx, `
		WITH edited AS (
			UPDATE chunks SET text = text || ' zyxquatl' WHERE id = (SELECT min(id) FROM chunks) RETURNING lexeme_bloom
		)
		SELECT (lexeme_bloom & canon_lexeme_bits('zyxquatl')) = canon_lexeme_bits('zyxquatl') FROM edited`).Scan(&has); err != nil {
		t.Fatal(err)
	}
	if !has {
		t.Fatal("after an edit the chunk's filter lacks the word it gained")
	}
}
