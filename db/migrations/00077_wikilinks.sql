-- Where each wikilink sits in a chunk's text (and in a document's summary), so a
-- link written without a label ([[std-search-config]]) is read as its target's
-- title when the text is read, not as the slug: the title the target has then,
-- of a target the reader may see, so a renamed or later-arriving target needs
-- no re-ingest of the documents that link to it, and the chunk's text (its
-- lexemes, its embedding) stays what the file says.

-- +goose Up
-- links: [{"to": slug, "start": byte, "end": byte, "label": true|absent}], in
-- text order; text[start:end] is what the link reads as in the file.
ALTER TABLE chunks ADD COLUMN links jsonb NOT NULL DEFAULT '[]';
ALTER TABLE documents ADD COLUMN summary_links jsonb NOT NULL DEFAULT '[]';

-- canon_link_titles: the title of each link's target, in the links' order, ''
-- for a target missing from the project or hidden from the reader (its slug is
-- read instead). A table function so the planner inlines it, and its documents
-- probe is on the row's project_id (a co-located join under Citus). One probe of
-- the (project_id, slug) key per link: a join let a generic plan hash the
-- project's documents for every chunk read.
-- +goose StatementBegin
CREATE FUNCTION canon_link_titles(project bigint, links jsonb, access_all boolean, access_groups text[])
RETURNS TABLE (titles text[])
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(coalesce((SELECT d.title FROM documents d
                                        WHERE d.project_id = project AND d.slug = l.link ->> 'to'
                                          AND canon_document_visible(d, access_all, access_groups)), '')
                              ORDER BY l.n), '{}')
    FROM jsonb_array_elements(links) WITH ORDINALITY AS l (link, n)
$$;
-- +goose StatementEnd

-- Markdown documents stored before have no links recorded: a changed hash makes
-- the next ingest store them again. Only those that declare a link can hold a
-- wikilink to another document (it is declared, or the frontmatter declares one
-- to its target).
UPDATE documents d SET content_hash = d.content_hash || '+links'
WHERE d.source_path ~* '\.(md|markdown)$'
  AND EXISTS (SELECT FROM doc_links l WHERE l.project_id = d.project_id AND l.declared_by = d.id);

-- +goose Down
UPDATE documents SET content_hash = left(content_hash, -length('+links')) WHERE content_hash LIKE '%+links';
DROP FUNCTION canon_link_titles(bigint, jsonb, boolean, text[]);
ALTER TABLE documents DROP COLUMN summary_links;
ALTER TABLE chunks DROP COLUMN links;
