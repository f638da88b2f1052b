-- Lifecycle operations (canon canon promote / supersede / deprecate / archive /
-- reject, and the CanonService RPCs) change a document's canonical fields and
-- edges after ingest. Each change leaves one audit row, written in the same
-- transaction as the change it records.
--
-- The audit row outlives the document (no foreign key to documents): a pruned or
-- re-created document keeps its history, found by slug. It goes with its project.
-- An operation that changes nothing (a re-run) writes no row.

-- +goose Up
CREATE TABLE lifecycle_audit (
    project_id  bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id bigint NOT NULL,
    slug        text NOT NULL,
    actor       text NOT NULL CHECK (actor <> ''),
    -- Compared with documents.updated_at (set by each ingest that rewrites the
    -- document) to tell whether a re-ingest overrides a lifecycle change.
    at          timestamptz NOT NULL DEFAULT now(),
    operation   text NOT NULL CHECK (operation IN ('promote', 'supersede', 'deprecate', 'archive', 'reject')),
    -- The document's canonical fields before and after, and the edges the
    -- operation added (after.edges_added).
    before      jsonb NOT NULL,
    after       jsonb NOT NULL
);

CREATE INDEX lifecycle_audit_document ON lifecycle_audit (project_id, document_id, at DESC);

-- +goose Down
DROP TABLE lifecycle_audit;
