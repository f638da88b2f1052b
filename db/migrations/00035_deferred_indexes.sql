-- A bulk load (ingest/bulk.go) builds the chunks' HNSW index once, after its rows
-- are in, instead of inserting every vector into it: at 100,000 chunks an HNSW
-- insert cost about three times its share of a build. The index is dropped in the
-- transaction that records its definition here (as pg_get_indexdef gives it, so
-- the rebuild is the migration's own statement), and built again in the
-- transaction that deletes the row. A load that dies in between leaves the row:
-- the next ingest, or `canon migrate up`, builds the index from it, unless a live
-- bulk load still holds the lock ('canon.bulk') that says it will.

-- +goose Up
CREATE TABLE deferred_indexes (
    name        text PRIMARY KEY,
    definition  text NOT NULL CHECK (definition LIKE 'CREATE %INDEX %'),
    deferred_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    d record;
BEGIN
    -- Rolling back must not lose an index a dead load left deferred.
    FOR d IN SELECT definition FROM deferred_indexes WHERE to_regclass(name) IS NULL ORDER BY name LOOP
        EXECUTE d.definition;
    END LOOP;
END $$;
-- +goose StatementEnd
DROP TABLE deferred_indexes;
