package bench

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The reference points and peers the latency bench measures beside canon, in
// the same database and over canon's own tables (chunks.tsv is canon's stored
// full-text vector, chunks.embedding its HNSW-indexed vector column).

// refHNSW is the bare vector query: the HNSW index's top k, nothing else.
const refHNSW = `SELECT c.id FROM chunks c
WHERE c.project_id = ANY ($2::bigint[])
ORDER BY c.embedding <=> $1::vector
LIMIT $3::integer`

// refBM25 is canon's keyword leg alone: exact BM25 over the postings (the
// keyword_scored step of db/queries/search.sql, heading boost 1), top k.
const refBM25 = `WITH query_terms AS (
    SELECT t.lexeme, t.qtf
    FROM canon_query_terms(ARRAY(SELECT l.config FROM canon_project_languages($2::bigint[], 'en') AS l),
                           $1::text) AS t (lexeme, qtf, config_positions)
),
corpus AS (
    SELECT greatest(sum(chunk_count), 1)::float8 AS n,
           greatest(sum(total_length)::float8 / greatest(sum(chunk_count), 1), 1) AS avgdl
    FROM project_stats WHERE project_id = ANY ($2::bigint[])
),
term_stats AS (
    SELECT t.lexeme, t.qtf,
           ln(1 + (c.n - coalesce(sum(s.df), 0) + 0.5) / (coalesce(sum(s.df), 0) + 0.5)) AS idf
    FROM query_terms t
    CROSS JOIN corpus c
    LEFT JOIN lexeme_stats s ON s.project_id = ANY ($2::bigint[]) AND s.lexeme = t.lexeme
    GROUP BY t.lexeme, t.qtf, c.n
)
SELECT p.chunk_id,
       sum(t.idf * t.qtf * ((p.tf + p.tf_heading) * ($4::float8 + 1))
           / ((p.tf + p.tf_heading) + $4::float8 * (1 - $5::float8 + $5::float8 * p.length / c.avgdl))) AS bm25
FROM term_stats t
CROSS JOIN corpus c
JOIN postings p ON p.project_id = ANY ($2::bigint[]) AND p.lexeme = t.lexeme
GROUP BY p.chunk_id
ORDER BY bm25 DESC, p.chunk_id
LIMIT $3::integer`

// supabaseFunction is the hybrid_search function of Supabase's hybrid search
// guide (https://supabase.com/docs/guides/ai/hybrid-search, "Hybrid search"),
// as published, adapted only to canon's names: table documents -> chunks, column
// fts -> tsv, vector(512) -> vector(<schema dimension>). Its semantic CTE ranks
// the whole table with row_number() over (order by embedding <#> query_embedding)
// before the LIMIT, so it never uses an HNSW index (and <#>, inner product, has
// no index here anyway: canon's is vector_cosine_ops); the full-text CTE uses
// websearch_to_tsquery with the session's default configuration and AND
// semantics. Measured as is.
const supabaseFunction = `create or replace function hybrid_search(
  query_text text,
  query_embedding vector(%d),
  match_count int,
  full_text_weight float = 1,
  semantic_weight float = 1,
  rrf_k int = 50
)
returns setof chunks
language sql
as $$
` + supabaseBodyNamed + `
$$;`

const supabaseBodyNamed = `with full_text as (
  select
    id,
    -- Note: ts_rank_cd is not indexable but will only rank matches of the where clause
    -- which shouldn't be too big
    row_number() over(order by ts_rank_cd(tsv, websearch_to_tsquery(query_text)) desc) as rank_ix
  from
    chunks
  where
    tsv @@ websearch_to_tsquery(query_text)
  order by rank_ix
  limit least(match_count, 30) * 2
),
semantic as (
  select
    id,
    row_number() over (order by embedding <#> query_embedding) as rank_ix
  from
    chunks
  order by rank_ix
  limit least(match_count, 30) * 2
)
select
  chunks.*
from
  full_text
  full outer join semantic
    on full_text.id = semantic.id
  join chunks
    on coalesce(full_text.id, semantic.id) = chunks.id
order by
  coalesce(1.0 / (rrf_k + full_text.rank_ix), 0.0) * full_text_weight +
  coalesce(1.0 / (rrf_k + semantic.rank_ix), 0.0) * semantic_weight
  desc
limit
  least(match_count, 30)`

// supabaseCall is how a client calls it (PostgREST rpc does the same).
const supabaseCall = `SELECT id FROM hybrid_search($1::text, $2::vector, $3::int)`

// supabaseBody is the function's body with its parameters as placeholders, for
// EXPLAIN (a call of a volatile SQL function shows only a Function Scan).
var supabaseBody = strings.NewReplacer(
	"query_text", "$1::text", "query_embedding", "$2::vector", "match_count", "$3::int",
	"full_text_weight", "$4::float8", "semantic_weight", "$5::float8", "rrf_k", "$6::int",
).Replace(supabaseBodyNamed)

// pgvectorRRF is the hybrid search of the pgvector examples
// (github.com/pgvector/pgvector-python examples/hybrid_search/rrf.py and
// github.com/pgvector/pgvector-go examples/hybrid/main.go): each leg
// ORDER BY ... LIMIT 20, so the vector leg uses the HNSW index, fused by RRF in
// one statement. Adapted to canon's names (documents -> chunks,
// to_tsvector('english', content) -> the stored tsv); the final LIMIT is the
// page size instead of the example's 5.
const pgvectorRRF = `WITH semantic_search AS (
    SELECT id, RANK () OVER (ORDER BY embedding <=> $2::vector) AS rank
    FROM chunks
    ORDER BY embedding <=> $2::vector
    LIMIT 20
),
keyword_search AS (
    SELECT id, RANK () OVER (ORDER BY ts_rank_cd(tsv, query) DESC)
    FROM chunks, plainto_tsquery('english', $1::text) query
    WHERE tsv @@ query
    ORDER BY ts_rank_cd(tsv, query) DESC
    LIMIT 20
)
SELECT
    COALESCE(semantic_search.id, keyword_search.id) AS id,
    COALESCE(1.0 / ($3::int + semantic_search.rank), 0.0) +
    COALESCE(1.0 / ($3::int + keyword_search.rank), 0.0) AS score
FROM semantic_search
FULL OUTER JOIN keyword_search ON semantic_search.id = keyword_search.id
ORDER BY score DESC
LIMIT $4::int`

// createPeers installs the Supabase function in the bench's database.
func createPeers(ctx context.Context, pool *pgxpool.Pool, dim int) error {
	if _, err := pool.Exec(ctx, fmt.Sprintf(supabaseFunction, dim)); err != nil {
		return fmt.Errorf("create the Supabase hybrid_search peer: %w", err)
	}
	return nil
}
