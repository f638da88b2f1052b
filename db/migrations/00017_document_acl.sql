-- The document ACL joins the one document filter: a document with an access
-- list (frontmatter access:) passes only for a caller holding one of its groups,
-- or one that sees everything (access_all: the operator, i.e. the CLI or a
-- server with KB_AUTH=off). No DEFAULT: a caller that forgets the ACL does not
-- compile against the function, so no leg can skip it. Still inlined (see 00013).

-- +goose Up
-- +goose StatementBegin
DROP FUNCTION canon_document_matches;
CREATE FUNCTION canon_document_matches(
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

-- +goose Down
-- +goose StatementBegin
DROP FUNCTION canon_document_matches;
CREATE FUNCTION canon_document_matches(
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
    doc_ids text[]
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
$$;
-- +goose StatementEnd
