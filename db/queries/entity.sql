-- name: EntityUpsert :one
-- The role and facts are analysed here, with the configuration of the page's
-- language (stored before its entity), for pass 1's role and facts signals.
INSERT INTO entities (project_id, document_id, slug, entity_type, name, aliases, role, facts, embedding,
                      role_lexemes, facts_lexemes)
SELECT sqlc.arg(project_id), sqlc.arg(document_id), sqlc.arg(slug), sqlc.arg(entity_type), sqlc.arg(name),
       sqlc.arg(aliases)::text[], sqlc.arg(role), sqlc.arg(facts)::text[], sqlc.arg(embedding)::vector,
       tsvector_to_array(to_tsvector(c.config, sqlc.arg(role))),
       tsvector_to_array(to_tsvector(c.config, array_to_string(sqlc.arg(facts)::text[], ' ')))
FROM (SELECT canon_text_config((SELECT d.language FROM documents d
                                WHERE d.project_id = sqlc.arg(project_id) AND d.id = sqlc.arg(document_id)))
          AS config) AS c
ON CONFLICT (project_id, document_id) DO UPDATE SET
    slug = excluded.slug,
    entity_type = excluded.entity_type,
    name = excluded.name,
    aliases = excluded.aliases,
    role = excluded.role,
    facts = excluded.facts,
    embedding = excluded.embedding,
    role_lexemes = excluded.role_lexemes,
    facts_lexemes = excluded.facts_lexemes
RETURNING id;

-- name: EntityDeleteByDocument :execrows
DELETE FROM entities WHERE project_id = sqlc.arg(project_id) AND document_id = sqlc.arg(document_id);

-- name: TeamMembersDelete :exec
DELETE FROM team_members WHERE project_id = sqlc.arg(project_id) AND team_id = sqlc.arg(team_id);

-- name: TeamMembersInsert :exec
INSERT INTO team_members (project_id, team_id, member_slug)
SELECT sqlc.arg(project_id), sqlc.arg(team_id), m FROM unnest(sqlc.arg(member_slugs)::text[]) m
ON CONFLICT DO NOTHING;

-- name: MentionDeleteDeclared :exec
-- Mentions the document declares in frontmatter (attendees, entities, owners).
DELETE FROM entity_mentions
WHERE project_id = sqlc.arg(project_id) AND document_id = sqlc.arg(document_id) AND source <> 'text';

-- name: MentionInsert :exec
INSERT INTO entity_mentions (project_id, entity_slug, document_id, strength, source)
SELECT sqlc.arg(project_id)::bigint, unnest(sqlc.arg(entity_slugs)::text[]), sqlc.arg(document_id)::bigint,
       unnest(sqlc.arg(strengths)::real[]), unnest(sqlc.arg(sources)::text[])
ON CONFLICT (project_id, entity_slug, document_id, source) DO UPDATE SET strength = excluded.strength;

-- name: MentionDeleteText :exec
DELETE FROM entity_mentions WHERE project_id = sqlc.arg(project_id) AND source = 'text';

-- name: MentionRebuildText :execrows
-- After MentionDeleteText, in the same transaction: recomputes body mentions of
-- entity names and aliases for a whole project, when its entities changed (an
-- entity page may arrive after the documents that mention it). The GIN index
-- narrows to chunks containing the phrase; strength is the number of
-- occurrences across the document's chunks.
-- The forms are names, aliases and unique first names (canon_entity_surfaces),
-- not the parts a question names an entity by (entities.name_parts): in prose a
-- codename or a last name is often an everyday word ("an outbox relay publishes"
-- mentioned Project Relay; an entity scenario's P@5 fell from 0.80 to 0.60).
WITH surface AS (
    -- The casts name the function's columns for sqlc, which cannot see them.
    SELECT e.slug::text AS slug, e.document_id::bigint AS document_id, e.form::text AS form
    FROM canon_entity_surfaces(sqlc.arg(project_id)::bigint) AS e
),
hits AS (
    SELECT s.slug, c.document_id,
           sum(canon_occurrences(c.text, s.form)) AS n
    FROM surface s
    -- Each chunk is searched with its own language's configuration, one
    -- (form, language) at a time so the tsv index serves each probe.
    CROSS JOIN LATERAL (
        SELECT pl.language, phraseto_tsquery(canon_text_config(pl.language), s.form) AS query
        FROM project_languages pl WHERE pl.project_id = sqlc.arg(project_id)
    ) AS l
    -- OFFSET 0 keeps the probe a subquery per (form, language): flattened into a
    -- join on language, the planner scanned every chunk against every form.
    CROSS JOIN LATERAL (
        SELECT c.document_id, c.text
        FROM chunks c
        WHERE c.project_id = sqlc.arg(project_id)
          AND c.language = l.language
          AND c.tsv @@ l.query
          AND c.document_id <> s.document_id
          AND NOT c.is_summary
        OFFSET 0
    ) AS c
    GROUP BY s.slug, c.document_id
)
INSERT INTO entity_mentions (project_id, entity_slug, document_id, strength, source)
SELECT sqlc.arg(project_id), slug, document_id, n, 'text' FROM hits WHERE n > 0
ON CONFLICT (project_id, entity_slug, document_id, source) DO UPDATE SET strength = excluded.strength;

-- name: MentionDeleteTextOf :exec
DELETE FROM entity_mentions
WHERE project_id = sqlc.arg(project_id) AND document_id = ANY (sqlc.arg(document_ids)::bigint[]) AND source = 'text';

-- name: MentionRebuildTextOf :execrows
-- After MentionDeleteTextOf, in the same transaction: the body mentions in the
-- given documents, when the project's entities did not change; the same rows
-- MentionRebuildText would write for them. Driven from the documents' chunks:
-- a chunk meets only the names whose first lexeme it holds (a hash join on its
-- lexemes), and only those are matched as phrases, so the cost follows the
-- documents changed, not the project.
WITH entity_names AS (
    -- The casts name the function's columns for sqlc, which cannot see them.
    SELECT e.slug::text AS slug, e.document_id::bigint AS document_id, e.form::text AS form
    FROM canon_entity_surfaces(sqlc.arg(project_id)::bigint) AS e
),
-- Each name in each of the project's languages: its phrase query, and one of
-- its lexemes, which a chunk must hold to match it. Materialized, as are the
-- chunks' lexemes below: joined first on that lexeme, the phrase is matched on
-- the few pairs left (inlined, the planner matched every name against every
-- chunk, 2 s for 224 documents of a 100,000-chunk project).
surface AS MATERIALIZED (
    SELECT s.slug, s.document_id, s.form, l.language, l.query, l.lexemes[1] AS lexeme
    FROM entity_names s
    CROSS JOIN LATERAL (
        SELECT pl.language, phraseto_tsquery(canon_text_config(pl.language), s.form) AS query,
               tsvector_to_array(to_tsvector(canon_text_config(pl.language), s.form)) AS lexemes
        FROM project_languages pl WHERE pl.project_id = sqlc.arg(project_id)
    ) AS l
),
-- The documents' chunks, a row per lexeme (their text and tsv are read again
-- only for the pairs the join leaves).
chunk_lexemes AS MATERIALIZED (
    SELECT c.id, c.document_id, c.language, u.lexeme
    FROM chunks c
    CROSS JOIN LATERAL unnest(tsvector_to_array(c.tsv)) AS u (lexeme)
    WHERE c.project_id = sqlc.arg(project_id)
      AND c.document_id = ANY (sqlc.arg(document_ids)::bigint[])
      AND NOT c.is_summary
),
hits AS (
    SELECT s.slug, c.document_id,
           sum(canon_occurrences(c.text, s.form)) AS n
    FROM chunk_lexemes l
    JOIN surface s ON s.lexeme = l.lexeme AND s.language = l.language AND s.document_id <> l.document_id
    JOIN chunks c ON c.project_id = sqlc.arg(project_id) AND c.id = l.id
    WHERE c.tsv @@ s.query
    GROUP BY s.slug, c.document_id
)
INSERT INTO entity_mentions (project_id, entity_slug, document_id, strength, source)
SELECT sqlc.arg(project_id), slug, document_id, n, 'text' FROM hits WHERE n > 0
ON CONFLICT (project_id, entity_slug, document_id, source) DO UPDATE SET strength = excluded.strength;

-- name: MentionsPendingAdd :exec
-- In the transaction that writes documents: their body mentions wait for the
-- rebuild after the ingest. A document written again gets a new row version,
-- which a rebuild that read the old one leaves (MentionsPendingDone).
INSERT INTO mentions_pending (project_id, document_id)
SELECT sqlc.arg(project_id), unnest(sqlc.arg(document_ids)::bigint[])
ON CONFLICT (project_id, document_id) DO UPDATE SET document_id = excluded.document_id;

-- name: MentionsPending :many
-- The documents whose body mentions wait for a rebuild, with the row version
-- read.
SELECT document_id, xmin::text AS version FROM mentions_pending
WHERE project_id = sqlc.arg(project_id)
ORDER BY document_id;

-- name: MentionsPendingChunks :one
-- The chunks of those documents, and of the whole project: the rebuild reads
-- the documents alone when they are a small part of it.
SELECT (SELECT count(*) FROM chunks c
        WHERE c.project_id = sqlc.arg(project_id) AND c.document_id = ANY (sqlc.arg(document_ids)::bigint[]))::bigint AS pending,
       coalesce((SELECT s.chunk_count FROM project_stats s WHERE s.project_id = sqlc.arg(project_id)), 0)::bigint AS total;

-- name: MentionsPendingDone :exec
-- Deletes the rows the rebuild read, in the versions it read: a document an
-- ingest wrote again meanwhile (a new version, or one still being written,
-- skipped rather than waited for) stays for the next rebuild.
DELETE FROM mentions_pending m
USING (
    SELECT x.document_id
    -- versions[i] is the version read of document_ids[i].
    FROM unnest(sqlc.arg(document_ids)::bigint[]) WITH ORDINALITY AS v (document_id, i)
    JOIN mentions_pending x ON x.project_id = sqlc.arg(project_id) AND x.document_id = v.document_id
        AND x.xmin::text = (sqlc.arg(versions)::text[])[v.i]
    FOR UPDATE OF x SKIP LOCKED
) AS r
WHERE m.project_id = sqlc.arg(project_id) AND m.document_id = r.document_id;

-- name: MentionsMarkStale :exec
-- In a transaction that changes a project's entities (or deletes documents):
-- every document's body mentions wait for the rebuild.
UPDATE projects SET mentions_stale = true WHERE id = sqlc.arg(project_id) AND NOT mentions_stale;

-- name: MentionsMarkFresh :exec
-- In the rebuild's transaction, after MentionRebuildText.
UPDATE projects SET mentions_stale = false WHERE id = sqlc.arg(project_id) AND mentions_stale;

-- name: MentionsStaleProject :one
-- Whether the project's entities changed since its last rebuild.
SELECT mentions_stale FROM projects WHERE id = sqlc.arg(project_id);

-- name: MentionsStale :one
-- Whether a rebuild has work: the project's entities changed, or some of its
-- documents did.
SELECT (p.mentions_stale
        OR EXISTS (SELECT FROM mentions_pending m WHERE m.project_id = sqlc.arg(project_id)))::boolean AS stale
FROM projects p WHERE p.id = sqlc.arg(project_id);
