-- The document ACL on its own: who may see a document, for the statements that
-- show documents without ranking them (graph show, document reads, entity pass 1,
-- lifecycle). canon_document_matches now calls it, so the rule is written once;
-- both are SQL functions the planner inlines (see 00013), nested ones included.
--
-- Content gaps get an audience: a refused question is listed only to callers who
-- see at least what every asker of it saw, so a question asked under a wider ACL
-- does not reach readers of a narrower one.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION canon_document_visible(d documents, access_all boolean, access_groups text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT access_all OR cardinality(d.access) = 0 OR d.access && access_groups
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION canon_document_matches(
    d documents,
    tags text[],
    source_types text[],
    canonical_types text[],
    statuses text[],
    evidence_tiers text[],
    date_from date,
    date_to date,
    include_superseded boolean,
    doc_ids_filter boolean,
    doc_ids text[],
    access_all boolean,
    access_groups text[]
) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (cardinality(tags) = 0 OR d.tags && tags)
       AND (cardinality(source_types) = 0 OR d.source_type = ANY (source_types))
       AND (cardinality(canonical_types) = 0 OR d.canonical_type = ANY (canonical_types))
       AND (cardinality(statuses) = 0 OR d.status = ANY (statuses))
       AND (cardinality(evidence_tiers) = 0 OR d.evidence_tier = ANY (evidence_tiers))
       AND (date_from IS NULL OR d.effective_date >= date_from)
       AND (date_to IS NULL OR d.effective_date <= date_to)
       AND (include_superseded OR d.status IS DISTINCT FROM 'superseded')
       AND (NOT doc_ids_filter OR d.slug = ANY (doc_ids))
       AND canon_document_visible(d, access_all, access_groups)
$$;
-- +goose StatementEnd

-- The groups a caller must hold to see the gap (the intersection of its askers'
-- groups); NULL: only a caller who sees every document (an operator asked it).
ALTER TABLE content_gaps ADD COLUMN audience text[];

-- +goose Down
ALTER TABLE content_gaps DROP COLUMN audience;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION canon_document_matches(
    d documents,
    tags text[],
    source_types text[],
    canonical_types text[],
    statuses text[],
    evidence_tiers text[],
    date_from date,
    date_to date,
    include_superseded boolean,
    doc_ids_filter boolean,
    doc_ids text[],
    access_all boolean,
    access_groups text[]
) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (cardinality(tags) = 0 OR d.tags && tags)
       AND (cardinality(source_types) = 0 OR d.source_type = ANY (source_types))
       AND (cardinality(canonical_types) = 0 OR d.canonical_type = ANY (canonical_types))
       AND (cardinality(statuses) = 0 OR d.status = ANY (statuses))
       AND (cardinality(evidence_tiers) = 0 OR d.evidence_tier = ANY (evidence_tiers))
       AND (date_from IS NULL OR d.effective_date >= date_from)
       AND (date_to IS NULL OR d.effective_date <= date_to)
       AND (include_superseded OR d.status IS DISTINCT FROM 'superseded')
       AND (NOT doc_ids_filter OR d.slug = ANY (doc_ids))
       AND (access_all OR cardinality(d.access) = 0 OR d.access && access_groups)
$$;
-- +goose StatementEnd

DROP FUNCTION canon_document_visible;
