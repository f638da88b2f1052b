-- Whether a document passes a request's filters, written once: SearchRank's
-- vector leg (two branches), filtered_chunks and mention_leg, and GraphSearch's
-- visible step all call it. A single-SELECT SQL function that is neither STRICT
-- nor SECURITY DEFINER and has no SET clause is inlined by the planner, so the
-- statements plan exactly as if the predicate were spelled out in each (the
-- plan tests in search/ and hierarchy/ hold the same indexes). An empty list or
-- a NULL date means "no restriction". Callers pass the filters by name, so a new
-- filter (access control: the caller's groups) is one more named parameter:
-- DROP and CREATE the function in its migration, with a DEFAULT if some caller
-- may omit it.

-- +goose Up
-- +goose StatementBegin
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

-- +goose Down
DROP FUNCTION canon_document_matches;
