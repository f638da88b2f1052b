-- Two-pass entity-guided search (package hierarchy): pass 1 ranks the entities a
-- question is about, pass 2 ranks the documents linked to them with SearchRank.
--
-- Tables (db/migrations/00001_schema.sql):
--   entities        (project_id, id, document_id, slug, entity_type, name, aliases, name_parts, role, facts, embedding)
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
-- Every entity is scored, so the cost grows with the entities (not the chunks);
-- the text signals are computed only for entities a cheap test pre-selects.
-- The question is analysed as the ranking statement analyses it: with the
-- configurations of the projects' languages, bound by the caller as SearchRank's.
WITH
-- The configurations, once (referenced as a subquery, each use ran it again).
question_configs AS MATERIALIZED (
    SELECT sqlc.arg(configs)::text[]::regconfig[] AS configs
),
question AS (
    SELECT c.configs,
           ARRAY(SELECT to_tsvector(x.config, sqlc.arg(query)::text) FROM unnest(c.configs) AS x (config)) AS tsvs,
           lower(sqlc.arg(query)::text) AS text,
           t.lexemes,
           -- LIKE patterns of the terms' first four letters: a role or facts text
           -- matching none cannot share a term (stems end differently: migrat, studi).
           ARRAY(SELECT '%' || left(l.lexeme, 4) || '%' FROM unnest(t.lexemes) AS l (lexeme)) AS patterns
    FROM question_configs c
    CROSS JOIN LATERAL (
        SELECT coalesce(array_agg(t.lexeme ORDER BY t.lexeme), '{}')::text[] AS lexemes
        FROM canon_query_terms(c.configs, sqlc.arg(query)::text) AS t
    ) AS t
),
-- The entities the caller may see: an entity whose page is hidden by the
-- document ACL does not exist for this question. Their pages are read only to
-- test that (probing every entity's page was a fifth of the statement), and not
-- at all for a caller who sees every document.
project_entities AS (
    SELECT e.project_id, e.id, e.document_id, e.slug, e.entity_type, e.name, e.aliases, e.name_parts,
           e.role_lexemes, e.facts_lexemes,
           1 - (e.embedding <=> sqlc.narg(query_embedding)::vector) AS cosine
    FROM entities e
    WHERE e.project_id = ANY (sqlc.arg(project_ids)::bigint[])
      AND (sqlc.arg(access_all)::boolean
           OR EXISTS (SELECT FROM documents d
                      WHERE d.project_id = e.project_id AND d.id = e.document_id
                        AND canon_document_visible(d, false, sqlc.arg(access_groups)::text[])))
),
-- Entities whose name holds a run close to a word of the question, found with the
-- trigram index on lower(name) (word_similarity above pg_trgm's
-- word_similarity_threshold, 0.6 by default); the others get no fuzzy signal.
-- word_separators split the question into words (hierarchy.WordSeparators, which
-- the name gate splits by too).
-- One index lookup per word: OFFSET 0 keeps the lookup a subquery of its own, so
-- the planner cannot turn it into a join that tests every entity against every
-- word instead. It prices the <% test at one operator (pg_trgm declares no
-- cost), while it builds the trigrams of both strings: at 232 people that join
-- was 4 ms of a 9 ms pass 1, and statistics decided between the two plans.
fuzzy_candidates AS (
    SELECT DISTINCT e.id
    FROM question q
    CROSS JOIN LATERAL regexp_split_to_table(q.text, sqlc.arg(word_separators)::text) AS w (word)
    CROSS JOIN LATERAL (
        SELECT e.id FROM entities e
        WHERE e.project_id = ANY (sqlc.arg(project_ids)::bigint[]) AND w.word <% lower(e.name)
        OFFSET 0
    ) AS e
    WHERE length(w.word) >= 3
),
-- People's first and last names (entities.name_parts) found in the question as
-- written.
part_hits AS MATERIALIZED (
    SELECT e.project_id, e.id, p.part
    FROM project_entities e
    CROSS JOIN question q
    CROSS JOIN LATERAL unnest(e.name_parts) AS p (part)
    WHERE strpos(q.text, p.part) > 0
),
-- The names worth testing. Every name an entity goes by is its name, its aliases
-- and, for people, a first or last name no other person of the project the
-- caller may see has ("Dana", "Okafor"); only those found in the question as
-- written (strpos) can match exactly, and only fuzzy candidates' names and
-- aliases are compared fuzzily.
surface AS (
    SELECT e.id, lower(n.form) AS form, fc.id IS NOT NULL AS fuzzy
    FROM project_entities e
    CROSS JOIN question q
    CROSS JOIN LATERAL unnest(array_append(e.aliases, e.name)) AS n (form)
    LEFT JOIN fuzzy_candidates fc ON fc.id = e.id
    WHERE n.form <> '' AND (fc.id IS NOT NULL OR strpos(q.text, lower(n.form)) > 0)
    UNION ALL
    SELECT h.id, h.part, false
    FROM part_hits h
    WHERE NOT EXISTS (SELECT FROM project_entities o
                      WHERE o.project_id = h.project_id AND o.id <> h.id AND h.part = ANY (o.name_parts))
),
-- Exact: the form in the question, confirmed as a phrase of lexemes (word
-- boundaries; "platform teams" names "Platform team"). Fuzzy: trigram similarity
-- of the form and the closest run of whole words of the question; an exact match
-- counts as a perfect one.
name_match AS (
    SELECT s.id,
           max(x.exact)::float8 AS name_exact,
           max(greatest(x.exact, CASE WHEN s.fuzzy THEN strict_word_similarity(s.form, q.text) ELSE 0 END))::float8 AS name_fuzzy,
           array_agg(s.form) FILTER (WHERE x.exact = 1) AS named_forms
    FROM surface s
    CROSS JOIN question q
    CROSS JOIN LATERAL (
        SELECT CASE WHEN strpos(q.text, s.form) > 0
                         AND EXISTS (SELECT FROM generate_subscripts(q.configs, 1) AS i
                                     WHERE q.tsvs[i] @@ phraseto_tsquery(q.configs[i], s.form))
                    THEN 1 ELSE 0
               END AS exact
    ) AS x
    GROUP BY s.id
),
-- The names of the teams a person belongs to join their role text, for the teams
-- whose name shares a term prefix with the question (others cannot add a term).
team_names AS (
    SELECT m.project_id, m.member_slug, string_agg(t.name, ' ' ORDER BY t.id) AS names
    FROM project_entities t
    CROSS JOIN question q
    JOIN team_members m ON m.project_id = t.project_id AND m.team_id = t.id
    WHERE t.entity_type = 'team' AND lower(t.name) LIKE ANY (q.patterns)
    GROUP BY m.project_id, m.member_slug
),
-- Role and facts: the share of the question's terms among the lexemes of the
-- role (with the names of the person's teams found above) and of the facts,
-- stored with the entity (migration 00075). Only a member of such a team reads its
-- page's text-search configuration, to analyse the team names as its role.
text_signals AS (
    SELECT t.id,
           (SELECT count(*) FROM unnest(t.lexemes) AS l (lexeme)
            WHERE l.lexeme = ANY (t.role_lexemes) OR l.lexeme = ANY (t.team_lexemes))::float8
               / cardinality(t.lexemes) AS role,
           (SELECT count(*) FROM unnest(t.lexemes) AS l (lexeme)
            WHERE l.lexeme = ANY (t.facts_lexemes))::float8 / cardinality(t.lexemes) AS facts
    FROM (
        SELECT e.id, e.role_lexemes, e.facts_lexemes, q.lexemes,
               CASE WHEN tn.names IS NULL THEN '{}'
                    ELSE tsvector_to_array(to_tsvector(
                        (SELECT canon_text_config(d.language) FROM documents d
                         WHERE d.project_id = e.project_id AND d.id = e.document_id), tn.names))
               END AS team_lexemes
        FROM project_entities e
        CROSS JOIN question q
        LEFT JOIN team_names tn ON tn.project_id = e.project_id AND tn.member_slug = e.slug
        WHERE cardinality(q.lexemes) > 0
          AND (e.role_lexemes && q.lexemes OR e.facts_lexemes && q.lexemes OR tn.names IS NOT NULL)
    ) AS t
),
signals AS (
    SELECT e.id, e.project_id, e.entity_type,
           coalesce(nm.name_exact, 0) AS name_exact,
           coalesce(nm.name_fuzzy, 0) AS name_fuzzy,
           coalesce(ts.role, 0)::float8 AS role,
           coalesce(ts.facts, 0)::float8 AS facts,
           -- No embedding (or a zero query vector, whose cosine is NaN) means no signal.
           coalesce(CASE WHEN e.cosine = 'NaN'::float8 THEN 0 ELSE greatest(e.cosine, 0) END, 0)::float8 AS vector
    FROM project_entities e
    LEFT JOIN text_signals ts ON ts.id = e.id
    LEFT JOIN name_match nm ON nm.id = e.id
),
scored AS (
    SELECT s.id, s.project_id, s.entity_type,
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
-- The best max_entities by direct score (ties: the lower id).
top AS (
    SELECT t.*, row_number() OVER (ORDER BY t.score DESC, t.id) AS rank
    FROM (SELECT s.* FROM scored s ORDER BY s.score DESC, s.id LIMIT sqlc.arg(max_entities)::integer) AS t
),
-- The decision. A tiny tolerance keeps 0.6 − 0.5 from failing a 0.1 gap on rounding.
decision AS (
    SELECT CASE WHEN coalesce(max(t.score) FILTER (WHERE t.rank = 1), 0) < sqlc.arg(entity_threshold)::float8
                    THEN 'no_confident_entity'
                WHEN coalesce(max(t.score) FILTER (WHERE t.rank = 1), 0)
                     - coalesce(max(t.score) FILTER (WHERE t.rank = sqlc.arg(max_entities)::integer), 0)
                     < sqlc.arg(min_gap)::float8 - 1e-9
                    THEN 'entities_too_similar'
                ELSE 'confident_entities'
           END AS reason
    FROM top t
),
chosen AS (
    SELECT t.* FROM top t CROSS JOIN decision d
    WHERE d.reason = 'confident_entities' AND t.score >= sqlc.arg(entity_threshold)::float8
),
-- One level of team expansion: the members of a chosen team the caller may see,
-- at a discount.
expanded AS (
    SELECT m.id,
           max(t.score * sqlc.arg(team_discount)::float8) AS score,
           (array_agg(ct.slug ORDER BY t.score DESC, t.id))[1] AS via
    FROM chosen t
    JOIN entities ct ON ct.project_id = t.project_id AND ct.id = t.id
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
    FROM chosen c
    JOIN name_match nm ON nm.id = c.id
    CROSS JOIN question q
    CROSS JOIN LATERAL unnest(nm.named_forms) AS f (form)
    CROSS JOIN LATERAL unnest(q.configs) AS x (config)
    CROSS JOIN LATERAL unnest(tsvector_to_array(to_tsvector(x.config, f.form))) AS l (lexeme)
),
stripped AS (
    SELECT coalesce(string_agg(w.word, ' ' ORDER BY w.n), '') AS query
    FROM regexp_split_to_table(sqlc.arg(query)::text, '\s+') WITH ORDINALITY AS w (word, n)
    CROSS JOIN named
    CROSS JOIN question q
    CROSS JOIN LATERAL (
        SELECT ARRAY(SELECT t.lexeme FROM canon_query_terms(q.configs, w.word) AS t) AS lexemes
    ) AS wl
    WHERE cardinality(wl.lexemes) = 0 OR NOT wl.lexemes <@ named.lexemes
),
-- A question left without a term ("What does Lee own?": own is a stop word)
-- keeps its words: the name is then all the keyword leg has.
residual AS (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM canon_query_terms(q.configs, s.query)) THEN s.query
                ELSE sqlc.arg(query)::text
           END AS query
    FROM stripped s
    CROSS JOIN question q
),
-- The rows: the top entities and the members a chosen team added (rank 0 when
-- they are not among the top).
listed AS (
    SELECT coalesce(t.id, x.id) AS id, coalesce(t.rank, 0) AS rank, t.id IS NOT NULL AND c.id IS NOT NULL AS top_chosen,
           x.score AS expanded_score, x.via
    FROM top t
    LEFT JOIN chosen c ON c.id = t.id
    FULL JOIN expanded x ON x.id = t.id
)
SELECT e.id AS entity_id, e.project_id, p.project_key, e.slug, e.name, e.entity_type, e.document_id,
       greatest(s.score, coalesce(l.expanded_score, 0))::float8 AS score,
       s.score::float8 AS direct_score,
       CASE WHEN l.expanded_score > s.score THEN l.via ELSE '' END::text AS via,
       l.rank::integer AS rank,
       (l.top_chosen OR l.expanded_score IS NOT NULL)::boolean AS chosen,
       d.reason::text AS reason,
       rq.query::text AS residual_query,
       -- The stripped question even when nothing is left of it: the words that
       -- named the chosen entities, for the refusal gate's evidence.
       sq.query::text AS stripped_query,
       g.name_exact::float8 AS name_exact, g.name_fuzzy::float8 AS name_fuzzy, g.role::float8 AS role,
       g.facts::float8 AS facts, g.vector::float8 AS vector
FROM listed l
JOIN entities e ON e.project_id = ANY (sqlc.arg(project_ids)::bigint[]) AND e.id = l.id
JOIN projects p ON p.id = e.project_id
JOIN scored s ON s.id = l.id
JOIN signals g ON g.id = l.id
CROSS JOIN decision d
CROSS JOIN residual rq
CROSS JOIN stripped sq
ORDER BY greatest(s.score, coalesce(l.expanded_score, 0)) DESC, e.id;

-- name: EntityNames :many
-- What the two-pass searcher's name gate (hierarchy/gate.go) tests a question
-- against without running EntityRank: every form EntityRank finds in a question
-- as written (name and aliases lowercased as it lowercases them, a person's name
-- parts), and the trigrams of the name its fuzzy test compares, as pg_trgm makes
-- them (show_trgm: a trigram of multibyte characters is a hash, printed in hex
-- unless its bytes happen to be printable). Every entity, whatever the caller
-- may see: the gate only ever concludes that no entity is named, which a longer
-- list cannot make wrong.
SELECT p.id AS project_id, p.project_key, (e.id IS NOT NULL)::boolean AS is_entity,
       coalesce(lower(e.name), '')::text AS name,
       ARRAY(SELECT lower(a.form) FROM unnest(e.aliases) AS a (form) WHERE a.form <> '')::text[] AS aliases,
       coalesce(e.name_parts, '{}')::text[] AS name_parts,
       coalesce(show_trgm(lower(e.name)), '{}')::text[] AS name_trigrams
FROM projects p
-- A project without entities has one row, is_entity false: it is known to name none.
LEFT JOIN entities e ON e.project_id = p.id AND e.project_id = ANY (sqlc.arg(project_ids)::bigint[])
WHERE p.id = ANY (sqlc.arg(project_ids)::bigint[]);

-- name: NameGateSettings :one
-- How this database reads a question for EntityRank, for the name gate: lower()
-- of the printable ASCII characters (a locale may lowercase them differently),
-- the ASCII characters that separate words (word_separators), those of the
-- typographic punctuation asked about that separate words and have no case, and pg_trgm's
-- word_similarity_threshold ('' if the extension's library is not loaded yet;
-- show_trgm, folded when the statement is planned, loads it).
SELECT lower(sqlc.arg(ascii)::text)::text AS lowered,
       coalesce((SELECT string_agg(chr(c), '' ORDER BY c) FROM generate_series(1, 127) AS c
                 WHERE chr(c) ~ sqlc.arg(word_separators)::text), '')::text AS separators,
       coalesce((SELECT string_agg(t.c, '' ORDER BY t.n)
                 FROM regexp_split_to_table(sqlc.arg(typographic)::text, '') WITH ORDINALITY AS t (c, n)
                 WHERE t.c ~ sqlc.arg(word_separators)::text AND lower(t.c) = t.c), '')::text AS typographic_separators,
       cardinality(show_trgm('loaded')) > 0 AS trgm_loaded,
       coalesce(current_setting('pg_trgm.word_similarity_threshold', true), '')::text AS word_similarity_threshold;

-- name: EntityLinks :many
-- Pass 2's entity-to-documents map: every document linked to one of the entities,
-- with its strongest link's kind and weight. The kinds, strongest first by default
-- (hierarchy.LinkWeights, KB_HIERARCHY_LINK_*):
--   page            the entity's own page                               page_weight
--   declared        frontmatter owners / entities: name it               declared_weight
--   attendee        a person attended (frontmatter attendees)            attendee_weight
--   tag             a tag is its slug, name or an alias                  tag_weight
--   member_meeting  a team's members attended: weighted by the share of
--                   the attendees who are members                        member_meeting_weight
--   mention         the body names it n times: n / (n + text_half)       mention_weight
--                   (or 1 without use_strength)
-- A team's members' other documents are not here: pass 1 chose the members at
-- team_discount × the team's score, and their own links bring them.
-- Each document also carries what intent signals read to type it: its source and
-- canonical types and whether anyone attended it.
WITH chosen AS (
    SELECT e.id, e.project_id, e.slug, e.entity_type, e.document_id,
           -- The forms a tag may spell the entity in: slug, name, aliases,
           -- lowercased, spaces as hyphens ("Project Atlas" -> project-atlas).
           ARRAY(SELECT DISTINCT replace(lower(f), ' ', '-')
                 FROM unnest(array_append(array_append(e.aliases, e.name), e.slug)) AS f
                 WHERE f <> '') AS tag_forms
    FROM entities e
    WHERE e.project_id = ANY (sqlc.arg(project_ids)::bigint[]) AND e.id = ANY (sqlc.arg(entity_ids)::bigint[])
),
-- The entity's own page.
own_page AS (
    SELECT c.id AS entity_id, c.document_id, 'page'::text AS link, sqlc.arg(page_weight)::float8 AS weight
    FROM chosen c
),
-- Declared links, attendance and body mentions, as the ingester recorded them.
mentioned AS (
    SELECT c.id AS entity_id, m.document_id,
           CASE m.source WHEN 'frontmatter' THEN 'declared' WHEN 'attendee' THEN 'attendee' ELSE 'mention' END AS link,
           CASE m.source
               WHEN 'frontmatter' THEN sqlc.arg(declared_weight)::float8
               WHEN 'attendee' THEN sqlc.arg(attendee_weight)::float8
               WHEN 'text' THEN sqlc.arg(mention_weight)::float8
                    * CASE WHEN sqlc.arg(use_strength)::boolean THEN m.strength / (m.strength + sqlc.arg(text_half)::float8)
                           ELSE 1 END
           END::float8 AS weight
    FROM chosen c
    JOIN entity_mentions m ON m.project_id = c.project_id AND m.entity_slug = c.slug
),
-- Documents carrying the entity as a tag (tags: [atlas] for Project Atlas, when
-- Atlas is one of its aliases), found through the documents_tag_forms index.
tagged AS (
    SELECT c.id AS entity_id, d.id AS document_id, 'tag'::text AS link, sqlc.arg(tag_weight)::float8 AS weight
    FROM chosen c
    JOIN documents d ON d.project_id = c.project_id AND d.id <> c.document_id
    WHERE canon_tag_forms(d.tags) && c.tag_forms
),
-- Meetings a team's members attended, in proportion to the share of the attendees
-- who are members: the team's own meeting counts fully, a meeting one member of
-- three joined counts a third.
member_meetings AS (
    SELECT c.id AS entity_id, a.document_id, 'member_meeting'::text AS link,
           (sqlc.arg(member_meeting_weight)::float8 * count(tm.member_slug) / count(*))::float8 AS weight
    FROM chosen c
    JOIN entity_mentions a ON a.project_id = c.project_id AND a.source = 'attendee'
    LEFT JOIN team_members tm ON tm.project_id = c.project_id AND tm.team_id = c.id AND tm.member_slug = a.entity_slug
    WHERE c.entity_type = 'team'
    GROUP BY c.id, a.document_id
    HAVING count(tm.member_slug) > 0
),
-- A document linked several ways keeps its strongest link (ties: the kind's name).
strongest AS (
    SELECT DISTINCT ON (l.entity_id, l.document_id) l.*
    FROM (SELECT * FROM own_page UNION ALL SELECT * FROM mentioned UNION ALL SELECT * FROM tagged
          UNION ALL SELECT * FROM member_meetings) AS l
    ORDER BY l.entity_id, l.document_id, l.weight DESC, l.link
)
SELECT s.entity_id, s.document_id, d.slug, s.link, s.weight::float8 AS weight,
       d.source_type, coalesce(d.canonical_type, '')::text AS canonical_type,
       d.attended
FROM strongest s
JOIN chosen e ON e.id = s.entity_id
JOIN documents d ON d.project_id = e.project_id AND d.id = s.document_id
-- Only what the caller may see (pass 2 filters again; the links also reach --explain).
WHERE canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[])
ORDER BY s.entity_id, s.weight DESC, d.slug;

-- name: SearchEvidence :many
-- The refusal gate's absolute evidence for given chunks against a question: the
-- same vector_similarity and keyword_coverage as SearchRank's signals, for the
-- hits of a two-pass search. Pass 2 ranks by the question without the words that
-- named the chosen entities (stripped); the gate needs the evidence of the
-- question asked. Every such hit is a document linked to a chosen entity (owner,
-- attendee, explicit link, tag, members' meeting, mention, its own page), so it
-- accounts for the question's terms that named the entity even where its text
-- does not repeat them; the other terms still have to be in the chunk.
-- A chunk of a document of the kind the question's verbs ask for (frame, the
-- verbs of domain.QuestionFrame: "decide" in "what did we decide about
-- secrets?"; framed_chunk_ids, the chunks the caller found of that kind) holds
-- the verbs' terms too: ADR-012 on secrets need not say "decide". The flat search
-- reads this for such chunks as well (search/frame.go).
-- The question is analysed as SearchRank analyses it (the same languages and
-- configurations, bound by the caller), and a chunk's coverage counts against its
-- own language's share of the terms.
WITH query_configs AS (
    SELECT sqlc.arg(languages)::text[] AS languages, sqlc.arg(configs)::text[]::regconfig[] AS configs
),
query_terms AS (
    SELECT t.lexeme, t.config_positions
    FROM query_configs qc
    CROSS JOIN LATERAL canon_query_terms(qc.configs, sqlc.arg(query)::text) AS t (lexeme, qtf, config_positions)
),
-- The terms, their number, and the positions of the configurations that
-- produced them, flattened (as SearchRank's query_lexemes).
query_lexemes AS (
    SELECT coalesce(array_agg(t.lexeme), '{}')::text[] AS lexemes, count(*)::float8 AS n,
           canon_array_cat(t.config_positions)::integer[] AS config_positions
    FROM query_terms t
),
named_lexemes AS (
    SELECT coalesce(array_agg(n.lexeme), '{}')::text[] AS lexemes
    FROM (SELECT t.lexeme FROM query_terms t
          EXCEPT
          SELECT t.lexeme FROM query_configs qc
          CROSS JOIN LATERAL canon_query_terms(qc.configs, sqlc.arg(stripped)::text) AS t (lexeme, qtf, config_positions)) n
),
-- The terms of the question's frame verbs.
frame_lexemes AS (
    SELECT coalesce(array_agg(t.lexeme), '{}')::text[] AS lexemes
    FROM query_configs qc
    CROSS JOIN LATERAL canon_query_terms(qc.configs, sqlc.arg(frame)::text) AS t (lexeme, qtf, config_positions)
)
SELECT c.id AS chunk_id,
       CASE WHEN sqlc.arg(semantic_enabled)::boolean
            THEN greatest(1 - (c.embedding <=> sqlc.arg(query_embedding)::vector), 0)
            ELSE 0
       END::float8 AS vector_similarity,
       least(coalesce(cardinality(ARRAY((SELECT unnest(tsvector_to_array(c.tsv))
                                         UNION SELECT unnest(nl.lexemes)
                                         UNION SELECT unnest(fl.lexemes)
                                         WHERE c.id = ANY (sqlc.arg(framed_chunk_ids)::bigint[]))
                                        INTERSECT SELECT unnest(q.lexemes)))::float8
                      / nullif(canon_language_terms(qc.languages, q.config_positions, c.language, q.n), 0),
                      0), 1)::float8 AS keyword_coverage
FROM chunks c
JOIN documents d ON d.project_id = c.project_id AND d.id = c.document_id
CROSS JOIN query_configs qc
CROSS JOIN query_lexemes q
CROSS JOIN named_lexemes nl
CROSS JOIN frame_lexemes fl
WHERE c.project_id = ANY (sqlc.arg(project_ids)::bigint[])
  -- Prunes other projects' partitions on the generic plan (migration 00063).
  AND c.project_id = ANY (canon_project_slots(sqlc.arg(project_ids)::bigint[]))
  AND c.id = ANY (sqlc.arg(chunk_ids)::bigint[])
  AND canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[])
ORDER BY c.id;
