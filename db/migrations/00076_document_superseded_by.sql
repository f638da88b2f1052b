-- A document that a document in force supersedes is superseded, whatever its own
-- file says. A handbook that adds `supersedes: [adr-001]` to ADR-004 and forgets
-- to change ADR-001's `status: accepted` had ADR-001 ranked, filtered and
-- answered as current, while the graph held the edge that says otherwise (trial
-- s26, finding 1).
--
-- documents.status becomes the effective status, and every reader (the ranking's
-- status signal and penalty, the statuses and include_superseded filters, the
-- hits, answers, MCP and API) reads it unchanged:
--   declared_status  what the document's file (or the last lifecycle operation)
--                    says: what ingest and lifecycle write
--   superseded_by    the slugs of the documents in force that supersede it (a
--                    supersedes edge, any provenance), kept by SupersessionRefresh
--                    in every transaction that changes edges or statuses
--   status           declared_status, except superseded when the document says
--                    accepted or active and superseded_by is not empty
-- Ranking reads one column of the row it already probes: no edge lookup per
-- candidate.

-- +goose Up
ALTER TABLE documents RENAME COLUMN status TO declared_status;
ALTER TABLE documents ADD COLUMN superseded_by text[] NOT NULL DEFAULT '{}';
ALTER TABLE documents ADD COLUMN status text GENERATED ALWAYS AS (
    CASE WHEN declared_status IN ('accepted', 'active') AND cardinality(superseded_by) > 0 THEN 'superseded'
         ELSE declared_status
    END) STORED;

-- The refresh reads the documents it recorded as superseded, a few of a project.
CREATE INDEX documents_superseded ON documents (project_id) WHERE cardinality(superseded_by) > 0;
-- ...and every supersedes edge of the project, a few of its edges.
CREATE INDEX kb_edges_supersedes ON kb_edges (project_id) INCLUDE (from_node_id, to_node_id)
    WHERE edge_type = 'supersedes';

-- What SupersessionRefresh records, for the edges stored so far.
UPDATE documents d SET superseded_by = s.slugs
FROM (
    SELECT td.project_id, td.id, array_agg(DISTINCT fd.slug ORDER BY fd.slug) AS slugs
    FROM kb_edges e
    JOIN kb_nodes fn ON fn.project_id = e.project_id AND fn.id = e.from_node_id
    JOIN documents fd ON fd.project_id = fn.project_id AND fd.id = fn.document_id
    JOIN kb_nodes tn ON tn.project_id = e.project_id AND tn.id = e.to_node_id
    JOIN documents td ON td.project_id = tn.project_id AND td.id = tn.document_id
    WHERE e.edge_type = 'supersedes'
      AND fd.declared_status IN ('accepted', 'active', 'superseded')
      AND fd.canonical_type IS DISTINCT FROM 'rejected-approach'
    GROUP BY td.project_id, td.id
) AS s
WHERE d.project_id = s.project_id AND d.id = s.id;

-- +goose Down
DROP INDEX kb_edges_supersedes;
DROP INDEX documents_superseded;
ALTER TABLE documents DROP COLUMN status;
ALTER TABLE documents DROP COLUMN superseded_by;
ALTER TABLE documents RENAME COLUMN declared_status TO status;
