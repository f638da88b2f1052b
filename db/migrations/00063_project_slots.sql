-- Partition pruning for the ranking statement's generic plan (issue 22,
-- KB_TABLE_LAYOUT=partitioned). PostgreSQL prunes partitions at executor start
-- for `project_id = ANY (x)` only when x is a constant or an ARRAY[...]
-- expression; `= ANY ($1)` with a parameter array scans every partition (each
-- project's HNSW index read and its rows filtered away). canon_project_slots
-- spells a parameter array as ARRAY[ids[1], ..., ids[16]]: an SQL function the
-- planner inlines, so the statement's condition
-- `project_id = ANY (canon_project_slots($1))` is that ARRAY[...] expression and
-- prunes to the searched projects' partitions. Slots past the array's end are
-- NULL and match nothing. A search names at most domain.MaxProjectKeys (16)
-- projects, the number of slots; the statement keeps `= ANY ($1)` beside it, so
-- a longer array could never widen a search, only shorten it.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION canon_project_slots(ids bigint[]) RETURNS bigint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY[
           ids[1], ids[2], ids[3], ids[4], ids[5], ids[6], ids[7], ids[8],
           ids[9], ids[10], ids[11], ids[12], ids[13], ids[14], ids[15], ids[16]
    ]
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION canon_project_slots;
