-- name: EntityUpsert :one
INSERT INTO entities (project_id, document_id, slug, entity_type, name, aliases, role, facts, embedding)
VALUES (sqlc.arg(project_id), sqlc.arg(document_id), sqlc.arg(slug), sqlc.arg(entity_type), sqlc.arg(name),
        sqlc.arg(aliases)::text[], sqlc.arg(role), sqlc.arg(facts)::text[], sqlc.arg(embedding)::vector)
ON CONFLICT (project_id, document_id) DO UPDATE SET
    slug = excluded.slug,
    entity_type = excluded.entity_type,
    name = excluded.name,
    aliases = excluded.aliases,
    role = excluded.role,
    facts = excluded.facts,
    embedding = excluded.embedding
RETURNING id;

-- name: EntityDeleteByDocument :exec
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
-- After MentionDeleteText, in the same transaction: recomputes body mentions of entity names and aliases for a whole project after an
-- ingest (an entity page may arrive after the documents that mention it). The GIN
-- index narrows to chunks containing the phrase; strength is the number of
-- occurrences across the document's chunks.
-- Every name an entity goes by: its name, its aliases and, for people, a first name
-- that no other person in the project shares.
WITH surface AS (
    SELECT e.slug, e.document_id, lower(n) AS form
    FROM entities e, unnest(array_append(e.aliases, e.name)) n
    WHERE e.project_id = sqlc.arg(project_id) AND length(n) >= 3
    UNION
    SELECT e.slug, e.document_id, lower(split_part(e.name, ' ', 1))
    FROM entities e
    WHERE e.project_id = sqlc.arg(project_id) AND e.entity_type = 'person'
      AND length(split_part(e.name, ' ', 1)) >= 3
      AND NOT EXISTS (SELECT 1 FROM entities o
                      WHERE o.project_id = e.project_id AND o.id <> e.id AND o.entity_type = 'person'
                        AND lower(split_part(o.name, ' ', 1)) = lower(split_part(e.name, ' ', 1)))
),
hits AS (
    SELECT s.slug, c.document_id,
           sum((length(lower(c.text)) - length(replace(lower(c.text), s.form, ''))) / length(s.form)) AS n
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

-- name: MentionsMarkStale :exec
-- In the transaction that changes a project's documents: their body mentions
-- wait for the rebuild.
UPDATE projects SET mentions_stale = true WHERE id = sqlc.arg(project_id) AND NOT mentions_stale;

-- name: MentionsMarkFresh :exec
-- In the rebuild's transaction, after MentionRebuildText.
UPDATE projects SET mentions_stale = false WHERE id = sqlc.arg(project_id) AND mentions_stale;

-- name: MentionsStale :one
SELECT mentions_stale FROM projects WHERE id = sqlc.arg(project_id);
