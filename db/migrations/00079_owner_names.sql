-- A hit carries its document's owners (frontmatter `owners:`), read as the names
-- on their people's pages, so an answer can say who owns what it cites.

-- +goose Up
-- canon_owner_names: each owner in order, as the title of the person's (or
-- team's) page its slug names when the reader may see that page, as written when
-- no document has that slug, and left out when the reader may not see the
-- document that has it (the slug would name a hidden page). A table function so
-- the planner inlines it, as canon_link_titles is.
-- +goose StatementBegin
CREATE FUNCTION canon_owner_names(project bigint, owners text[], access_all boolean, access_groups text[])
RETURNS TABLE (names text[])
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(n.name ORDER BY o.n) FILTER (WHERE n.name IS NOT NULL), '{}')
    FROM unnest(owners) WITH ORDINALITY AS o (owner, n)
    CROSS JOIN LATERAL (
        SELECT CASE WHEN d.id IS NULL THEN o.owner
                    WHEN NOT canon_document_visible(d, access_all, access_groups) THEN NULL
                    WHEN d.entity_type IS NOT NULL THEN d.title
                    ELSE o.owner
               END AS name
        FROM (SELECT) AS one
        LEFT JOIN documents d ON d.project_id = project AND d.slug = o.owner
    ) AS n
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION canon_owner_names(bigint, text[], boolean, text[]);
