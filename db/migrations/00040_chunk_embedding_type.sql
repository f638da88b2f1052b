-- Chunk embeddings may be stored as halfvec (2 bytes a dimension) instead of
-- vector (4 bytes): KB_VECTOR_TYPE at migration time, vector by default. The
-- column's type is the record of the choice; no setting repeats it.
--
-- Queries need no copy per type: they pass the query embedding as
-- sqlc.arg(x)::vector, and pgvector's implicit vector -> halfvec cast resolves
-- `halfvec <=> vector` to the halfvec operator, whose operator class the HNSW
-- indexes are then built with, so the index serves the same statement.
--
-- chunks_embedding_set_type converts an existing database either way (`canon
-- migrate up` calls it when KB_VECTOR_TYPE names the other type): every index
-- over the column is dropped, the column rewritten, and each index built again
-- from its own definition with the new type's operator class; an index a dead
-- bulk load left deferred gets its recorded definition rewritten the same way.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION chunks_embedding_set_type(target text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    current_type text;
    dim          integer;
    ix           record;
    definitions  text[] := '{}';
    definition   text;
    -- An operator class of the current type (vector_cosine_ops), as a whole word.
    opclass      text;
BEGIN
    IF target IS NULL OR target NOT IN ('vector', 'halfvec') THEN
        RAISE EXCEPTION 'KB_VECTOR_TYPE must be vector or halfvec (got "%")', target;
    END IF;
    SELECT t.typname, a.atttypmod INTO current_type, dim
    FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
    WHERE a.attrelid = 'chunks'::regclass AND a.attname = 'embedding';
    IF current_type = target THEN
        RETURN false;
    END IF;
    opclass := '\m' || current_type || '_(\w+_ops)\M';
    -- The old operator classes do not take the new type: drop, rebuild after.
    FOR ix IN
        SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def
        FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
        WHERE i.indrelid = 'chunks'::regclass AND a.attname = 'embedding'
        ORDER BY 1
    LOOP
        definitions := definitions || regexp_replace(ix.def, opclass, target || '_\1', 'g');
        EXECUTE 'DROP INDEX ' || ix.name;
    END LOOP;
    UPDATE deferred_indexes d SET definition = regexp_replace(d.definition, opclass, target || '_\1', 'g')
    WHERE d.definition ~ ' ON (\w+\.)?chunks ';
    EXECUTE format('ALTER TABLE chunks ALTER COLUMN embedding TYPE %s(%s) USING embedding::%s(%s)', target, dim, target, dim);
    -- A new type resets the storage to the type's default; keep vectors in the heap page (00001).
    ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE PLAIN;
    FOREACH definition IN ARRAY definitions LOOP
        EXECUTE definition;
    END LOOP;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose ENVSUB ON
SELECT chunks_embedding_set_type('${KB_VECTOR_TYPE:-vector}');
-- +goose ENVSUB OFF

-- +goose Down
SELECT chunks_embedding_set_type('vector');
DROP FUNCTION chunks_embedding_set_type(text);
