-- Two-pass entity-guided search (package hierarchy): pass 1 ranks the entities a
-- question is about, pass 2 ranks the documents linked to them with SearchRank.
--
-- Tables (db/migrations/00001_schema.sql):
--   entities        (project_id, id, document_id, slug, entity_type, name, aliases, role, facts, embedding)
--   team_members    (project_id, team_id, member_slug)
--   entity_mentions (project_id, entity_slug, document_id, strength, source)  -- source text|attendee|frontmatter

-- name: EntityRank :many
-- Pass 1. Every entity of the projects gets five signals in [0,1]; the score is
-- their weighted mean (so it stays in [0,1] whatever the weights):
--   name_exact  1 when the question contains one of the entity's names as a phrase
--   name_fuzzy  best pg_trgm strict_word_similarity of a name inside the question (typos)
--   role        share of the question's terms found in the role and the names of the entity's teams
--   facts       share of the question's terms found in the facts (full text)
--   vector      cosine of the entity's embedding and the question's
-- Then the decision, on the direct scores: two-pass when the best score reaches
-- entity_threshold and stands min_gap above the max_entities-th best (an entity a
-- project does not have scores 0). The chosen entities are the top max_entities
-- reaching the threshold; a chosen team adds its members (one level) at
-- team_discount × the team's score, or their own score when higher.
-- Rows: the top max_entities by direct score, plus the members a chosen team adds.
WITH question AS (
    SELECT to_tsvector('english', sqlc.arg(query)::text) AS tsv,
           lower(sqlc.arg(query)::text) AS text,
           ARRAY(SELECT t.lexeme FROM canon_query_terms(sqlc.arg(query)::text) AS t) AS lexemes
),
project_entities AS (
    SELECT e.* FROM entities e WHERE e.project_id = ANY (sqlc.arg(project_ids)::bigint[])
),
-- Every name an entity goes by: its name, its aliases and, for people, a first or
-- last name no other person of the project has ("Dana", "Okafor").
surface AS (
    SELECT e.id, lower(n) AS form
    FROM project_entities e, unnest(array_append(e.aliases, e.name)) AS n
    WHERE n <> ''
    UNION
    SELECT e.id, lower(p.part)
    FROM project_entities e
    CROSS JOIN LATERAL (VALUES (split_part(e.name, ' ', 1)), (split_part(e.name, ' ', -1))) AS p (part)
    WHERE e.entity_type = 'person' AND length(p.part) >= 3
      AND NOT EXISTS (SELECT 1 FROM project_entities o
                      WHERE o.project_id = e.project_id AND o.id <> e.id AND o.entity_type = 'person'
                        AND lower(p.part) IN (lower(split_part(o.name, ' ', 1)), lower(split_part(o.name, ' ', -1))))
),
-- Exact: the form's lexemes as a phrase in the question (the english config, so
-- "platform teams" names "Platform team"). Fuzzy: trigram similarity of the form
-- and the closest run of whole words of the question.
name_match AS (
    SELECT s.id,
           max(CASE WHEN q.tsv @@ phraseto_tsquery('english', s.form) THEN 1 ELSE 0 END)::float8 AS name_exact,
           max(strict_word_similarity(s.form, q.text))::float8 AS name_fuzzy,
           array_agg(s.form) FILTER (WHERE q.tsv @@ phraseto_tsquery('english', s.form)) AS named_forms
    FROM surface s
    CROSS JOIN question q
    GROUP BY s.id
),
signals AS (
    SELECT e.id, e.project_id, e.slug, e.name, e.entity_type, e.document_id,
           coalesce(nm.name_exact, 0) AS name_exact,
           coalesce(nm.name_fuzzy, 0) AS name_fuzzy,
           coalesce(nm.named_forms, '{}') AS named_forms,
           CASE WHEN cardinality(q.lexemes) = 0 THEN 0
                ELSE cardinality(ARRAY(SELECT unnest(tsvector_to_array(canon_tsvector(concat_ws(' ', e.role, teams.names))))
                                       INTERSECT SELECT unnest(q.lexemes)))::float8 / cardinality(q.lexemes)
           END AS role,
           CASE WHEN cardinality(q.lexemes) = 0 THEN 0
                ELSE cardinality(ARRAY(SELECT unnest(tsvector_to_array(canon_tsvector(array_to_string(e.facts, ' '))))
                                       INTERSECT SELECT unnest(q.lexemes)))::float8 / cardinality(q.lexemes)
           END AS facts,
           -- No embedding (or a zero query vector, whose cosine is NaN) means no signal.
           coalesce(CASE WHEN cos.v = 'NaN'::float8 THEN 0 ELSE greatest(cos.v, 0) END, 0)::float8 AS vector
    FROM project_entities e
    CROSS JOIN question q
    LEFT JOIN name_match nm ON nm.id = e.id
    LEFT JOIN LATERAL (
        SELECT string_agg(t.name, ' ' ORDER BY t.id) AS names
        FROM team_members m
        JOIN entities t ON t.project_id = m.project_id AND t.id = m.team_id
        WHERE m.project_id = e.project_id AND m.member_slug = e.slug
    ) AS teams ON true
    CROSS JOIN LATERAL (SELECT 1 - (e.embedding <=> sqlc.narg(query_embedding)::vector) AS v) AS cos
),
scored AS (
    SELECT s.*,
           (sqlc.arg(name_exact_weight)::float8 * s.name_exact
            + sqlc.arg(name_fuzzy_weight)::float8 * s.name_fuzzy
            + sqlc.arg(role_weight)::float8 * s.role
            + sqlc.arg(facts_weight)::float8 * s.facts
            + sqlc.arg(vector_weight)::float8 * s.vector)
           / nullif(sqlc.arg(name_exact_weight)::float8 + sqlc.arg(name_fuzzy_weight)::float8
                    + sqlc.arg(role_weight)::float8 + sqlc.arg(facts_weight)::float8
                    + sqlc.arg(vector_weight)::float8, 0) AS score
    FROM signals s
),
ranked AS (
    SELECT s.*, row_number() OVER (ORDER BY s.score DESC, s.id) AS rank FROM scored s
),
-- The decision. A tiny tolerance keeps 0.6 − 0.5 from failing a 0.1 gap on rounding.
decision AS (
    SELECT CASE WHEN coalesce(max(r.score) FILTER (WHERE r.rank = 1), 0) < sqlc.arg(entity_threshold)::float8
                    THEN 'no_confident_entity'
                WHEN coalesce(max(r.score) FILTER (WHERE r.rank = 1), 0)
                     - coalesce(max(r.score) FILTER (WHERE r.rank = sqlc.arg(max_entities)::integer), 0)
                     < sqlc.arg(min_gap)::float8 - 1e-9
                    THEN 'entities_too_similar'
                ELSE 'confident_entities'
           END AS reason
    FROM ranked r
),
chosen AS (
    SELECT r.* FROM ranked r CROSS JOIN decision d
    WHERE d.reason = 'confident_entities'
      AND r.rank <= sqlc.arg(max_entities)::integer AND r.score >= sqlc.arg(entity_threshold)::float8
),
-- One level of team expansion: the members of a chosen team, at a discount.
expanded AS (
    SELECT m.id,
           max(t.score * sqlc.arg(team_discount)::float8) AS score,
           (array_agg(t.slug ORDER BY t.score DESC, t.id))[1] AS via
    FROM chosen t
    JOIN team_members tm ON tm.project_id = t.project_id AND tm.team_id = t.id
    JOIN project_entities m ON m.project_id = tm.project_id AND m.slug = tm.member_slug
    WHERE t.entity_type = 'team'
    GROUP BY m.id
),
-- The question without the words that named a chosen entity, for pass 2 with
-- strip_names: the documents are already the entity's, and their link to it is
-- scored apart (parent_entity_score), so the name would only favour documents
-- that repeat it over those the entity owns or attended.
named AS (
    SELECT coalesce(array_agg(DISTINCT l.lexeme), '{}') AS lexemes
    FROM chosen c, unnest(c.named_forms) AS f (form),
         unnest(tsvector_to_array(to_tsvector('english', f.form))) AS l (lexeme)
),
residual AS (
    SELECT coalesce(string_agg(w.word, ' ' ORDER BY w.n), '') AS query
    FROM regexp_split_to_table(sqlc.arg(query)::text, '\s+') WITH ORDINALITY AS w (word, n)
    CROSS JOIN named
    WHERE cardinality(tsvector_to_array(to_tsvector('english', w.word))) = 0
       OR NOT tsvector_to_array(to_tsvector('english', w.word)) <@ named.lexemes
)
SELECT r.id AS entity_id, r.project_id, p.project_key, r.slug, r.name, r.entity_type, r.document_id,
       greatest(r.score, coalesce(x.score, 0))::float8 AS score,
       r.score::float8 AS direct_score,
       CASE WHEN x.score > r.score THEN x.via ELSE '' END::text AS via,
       r.rank::integer AS rank,
       (c.id IS NOT NULL OR x.id IS NOT NULL)::boolean AS chosen,
       d.reason::text AS reason,
       rq.query::text AS residual_query,
       r.name_exact::float8 AS name_exact, r.name_fuzzy::float8 AS name_fuzzy, r.role::float8 AS role,
       r.facts::float8 AS facts, r.vector::float8 AS vector
FROM ranked r
CROSS JOIN decision d
CROSS JOIN residual rq
JOIN projects p ON p.id = r.project_id
LEFT JOIN chosen c ON c.id = r.id
LEFT JOIN expanded x ON x.id = r.id
WHERE r.rank <= sqlc.arg(max_entities)::integer OR x.id IS NOT NULL
ORDER BY greatest(r.score, coalesce(x.score, 0)) DESC, r.id;

-- name: EntityLinks :many
-- Pass 2's entity-to-documents map: every document linked to one of the entities,
-- with the link's weight in [0,1]. An entity's own page and a declared link (owner,
-- `entities:`, attendee) weigh 1; a body mention weighs n / (n + text_half) for n
-- occurrences (text_half occurrences weigh 0.5), or 1 when use_strength is false.
-- A document linked several ways keeps its strongest link.
WITH links AS (
    SELECT e.id AS entity_id, e.document_id, 1::float8 AS weight
    FROM entities e
    WHERE e.id = ANY (sqlc.arg(entity_ids)::bigint[])
    UNION ALL
    SELECT e.id, m.document_id,
           CASE WHEN NOT sqlc.arg(use_strength)::boolean OR m.source <> 'text' THEN 1
                ELSE m.strength / (m.strength + sqlc.arg(text_half)::float8)
           END::float8
    FROM entities e
    JOIN entity_mentions m ON m.project_id = e.project_id AND m.entity_slug = e.slug
    WHERE e.id = ANY (sqlc.arg(entity_ids)::bigint[])
)
SELECT l.entity_id, l.document_id, d.slug, max(l.weight)::float8 AS weight
FROM links l
JOIN entities e ON e.id = l.entity_id
JOIN documents d ON d.project_id = e.project_id AND d.id = l.document_id
GROUP BY l.entity_id, l.document_id, d.slug
ORDER BY l.entity_id, weight DESC, d.slug;
