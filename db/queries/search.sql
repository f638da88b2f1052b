-- The ranking pipeline, one statement, top to bottom:
--   query_configs -> query_terms (-> query_lexemes, query_identifiers, query_words)
--   -> corpus / term_stats -> listed_chunks
--   -> vector_leg -> keyword_scored -> keyword_top -> mention_leg -> candidate_ids -> candidate_chunks
--   -> candidates -> signals
--   -> normalized -> fused -> capped -> page
-- Every weight, penalty and threshold is a named parameter; nothing numeric that
-- changes a ranking is written into the SQL. Run it in a transaction that first sets
-- hnsw.ef_search and hnsw.iterative_scan (`canon search --sql` prints the whole
-- thing with every parameter bound, ready for psql and EXPLAIN ANALYZE). The
-- measurements behind the comments below are in bench/results/ranking_statement.md.
-- Each scan of chunks, postings and lexeme_stats also names
-- `project_id = ANY (canon_project_slots(project_ids))`, the form whose generic
-- plan prunes the partitions of projects not searched (KB_TABLE_LAYOUT=partitioned,
-- migration 00063).

-- name: SearchRank :many
WITH
-- The text-search configurations that analyse the question, bound by the caller:
-- those of the languages of the searched projects (their chunks' and their own),
-- most chunks first, the default language's for projects that have none yet
-- (ProjectLanguages, which the search caches until a project's languages change:
-- migration 00070). A project in one language gets that language's alone.
query_configs AS MATERIALIZED (
    SELECT sqlc.arg(languages)::text[] AS languages, sqlc.arg(configs)::text[]::regconfig[] AS configs
),
-- The question's lexemes under each configuration (stemming, stop words removed,
-- identifiers kept whole), merged, with their count: OR semantics, a repeated
-- term weighs more. config_positions: the configurations that produced each.
query_terms AS (
    SELECT t.lexeme, t.qtf, t.config_positions
    FROM query_configs qc
    CROSS JOIN LATERAL canon_query_terms(qc.configs, sqlc.arg(query)::text) AS t (lexeme, qtf, config_positions)
),
-- The same terms as one array and their number, for the share signals, and the
-- positions of the configurations that produced them, flattened: a language's
-- position appears once per term its configuration produced. A chunk's keyword
-- coverage counts against its own language's terms (canon_language_terms), and
-- the caller orders the languages by them (search/languages.go).
query_lexemes AS (
    SELECT coalesce(array_agg(lexeme), '{}')::text[] AS lexemes, count(*)::float8 AS n,
           canon_array_cat(config_positions)::integer[] AS config_positions
    FROM query_terms
),
-- The question's identifiers: lexemes that mix letters and digits or hold an
-- underscore (E5032, v2.3.1, pgx/v5, KB_RRF_K; not 16, 2024, blue/green or
-- logging). The parser keeps them whole, so they match exactly or not at all.
query_identifiers AS (
    SELECT coalesce(array_agg(lexeme), '{}')::text[] AS lexemes, count(*)::float8 AS n
    FROM query_terms
    WHERE lexeme ~ '([[:alpha:]].*[[:digit:]]|[[:digit:]].*[[:alpha:]]|_)'
),
-- The words the overlap signals look for: the question's lexemes (in_query; the
-- identifiers among them flagged) and the lexemes of the filter tags, which count
-- for tag_overlap only. Each once.
query_words AS MATERIALIZED (
    SELECT w.lexeme, w.lexeme = ANY (q.lexemes) AS in_query, w.lexeme = ANY (qi.lexemes) AS is_identifier
    FROM query_lexemes q
    CROSS JOIN query_identifiers qi
    CROSS JOIN LATERAL (
        SELECT unnest(q.lexemes) AS lexeme
        UNION
        SELECT unnest(tsvector_to_array(to_tsvector(c.config, array_to_string(sqlc.arg(tags)::text[], ' '))))
        FROM query_configs qc
        CROSS JOIN LATERAL unnest(qc.configs) AS c (config)
    ) AS w
),
-- BM25 corpus statistics over the projects searched: N, average length, df.
corpus AS (
    SELECT greatest(sum(chunk_count), 1)::float8 AS n,
           greatest(sum(total_length)::float8 / greatest(sum(chunk_count), 1), 1) AS avgdl
    FROM project_stats WHERE project_id = ANY (sqlc.arg(project_ids)::bigint[])
),
-- Per query term: its idf and what the keyword leg and candidates need to know of it.
term_stats AS (
    -- Lucene's idf: ln(1 + (N - df + 0.5) / (df + 0.5)), never negative.
    -- bit: the term's flag in keyword_scored's per-chunk mask (the first 63 terms).
    -- bloom_bits: the term's bits in chunks.lexeme_bloom (migration 00009).
    -- complete: the keyword leg reads every posting of the term (exact mode, or no
    -- project has more than bm25_term_limit of them), so a chunk the leg did not
    -- find with it does not contain it.
    SELECT x.lexeme, x.qtf, x.idf, canon_lexeme_bits(x.lexeme) AS bloom_bits,
           CASE WHEN x.idx < 63 THEN 1::bigint << x.idx ELSE 0 END AS bit,
           sqlc.arg(fts_enabled)::boolean AND x.idx < 63
               AND (sqlc.arg(bm25_exact)::boolean OR x.max_df <= sqlc.arg(bm25_term_limit)::integer) AS complete
    FROM (
        SELECT t.lexeme, t.qtf,
               ln(1 + (c.n - coalesce(sum(s.df), 0) + 0.5) / (coalesce(sum(s.df), 0) + 0.5)) AS idf,
               coalesce(max(s.df), 0) AS max_df,
               (row_number() OVER (ORDER BY t.lexeme) - 1)::integer AS idx
        FROM query_terms t
        CROSS JOIN corpus c
        LEFT JOIN lexeme_stats s ON s.project_id = ANY (sqlc.arg(project_ids)::bigint[])
            AND s.project_id = ANY (canon_project_slots(sqlc.arg(project_ids)::bigint[])) AND s.lexeme = t.lexeme
        GROUP BY t.lexeme, t.qtf, c.n
    ) AS x
),
-- Pass 2 of a two-pass search ranks a list of documents (listed, by id): their
-- chunks that pass the filters, each read once for its distance and lexeme bloom.
-- Driven from the ids, so one generic plan fits every list.
listed_chunks AS MATERIALIZED (
    SELECT c.id AS chunk_id, c.project_id, c.lexeme_bloom,
           CASE WHEN sqlc.arg(semantic_enabled)::boolean
                THEN c.embedding <=> sqlc.arg(query_embedding)::vector
           END AS distance
    FROM unnest(sqlc.arg(listed_document_ids)::bigint[]) AS l (id)
    JOIN documents d ON d.id = l.id
    JOIN chunks c ON c.project_id = d.project_id AND c.document_id = d.id
        AND c.project_id = ANY (canon_project_slots(sqlc.arg(project_ids)::bigint[]))
    WHERE sqlc.arg(listed)::boolean
      AND d.project_id = ANY (sqlc.arg(project_ids)::bigint[])
      AND canon_document_matches(d, tags => sqlc.arg(tags)::text[],
          source_types => sqlc.arg(source_types)::text[], canonical_types => sqlc.arg(canonical_types)::text[],
          statuses => sqlc.arg(statuses)::text[], evidence_tiers => sqlc.arg(evidence_tiers)::text[],
          date_from => sqlc.narg(date_from)::date, date_to => sqlc.narg(date_to)::date,
          include_superseded => sqlc.arg(include_superseded)::boolean,
          doc_ids_filter => sqlc.arg(doc_ids_filter)::boolean, doc_ids => sqlc.arg(doc_ids)::text[],
          access_all => sqlc.arg(access_all)::boolean, access_groups => sqlc.arg(access_groups)::text[])
),
-- Vector leg: HNSW cosine, over-retrieving `fanout` chunks. Without document
-- filters it is the index scan alone; with filters they sit inside the leg
-- (iterative index scans keep the page full when they are selective).
vector_leg AS (
    SELECT v.chunk_id, v.distance, row_number() OVER (ORDER BY v.distance, v.chunk_id) AS vector_rank
    FROM (
        -- A caller held back by access lists alone has each chunk's document probed
        -- for its groups until `fanout` pass; the operator's probe is an empty row.
        -- The probe is a LATERAL with LIMIT, which a generic plan cannot turn into a
        -- join driven from documents (it guesses a handful of them are visible), and
        -- one branch for both keeps the plan's row estimates those of a bare scan.
        (SELECT c.id AS chunk_id, c.embedding <=> sqlc.arg(query_embedding)::vector AS distance
         FROM chunks c
         CROSS JOIN LATERAL (
             SELECT WHERE sqlc.arg(access_all)::boolean
             UNION ALL
             (SELECT FROM documents d
              WHERE NOT sqlc.arg(access_all)::boolean
                AND d.project_id = c.project_id AND d.id = c.document_id
                AND canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[])
              LIMIT 1)
         ) AS visible_document
         WHERE sqlc.arg(semantic_enabled)::boolean AND NOT sqlc.arg(filtered)::boolean
           AND NOT sqlc.arg(listed)::boolean
           AND c.project_id = ANY (sqlc.arg(project_ids)::bigint[])
           AND c.project_id = ANY (canon_project_slots(sqlc.arg(project_ids)::bigint[]))
         ORDER BY c.embedding <=> sqlc.arg(query_embedding)::vector
         LIMIT sqlc.arg(fanout)::integer)
        UNION ALL
        (SELECT c.id, c.embedding <=> sqlc.arg(query_embedding)::vector
         FROM chunks c
         JOIN documents d ON d.project_id = c.project_id AND d.id = c.document_id
         WHERE sqlc.arg(semantic_enabled)::boolean AND sqlc.arg(filtered)::boolean
           AND NOT sqlc.arg(doc_ids_filter)::boolean AND NOT sqlc.arg(listed)::boolean
           AND c.project_id = ANY (sqlc.arg(project_ids)::bigint[])
           AND c.project_id = ANY (canon_project_slots(sqlc.arg(project_ids)::bigint[]))
           AND d.project_id = ANY (sqlc.arg(project_ids)::bigint[])
           AND canon_document_matches(d, tags => sqlc.arg(tags)::text[],
               source_types => sqlc.arg(source_types)::text[], canonical_types => sqlc.arg(canonical_types)::text[],
               statuses => sqlc.arg(statuses)::text[], evidence_tiers => sqlc.arg(evidence_tiers)::text[],
               date_from => sqlc.narg(date_from)::date, date_to => sqlc.narg(date_to)::date,
               include_superseded => sqlc.arg(include_superseded)::boolean,
               doc_ids_filter => sqlc.arg(doc_ids_filter)::boolean, doc_ids => sqlc.arg(doc_ids)::text[],
               access_all => sqlc.arg(access_all)::boolean, access_groups => sqlc.arg(access_groups)::text[])
         ORDER BY c.embedding <=> sqlc.arg(query_embedding)::vector
         LIMIT sqlc.arg(fanout)::integer)
        UNION ALL
        -- A list of documents (doc_ids_mode=filter): measuring its documents' chunks
        -- exactly beats an HNSW scan skipping the rest of the corpus, so `+ 0` keeps
        -- the planner off the index.
        (SELECT c.id, c.embedding <=> sqlc.arg(query_embedding)::vector
         FROM documents d
         JOIN chunks c ON c.project_id = d.project_id AND c.document_id = d.id
             AND c.project_id = ANY (canon_project_slots(sqlc.arg(project_ids)::bigint[]))
         WHERE sqlc.arg(semantic_enabled)::boolean AND sqlc.arg(filtered)::boolean
           AND sqlc.arg(doc_ids_filter)::boolean AND NOT sqlc.arg(listed)::boolean
           AND d.project_id = ANY (sqlc.arg(project_ids)::bigint[])
           AND canon_document_matches(d, tags => sqlc.arg(tags)::text[],
               source_types => sqlc.arg(source_types)::text[], canonical_types => sqlc.arg(canonical_types)::text[],
               statuses => sqlc.arg(statuses)::text[], evidence_tiers => sqlc.arg(evidence_tiers)::text[],
               date_from => sqlc.narg(date_from)::date, date_to => sqlc.narg(date_to)::date,
               include_superseded => sqlc.arg(include_superseded)::boolean,
               doc_ids_filter => sqlc.arg(doc_ids_filter)::boolean, doc_ids => sqlc.arg(doc_ids)::text[],
               access_all => sqlc.arg(access_all)::boolean, access_groups => sqlc.arg(access_groups)::text[])
         ORDER BY (c.embedding <=> sqlc.arg(query_embedding)::vector) + 0
         LIMIT sqlc.arg(fanout)::integer)
        UNION ALL
        -- Pass 2: the listed documents' chunks, measured exactly.
        (SELECT lc.chunk_id, lc.distance
         FROM listed_chunks lc
         WHERE sqlc.arg(semantic_enabled)::boolean
         ORDER BY lc.distance
         LIMIT sqlc.arg(fanout)::integer)
    ) AS v
),
-- The chunks of the documents that pass the filters (empty without filters), for
-- the filtered keyword leg.
filtered_chunks AS MATERIALIZED (
    SELECT ch.id
    FROM documents d
    JOIN chunks ch ON ch.project_id = d.project_id AND ch.document_id = d.id
        AND ch.project_id = ANY (canon_project_slots(sqlc.arg(project_ids)::bigint[]))
    WHERE sqlc.arg(filtered)::boolean AND sqlc.arg(fts_enabled)::boolean AND NOT sqlc.arg(listed)::boolean
      AND d.project_id = ANY (sqlc.arg(project_ids)::bigint[])
      AND canon_document_matches(d, tags => sqlc.arg(tags)::text[],
          source_types => sqlc.arg(source_types)::text[], canonical_types => sqlc.arg(canonical_types)::text[],
          statuses => sqlc.arg(statuses)::text[], evidence_tiers => sqlc.arg(evidence_tiers)::text[],
          date_from => sqlc.narg(date_from)::date, date_to => sqlc.narg(date_to)::date,
          include_superseded => sqlc.arg(include_superseded)::boolean,
          doc_ids_filter => sqlc.arg(doc_ids_filter)::boolean, doc_ids => sqlc.arg(doc_ids)::text[],
          access_all => sqlc.arg(access_all)::boolean, access_groups => sqlc.arg(access_groups)::text[])
),
-- Keyword leg, step 1: BM25 from the postings of the query terms. Besides the
-- sum, each chunk keeps what candidates reuses: the mask of the terms found
-- (bits of the first 63) and their part of the sum and count. Occurrences in the
-- title/heading path count bm25_heading_boost times.
--   Without document filters: each (project, term)'s postings, one index range
--   each, in impact order. Exact mode (bm25_exact) reads whole ranges and the sum
--   is each chunk's exact BM25. Approximate mode reads the first bm25_term_limit
--   postings of each range, the chunks where the term weighs most (equal impacts
--   in chunk id order): a chunk outside one of those lists misses that term's part
--   here, which only decides whether it becomes a candidate (candidates completes
--   its BM25).
--   With filters the leg is exact (the searcher sets bm25_exact), so a selective
--   filter still fills the page: for a list of documents (doc_ids_mode=filter)
--   the postings of their chunks, a join PostgreSQL starts from the few
--   documents; for the other filters, the whole ranges as without filters, then
--   the chunks that are in filtered_chunks.
--   Pass 2 (listed): each listed chunk's own posting of each term, one index-only
--   probe, skipped when the chunk's lexeme bloom lacks one of the term's bits.
keyword_scored AS (
    SELECT p.chunk_id, sum(p.part) AS bm25,
           bit_or(p.bit) AS found, sum(p.part) FILTER (WHERE p.bit <> 0) AS found_bm25,
           count(*) FILTER (WHERE p.bit <> 0) AS found_terms
    FROM (
        SELECT p.chunk_id, t.bit,
               canon_bm25(p.tf, p.tf_heading, p.length, t.idf, t.qtf, sqlc.arg(bm25_k1)::float8, sqlc.arg(bm25_b)::float8,
                          sqlc.arg(bm25_heading_boost)::float8, c.avgdl,
                          sqlc.arg(bm25_delta)::float8, sqlc.arg(bm25_k3)::float8) AS part
        FROM unnest(sqlc.arg(project_ids)::bigint[]) AS pr (id)
        CROSS JOIN term_stats t
        CROSS JOIN corpus c
        CROSS JOIN LATERAL (
            SELECT p.chunk_id, p.tf, p.tf_heading, p.length
            FROM postings p
            WHERE p.project_id = pr.id AND p.lexeme = t.lexeme
              AND p.project_id = ANY (canon_project_slots(sqlc.arg(project_ids)::bigint[]))
            -- chunk_id: which of equal-impact postings make the limit never depends
            -- on where they sit on disk (migration 00010).
            ORDER BY p.impact DESC, p.chunk_id
            LIMIT CASE WHEN sqlc.arg(bm25_exact)::boolean THEN NULL ELSE sqlc.arg(bm25_term_limit)::integer END
        ) AS p
        WHERE sqlc.arg(fts_enabled)::boolean AND NOT sqlc.arg(doc_ids_filter)::boolean
          AND NOT sqlc.arg(listed)::boolean
        UNION ALL
        SELECT p.chunk_id, t.bit,
               canon_bm25(p.tf, p.tf_heading, p.length, t.idf, t.qtf, sqlc.arg(bm25_k1)::float8, sqlc.arg(bm25_b)::float8,
                          sqlc.arg(bm25_heading_boost)::float8, c.avgdl,
                          sqlc.arg(bm25_delta)::float8, sqlc.arg(bm25_k3)::float8)
        FROM term_stats t
        CROSS JOIN corpus c
        JOIN postings p ON p.project_id = ANY (sqlc.arg(project_ids)::bigint[])
            AND p.project_id = ANY (canon_project_slots(sqlc.arg(project_ids)::bigint[])) AND p.lexeme = t.lexeme
        WHERE sqlc.arg(fts_enabled)::boolean AND sqlc.arg(filtered)::boolean AND sqlc.arg(doc_ids_filter)::boolean
          AND NOT sqlc.arg(listed)::boolean
          AND p.chunk_id IN (SELECT fc.id FROM filtered_chunks fc)
        UNION ALL
        SELECT lc.chunk_id, t.bit,
               canon_bm25(p.tf, p.tf_heading, p.length, t.idf, t.qtf, sqlc.arg(bm25_k1)::float8, sqlc.arg(bm25_b)::float8,
                          sqlc.arg(bm25_heading_boost)::float8, c.avgdl,
                          sqlc.arg(bm25_delta)::float8, sqlc.arg(bm25_k3)::float8)
        FROM listed_chunks lc
        CROSS JOIN term_stats t
        CROSS JOIN corpus c
        CROSS JOIN LATERAL (
            SELECT p.tf, p.tf_heading, p.length FROM postings p
            WHERE p.chunk_id = lc.chunk_id AND p.lexeme = t.lexeme AND p.project_id = lc.project_id
              AND p.project_id = ANY (canon_project_slots(sqlc.arg(project_ids)::bigint[]))
            LIMIT 1
        ) AS p
        WHERE sqlc.arg(fts_enabled)::boolean AND (lc.lexeme_bloom & t.bloom_bits) = t.bloom_bits
    ) AS p
    GROUP BY p.chunk_id
    -- Other filters keep the chunks of filtered_chunks after the sums: a hash
    -- lookup per posting, never an index probe.
    HAVING NOT sqlc.arg(filtered)::boolean OR sqlc.arg(doc_ids_filter)::boolean OR sqlc.arg(listed)::boolean
        OR p.chunk_id IN (SELECT fc.id FROM filtered_chunks fc)
),
-- Keyword leg, step 2: its best `fanout` chunks the caller may see. With filters
-- (or in pass 2) keyword_scored holds only chunks that pass them; a caller held
-- back by access lists alone has each chunk's document probed, best first, until
-- `fanout` pass (a LATERAL with LIMIT, as in the vector leg).
keyword_top AS (
    SELECT ks.chunk_id, ks.bm25
    FROM keyword_scored ks
    CROSS JOIN LATERAL (
        SELECT WHERE sqlc.arg(access_all)::boolean OR sqlc.arg(filtered)::boolean OR sqlc.arg(listed)::boolean
        UNION ALL
        (SELECT FROM chunks c
         JOIN documents d ON d.project_id = c.project_id AND d.id = c.document_id
         WHERE NOT sqlc.arg(access_all)::boolean AND NOT sqlc.arg(filtered)::boolean
           AND NOT sqlc.arg(listed)::boolean
           AND c.project_id = ANY (sqlc.arg(project_ids)::bigint[])
           AND c.project_id = ANY (canon_project_slots(sqlc.arg(project_ids)::bigint[])) AND c.id = ks.chunk_id
           AND canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[])
         LIMIT 1)
    ) AS visible_chunk
    ORDER BY ks.bm25 DESC, ks.chunk_id
    LIMIT sqlc.arg(fanout)::integer
),
-- The approximate keyword leg came up short: fewer than `fanout` chunks the
-- caller may see, while some term's postings were read in part. The searcher
-- then ranks again with whole ranges (bm25_exact), so a caller who sees little of
-- a project still fills the page.
keyword_leg AS (
    SELECT sqlc.arg(fts_enabled)::boolean AND NOT sqlc.arg(bm25_exact)::boolean
           AND (SELECT count(*) FROM keyword_top) < sqlc.arg(fanout)::integer
           AND EXISTS (SELECT FROM term_stats t WHERE NOT t.complete) AS short
),
-- The mention leg: chunks of the documents the question names (@slug or doc_ids),
-- so their boost can act even when neither leg found them; filtered like the legs.
mention_leg AS (
    SELECT c.id AS chunk_id
    FROM documents d
    JOIN chunks c ON c.project_id = d.project_id AND c.document_id = d.id
        AND c.project_id = ANY (canon_project_slots(sqlc.arg(project_ids)::bigint[]))
    WHERE cardinality(sqlc.arg(mentioned)::text[]) > 0
      AND d.project_id = ANY (sqlc.arg(project_ids)::bigint[]) AND d.slug = ANY (sqlc.arg(mentioned)::text[])
      AND (NOT sqlc.arg(listed)::boolean OR d.id = ANY (sqlc.arg(listed_document_ids)::bigint[]))
      AND canon_document_matches(d, tags => sqlc.arg(tags)::text[],
          source_types => sqlc.arg(source_types)::text[], canonical_types => sqlc.arg(canonical_types)::text[],
          statuses => sqlc.arg(statuses)::text[], evidence_tiers => sqlc.arg(evidence_tiers)::text[],
          date_from => sqlc.narg(date_from)::date, date_to => sqlc.narg(date_to)::date,
          include_superseded => sqlc.arg(include_superseded)::boolean,
          doc_ids_filter => sqlc.arg(doc_ids_filter)::boolean, doc_ids => sqlc.arg(doc_ids)::text[],
          access_all => sqlc.arg(access_all)::boolean, access_groups => sqlc.arg(access_groups)::text[])
    ORDER BY c.id
    LIMIT sqlc.arg(fanout)::integer
),
-- Union of the legs' chunks, read back from an array (duplicates removed after
-- it) so the generic plan counts a handful of rows, not a tenth of the table.
candidate_ids AS (
    SELECT DISTINCT u.chunk_id
    FROM unnest(ARRAY(SELECT v.chunk_id FROM vector_leg v
                      UNION ALL
                      SELECT k.chunk_id FROM keyword_top k
                      UNION ALL
                      SELECT m.chunk_id FROM mention_leg m)) AS u (chunk_id)
),
-- Each candidate's chunk, read once: the columns the steps below need and its
-- cosine distance (computed again for the vector leg's own chunks, the same
-- number). Materialized so the wide row (the embedding) stops here.
candidate_chunks AS MATERIALIZED (
    SELECT c.id AS chunk_id, c.project_id, c.document_id, c.heading_lexemes, c.lexeme_bloom, c.language,
           CASE WHEN sqlc.arg(semantic_enabled)::boolean
                THEN c.embedding <=> sqlc.arg(query_embedding)::vector
           END AS distance
    FROM candidate_ids ci
    JOIN chunks c ON c.project_id = ANY (sqlc.arg(project_ids)::bigint[])
        AND c.project_id = ANY (canon_project_slots(sqlc.arg(project_ids)::bigint[])) AND c.id = ci.chunk_id
),
-- Each candidate with its rank in the leg(s) that found it (RRF counts those
-- only) and its exact BM25, whichever leg found it, with the number of query
-- terms it contains (for keyword_coverage, computed even when the keyword leg is
-- off: the refusal gate reads it under every fusion). The keyword rank orders
-- the keyword leg's chunks by their exact BM25.
--   What keyword_scored found is reused. A (candidate, term) pair it could have
-- missed, a term whose list it read only in part and did not find the chunk in,
-- costs one probe of the chunk's own postings (an index-only lookup on
-- (chunk_id, lexeme)), with the same formula, unless the chunk's lexeme_bloom
-- lacks one of the term's bits: then the chunk does not contain the term. In
-- exact mode nothing is probed.
candidates AS (
    SELECT cc.chunk_id, cc.project_id, cc.document_id, cc.heading_lexemes, cc.language, v.vector_rank, cc.distance,
           CASE WHEN k.chunk_id IS NOT NULL
                THEN row_number() OVER (PARTITION BY k.chunk_id IS NOT NULL ORDER BY pr.bm25 DESC, cc.chunk_id)
           END AS keyword_rank,
           CASE WHEN sqlc.arg(fts_enabled)::boolean THEN pr.bm25 ELSE 0 END::float8 AS bm25,
           pr.terms::float8 AS matched_terms
    FROM candidate_chunks cc
    LEFT JOIN vector_leg v ON v.chunk_id = cc.chunk_id
    LEFT JOIN keyword_top k ON k.chunk_id = cc.chunk_id
    LEFT JOIN keyword_scored ks ON ks.chunk_id = cc.chunk_id
    -- What keyword_scored found plus what the probes find.
    CROSS JOIN LATERAL (
        SELECT coalesce(ks.found_bm25, 0)
               + coalesce(sum(canon_bm25(p.tf, p.tf_heading, p.length, t.idf, t.qtf, sqlc.arg(bm25_k1)::float8,
                                         sqlc.arg(bm25_b)::float8, sqlc.arg(bm25_heading_boost)::float8,
                                         co.avgdl, sqlc.arg(bm25_delta)::float8, sqlc.arg(bm25_k3)::float8)), 0) AS bm25,
               coalesce(ks.found_terms, 0) + count(*) AS terms
        FROM term_stats t
        CROSS JOIN corpus co
        -- LIMIT 1 (there is at most one posting) keeps the planner from joining
        -- every posting of the candidate instead.
        CROSS JOIN LATERAL (
            SELECT p.tf, p.tf_heading, p.length FROM postings p
            WHERE p.chunk_id = cc.chunk_id AND p.lexeme = t.lexeme AND p.project_id = cc.project_id
              AND p.project_id = ANY (canon_project_slots(sqlc.arg(project_ids)::bigint[]))
            LIMIT 1
        ) AS p
        WHERE NOT t.complete AND (coalesce(ks.found, 0) & t.bit) = 0
          AND (cc.lexeme_bloom & t.bloom_bits) = t.bloom_bits
    ) AS pr
),
-- Raw signals, each defined in the README:
--   heading       share of query terms in the title/heading path
--   identifier    share of the question's identifiers in the title/heading path
--   tag_overlap   share of the document's tag lexemes that are query terms or filter tags
--   preamble      share of query terms in the document's summary / first paragraph
--   recency       0.5 ^ (age in days / half-life); 0 without an effective date
--   status_active 1 when the status is accepted or active
--   mention       1 when the question names the document (@slug or doc_ids)
--   evidence      1 − the trust of the document's evidence tier (evidence_tiers /
--                 evidence_trust parameters); 0 for documents that claim no tier
-- Only ids and numbers go on from here: the three windows below buffer and sort
-- every candidate; the returned rows read their text and metadata at the end.
signals AS (
    SELECT cand.chunk_id, cand.project_id, cand.document_id, cand.vector_rank, cand.keyword_rank,
           -- Without the semantic leg (keyword_only, or a question that embeds to the
           -- zero vector, whose cosine is NaN) the similarity is 0.
           CASE WHEN NOT sqlc.arg(semantic_enabled)::boolean THEN 0
                ELSE greatest(1 - cand.distance, 0)
           END::float8 AS vector_similarity,
           cand.bm25,
           CASE WHEN q.n = 0 THEN 0 ELSE o.heading_words / q.n END AS heading,
           -- A chunk whose title or heading names the identifier is about it; the
           -- legs cannot tell it from one that mentions it once among other terms.
           CASE WHEN qi.n = 0 THEN 0 ELSE o.identifier_words / qi.n END AS identifier,
           -- Absolute evidence for the refusal gate: the share of the question's terms
           -- the chunk contains (never normalised against the other candidates), out
           -- of those its own language's configuration produced (canon_language_terms).
           least(coalesce(cand.matched_terms
                          / nullif(canon_language_terms(qc.languages, q.config_positions, cand.language, q.n), 0),
                          0), 1) AS keyword_coverage,
           CASE WHEN cardinality(d.tag_lexemes) = 0 THEN 0 ELSE o.tag_words / cardinality(d.tag_lexemes) END AS tag_overlap,
           CASE WHEN q.n = 0 THEN 0 ELSE o.preamble_words / q.n END AS preamble,
           CASE WHEN d.effective_date IS NULL THEN 0
                ELSE power(0.5, greatest(sqlc.arg(today)::date - d.effective_date, 0)::float8
                                / sqlc.arg(recency_half_life_days)::float8)
           END AS recency,
           CASE WHEN d.status IN ('accepted', 'active') THEN 1 ELSE 0 END::float8 AS status_active,
           CASE WHEN d.slug = ANY (sqlc.arg(mentioned)::text[]) THEN 1 ELSE 0 END::float8 AS mention,
           coalesce(1 - (sqlc.arg(evidence_trust)::float8[])[
               array_position(sqlc.arg(evidence_tier_names)::text[], d.evidence_tier)], 0)::float8 AS evidence_distrust,
           -- The trust gradient applies to canonical documents only, so a project
           -- without any gets exactly the plain hybrid ranking.
           CASE WHEN d.canonical_type IS NULL THEN 0
                WHEN d.status = 'superseded' THEN sqlc.arg(superseded_penalty)::float8
                WHEN d.status = 'deprecated' THEN sqlc.arg(deprecated_penalty)::float8
                WHEN d.status = 'archived' THEN sqlc.arg(archived_penalty)::float8
                ELSE 0
           END AS status_penalty,
           CASE WHEN d.canonical_type IS NOT NULL AND d.tier = 'auto' THEN sqlc.arg(auto_tier_penalty)::float8
                ELSE 0
           END AS tier_penalty,
           CASE WHEN d.canonical_type IS NULL THEN 0 ELSE d.retrieval_priority END::float8 AS priority
    FROM candidates cand
    -- One primary-key probe per candidate, whatever the generic plan estimates
    -- (OFFSET 0 keeps the subquery a probe: counting a thousand candidates, the
    -- planner merge-joined every document instead, 10 ms).
    CROSS JOIN LATERAL (
        SELECT d.* FROM documents d
        WHERE d.project_id = cand.project_id AND d.id = cand.document_id
        OFFSET 0
    ) AS d
    CROSS JOIN query_lexemes q
    CROSS JOIN query_identifiers qi
    CROSS JOIN query_configs qc
    -- The overlaps, counted in one pass over the query words per candidate.
    CROSS JOIN LATERAL (
        SELECT count(*) FILTER (WHERE w.in_query AND w.lexeme = ANY (cand.heading_lexemes))::float8 AS heading_words,
               count(*) FILTER (WHERE w.is_identifier AND w.lexeme = ANY (cand.heading_lexemes))::float8 AS identifier_words,
               count(*) FILTER (WHERE w.lexeme = ANY (d.tag_lexemes))::float8 AS tag_words,
               count(*) FILTER (WHERE w.in_query AND w.lexeme = ANY (d.preamble_lexemes))::float8 AS preamble_words
        FROM query_words w
    ) AS o
),
-- Normalisation across the candidates: vector min-max (when normalize_scores),
-- keyword divided by the best BM25 so a chunk matching nothing scores 0.
normalized AS (
    SELECT s.*,
           CASE WHEN NOT sqlc.arg(normalize_scores)::boolean THEN s.vector_similarity
                WHEN max(s.vector_similarity) OVER () > min(s.vector_similarity) OVER ()
                    THEN (s.vector_similarity - min(s.vector_similarity) OVER ())
                         / (max(s.vector_similarity) OVER () - min(s.vector_similarity) OVER ())
                ELSE 1
           END AS vector_normalized,
           CASE WHEN max(s.bm25) OVER () > 0 THEN s.bm25 / max(s.bm25) OVER () ELSE 0 END AS keyword_normalized
    FROM signals s
),
-- Fusion. weighted: base + additive signals + the adjustment
--   t = Wmention·mention + Widentifier·identifier + Wpriority·priority
--       − status penalty − tier penalty − Wevidence·evidence_distrust
-- rrf: Σ w/(k + rank) over the legs that found the chunk, plus t counted in gaps
-- between ranks 1 and 2 of every leg, where RRF scores are compressed, so a penalty
-- moves a document past about as many neighbours as under weighted:
--   t × rrf_trust_positions × (Ws + Wf) / ((k + 1)(k + 2))
-- semantic_only / keyword_only: the bare leg score, for comparison and benchmarks.
fused AS (
    SELECT n.*,
           CASE sqlc.arg(fusion)::text
               WHEN 'weighted' THEN
                   sqlc.arg(vector_weight)::float8 * n.vector_normalized
                   + sqlc.arg(keyword_weight)::float8 * n.keyword_normalized
                   + sqlc.arg(heading_weight)::float8 * n.heading
                   + sqlc.arg(tag_overlap_weight)::float8 * n.tag_overlap
                   + sqlc.arg(preamble_weight)::float8 * n.preamble
                   + sqlc.arg(recency_weight)::float8 * n.recency
                   + sqlc.arg(status_weight)::float8 * n.status_active
                   + sqlc.arg(mention_weight)::float8 * n.mention
                   + sqlc.arg(identifier_weight)::float8 * n.identifier
                   + sqlc.arg(priority_weight)::float8 * n.priority - n.status_penalty - n.tier_penalty
                   - sqlc.arg(evidence_weight)::float8 * n.evidence_distrust
               WHEN 'rrf' THEN
                   coalesce(sqlc.arg(semantic_weight)::float8 / (sqlc.arg(rrf_k)::float8 + n.vector_rank), 0)
                   + coalesce(sqlc.arg(fts_weight)::float8 / (sqlc.arg(rrf_k)::float8 + n.keyword_rank), 0)
                   + sqlc.arg(rrf_trust_positions)::float8
                     * (sqlc.arg(semantic_weight)::float8 + sqlc.arg(fts_weight)::float8)
                     / ((sqlc.arg(rrf_k)::float8 + 1) * (sqlc.arg(rrf_k)::float8 + 2))
                     * (sqlc.arg(mention_weight)::float8 * n.mention
                        + sqlc.arg(identifier_weight)::float8 * n.identifier
                        + sqlc.arg(priority_weight)::float8 * n.priority - n.status_penalty - n.tier_penalty
                        - sqlc.arg(evidence_weight)::float8 * n.evidence_distrust)
               WHEN 'semantic_only' THEN n.vector_similarity
               ELSE n.bm25
           END AS score
    FROM normalized n
    -- The single-leg methods rank only what their own leg found.
    WHERE sqlc.arg(fusion)::text NOT IN ('semantic_only', 'keyword_only')
       OR (sqlc.arg(fusion)::text = 'semantic_only' AND n.vector_rank IS NOT NULL)
       OR (sqlc.arg(fusion)::text = 'keyword_only' AND n.keyword_rank IS NOT NULL)
),
-- Per-document cap, so one document cannot flood the page (the minimum score
-- applies after it, in page).
capped AS (
    SELECT f.*
    FROM (
        SELECT f.*, row_number() OVER (PARTITION BY f.document_id ORDER BY f.score DESC, f.chunk_id) AS doc_rank
        FROM fused f
    ) AS f
    WHERE f.doc_rank <= sqlc.arg(max_chunks_per_doc)::integer
),
-- Positions in score order, and the counts before and after the minimum score.
-- One window for the three: the chunks at or above the minimum come first in
-- this order, so their row numbers are their positions among themselves.
page AS (
    SELECT c.*,
           count(*) OVER w AS candidates_pre_threshold,
           count(*) FILTER (WHERE c.score >= sqlc.arg(min_score)::float8) OVER w AS candidates_post_threshold,
           row_number() OVER w AS position
    FROM capped c
    WINDOW w AS (ORDER BY c.score DESC, c.chunk_id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
)
-- Primary hits are the first `page_limit`; the next `runner_up_limit` are runners-up.
-- Their text and metadata are read here, for these rows only, with the document's
-- kind (domain.DocumentKind: its source type, and whether it lists attendees),
-- the titles of the documents their wikilinks name (read in place of the slugs)
-- and its owners' names (canon_owner_names).
SELECT p.chunk_id, p.document_id, d.slug, d.title, d.source_path, pr.project_key, c.heading_path, c.text,
       c.links, lt.titles::text[] AS link_titles, ow.names::text[] AS owner_names,
       c.is_summary, d.canonical_type, d.status, d.tags, d.evidence_tier, d.retrieval_priority, d.tier,
       d.source_type, d.attended,
       p.score::float8 AS score, p.position::integer AS position,
       coalesce(p.vector_rank, 0)::integer AS vector_rank, coalesce(p.keyword_rank, 0)::integer AS keyword_rank,
       p.vector_similarity, p.vector_normalized::float8 AS vector_normalized, p.bm25,
       p.keyword_normalized::float8 AS keyword_normalized,
       p.keyword_coverage::float8 AS keyword_coverage, p.heading::float8 AS heading,
       p.identifier::float8 AS identifier, p.tag_overlap::float8 AS tag_overlap, p.preamble::float8 AS preamble,
       p.recency::float8 AS recency, p.status_active, p.mention, p.priority,
       p.status_penalty::float8 AS status_penalty, p.tier_penalty::float8 AS tier_penalty,
       p.evidence_distrust::float8 AS evidence_distrust,
       p.candidates_pre_threshold::integer AS candidates_pre_threshold,
       p.candidates_post_threshold::integer AS candidates_post_threshold,
       ql.lexemes::text[] AS query_lexemes, ql.config_positions::integer[] AS query_config_positions,
       coalesce((SELECT k.short FROM keyword_leg k), false)::boolean AS keyword_leg_short
FROM page p
JOIN chunks c ON c.project_id = p.project_id AND c.id = p.chunk_id
JOIN documents d ON d.project_id = p.project_id AND d.id = p.document_id
JOIN projects pr ON pr.id = p.project_id
CROSS JOIN query_lexemes ql
CROSS JOIN LATERAL canon_link_titles(c.project_id, c.links, sqlc.arg(access_all)::boolean,
                                     sqlc.arg(access_groups)::text[]) AS lt (titles)
CROSS JOIN LATERAL canon_owner_names(d.project_id, d.owners, sqlc.arg(access_all)::boolean,
                                     sqlc.arg(access_groups)::text[]) AS ow (names)
WHERE p.score >= sqlc.arg(min_score)::float8
  AND p.position <= sqlc.arg(page_limit)::integer + sqlc.arg(runner_up_limit)::integer
ORDER BY p.score DESC, p.chunk_id;

-- name: SearchTermScores :many
-- Each query term's BM25 contribution to the given chunks (for explain): the same
-- formula as keyword_scored in SearchRank, the question analysed with the
-- configurations SearchRank used (its query_configs).
WITH query_terms AS (
    SELECT t.lexeme, t.qtf
    FROM canon_query_terms(sqlc.arg(configs)::text[]::regconfig[], sqlc.arg(query)::text) AS t (lexeme, qtf, config_positions)
),
corpus AS (
    SELECT greatest(sum(chunk_count), 1)::float8 AS n,
           greatest(sum(total_length)::float8 / greatest(sum(chunk_count), 1), 1) AS avgdl
    FROM project_stats WHERE project_id = ANY (sqlc.arg(project_ids)::bigint[])
),
term_stats AS (
    SELECT t.lexeme, t.qtf,
           ln(1 + (c.n - coalesce(sum(s.df), 0) + 0.5) / (coalesce(sum(s.df), 0) + 0.5)) AS idf
    FROM query_terms t
    CROSS JOIN corpus c
    LEFT JOIN lexeme_stats s ON s.project_id = ANY (sqlc.arg(project_ids)::bigint[])
        AND s.project_id = ANY (canon_project_slots(sqlc.arg(project_ids)::bigint[])) AND s.lexeme = t.lexeme
    GROUP BY t.lexeme, t.qtf, c.n
)
SELECT p.chunk_id, t.lexeme::text AS lexeme,
       canon_bm25(p.tf, p.tf_heading, p.length, t.idf, t.qtf, sqlc.arg(bm25_k1)::float8, sqlc.arg(bm25_b)::float8,
                  sqlc.arg(bm25_heading_boost)::float8, c.avgdl,
                          sqlc.arg(bm25_delta)::float8, sqlc.arg(bm25_k3)::float8) AS score
FROM term_stats t
CROSS JOIN corpus c
JOIN postings p ON p.project_id = ANY (sqlc.arg(project_ids)::bigint[])
    AND p.project_id = ANY (canon_project_slots(sqlc.arg(project_ids)::bigint[])) AND p.lexeme = t.lexeme
WHERE p.chunk_id = ANY (sqlc.arg(chunk_ids)::bigint[])
ORDER BY p.chunk_id, score DESC, t.lexeme;
