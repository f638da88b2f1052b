-- chunks_embedding_set_type (00040) converts the partitioned layout (00061)
-- too: the indexes over the embedding are the partitions' own, and new
-- partitions are indexed from partition_indexes, whose definitions follow the
-- type like deferred_indexes'.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION chunks_embedding_set_type(target text) RETURNS boolean LANGUAGE plpgsql AS $$
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
    -- The table's indexes and, partitioned (00061), its partitions' own.
    FOR ix IN
        SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def
        FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
        WHERE a.attname = 'embedding'
          AND (i.indrelid = 'chunks'::regclass
               OR i.indrelid IN (SELECT h.inhrelid FROM pg_inherits h WHERE h.inhparent = 'chunks'::regclass))
        ORDER BY 1
    LOOP
        definitions := definitions || regexp_replace(ix.def, opclass, target || '_\1', 'g');
        EXECUTE 'DROP INDEX ' || ix.name;
    END LOOP;
    UPDATE deferred_indexes d SET definition = regexp_replace(d.definition, opclass, target || '_\1', 'g')
    WHERE d.definition ~ ' ON (\w+\.)?chunks(_p\d+)? ';
    -- The recorded definitions new partitions are indexed from.
    UPDATE partition_indexes p SET definition = regexp_replace(p.definition, opclass, target || '_\1', 'g')
    WHERE p.table_name = 'chunks';
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

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION chunks_embedding_set_type(target text) RETURNS boolean LANGUAGE plpgsql AS $$
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
