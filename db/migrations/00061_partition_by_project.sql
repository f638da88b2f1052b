-- Partitioning by project (issue 22, docs/scale-out.md): chunks, postings and
-- lexeme_stats may be LIST-partitioned by project_id, one partition per project
-- (chunks_p<id>, postings_p<id>, lexeme_stats_p<id>). KB_TABLE_LAYOUT at
-- migration time chooses: single (one table each, the default) or partitioned.
-- The tables' kind (pg_class.relkind 'p') is the record of the choice; no
-- setting repeats it. canon_set_table_layout converts a database either way
-- (`canon migrate up` calls it when KB_TABLE_LAYOUT names the other layout).
--
-- In the partitioned layout the parent tables carry only their keys (the
-- primary and unique constraints, partitioned indexes over every partition),
-- their foreign keys and their triggers. Every other index (HNSW, GIN,
-- postings' btrees) is its partition's own, made from the definition recorded
-- in partition_indexes: a bulk load of one project drops and builds only its
-- partition's indexes (ingest/bulk.go), and the other projects' searches keep
-- theirs. (An index attached to a partitioned index cannot be dropped alone.)
--
-- A project's partitions are made when the project is (trigger on projects),
-- by CREATE TABLE and ATTACH PARTITION: ATTACH takes ShareUpdateExclusiveLock on
-- the parent, CREATE TABLE ... PARTITION OF would take AccessExclusiveLock and
-- queue every search behind a running bulk load. There is no default partition:
-- a row of a project without partitions is refused, never misplaced.

-- lexeme_stats loses its foreign key to projects, in both layouts. Attaching a
-- partition clones the parent's foreign keys, and cloning one that references
-- projects takes ShareRowExclusiveLock on projects from inside the INSERT that
-- makes the project: two ingests making the same project deadlocked (the second
-- holds RowExclusiveLock on projects while it waits for the first's row). The key
-- only cascaded a project's deletion, which the triggers already carry: deleting
-- a project deletes its documents, their chunks, their postings, and
-- postings_stats_delete its lexeme_stats rows.

-- +goose Up
ALTER TABLE lexeme_stats DROP CONSTRAINT lexeme_stats_project_id_fkey;

-- The per-partition indexes of a partitioned table, as they would be on the
-- table itself (pg_get_indexdef); empty in the single layout.
CREATE TABLE partition_indexes (
    table_name text NOT NULL,
    name       text PRIMARY KEY,
    definition text NOT NULL CHECK (definition LIKE 'CREATE %INDEX %')
);

-- +goose StatementBegin
CREATE FUNCTION canon_table_layout() RETURNS text LANGUAGE sql STABLE AS $$
    SELECT CASE c.relkind WHEN 'p' THEN 'partitioned' ELSE 'single' END
    FROM pg_class c WHERE c.oid = 'chunks'::regclass
$$;
-- +goose StatementEnd

-- canon_partition_name: the partition of table tbl that holds project project_id.
-- +goose StatementBegin
CREATE FUNCTION canon_partition_name(tbl text, project_id bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT tbl || '_p' || project_id
$$;
-- +goose StatementEnd

-- canon_partition_index_name: index name of table tbl as it is on one project's
-- partition: chunks_embedding_hnsw becomes chunks_p<id>_embedding_hnsw.
-- +goose StatementBegin
CREATE FUNCTION canon_partition_index_name(tbl text, name text, project_id bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT canon_partition_name(tbl, project_id) || '_' || regexp_replace(name, '^' || tbl || '_', '')
$$;
-- +goose StatementEnd

-- canon_partition_index_create builds the recorded indexes of tbl on one
-- project's partition.
-- +goose StatementBegin
CREATE FUNCTION canon_partition_index_create(tbl text, project_id bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    ix record;
BEGIN
    FOR ix IN SELECT name, definition FROM partition_indexes WHERE table_name = tbl ORDER BY name LOOP
        EXECUTE regexp_replace(ix.definition, '^(CREATE (UNIQUE )?INDEX )\S+ ON (ONLY )?\S+ ',
            '\1' || quote_ident(canon_partition_index_name(tbl, ix.name, project_id)) || ' ON '
            || quote_ident(canon_partition_name(tbl, project_id)) || ' ');
    END LOOP;
END $$;
-- +goose StatementEnd

-- canon_partition_attach makes the partition of tbl for one project, without
-- its recorded indexes, and attaches it to parent (tbl, or the table a
-- conversion is building).
-- +goose StatementBegin
CREATE FUNCTION canon_partition_attach(tbl text, parent text, project_id bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    part text := canon_partition_name(tbl, project_id);
BEGIN
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING STORAGE)', part, parent);
    IF tbl = 'chunks' THEN
        -- Rows stay whole in their page (00011_chunks_inline.sql).
        EXECUTE format('ALTER TABLE %I SET (toast_tuple_target = 8160)', part);
    END IF;
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES IN (%s)', parent, part, project_id);
END $$;
-- +goose StatementEnd

-- canon_partitions_create makes a new project's partitions, indexes included,
-- in the partitioned layout; nothing in the single one.
-- +goose StatementBegin
CREATE FUNCTION canon_partitions_create(project_id bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    tbl text;
BEGIN
    IF canon_table_layout() <> 'partitioned' THEN
        RETURN;
    END IF;
    -- Always in this order, so two new projects lock the parents alike.
    FOREACH tbl IN ARRAY ARRAY['chunks', 'postings', 'lexeme_stats'] LOOP
        IF to_regclass(canon_partition_name(tbl, project_id)) IS NULL THEN
            PERFORM canon_partition_attach(tbl, tbl, project_id);
            PERFORM canon_partition_index_create(tbl, project_id);
        END IF;
    END LOOP;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION projects_partitions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM canon_partitions_create(NEW.id);
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER projects_partitions AFTER INSERT ON projects
    FOR EACH ROW EXECUTE FUNCTION projects_partitions();

-- canon_relayout rebuilds table tbl in the target layout with the same rows,
-- columns, identity position, keys, foreign keys, indexes and triggers: a new
-- table is filled before the triggers exist (the derived rows are copied, not
-- derived again), the old one dropped, the new one renamed.
-- +goose StatementBegin
CREATE FUNCTION canon_relayout(tbl text, target text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    old         regclass := tbl::regclass;
    building    text := tbl || '_relayout';
    constraints text[];
    indexes     text[];
    names       text[];
    triggers    text[];
    columns     text;
    seq         text;
    last        bigint;
    pid         bigint;
    i           integer;
    def         text;
BEGIN
    IF EXISTS (SELECT FROM pg_constraint c WHERE c.confrelid = old AND c.conrelid <> old) THEN
        RAISE EXCEPTION 'cannot convert %: another table has a foreign key to it', tbl;
    END IF;
    -- A view or function over the table or its row type would go with it: say which.
    SELECT string_agg(DISTINCT pg_describe_object(d.classid, d.objid, 0), ', ') INTO def
    FROM pg_depend d
    WHERE d.refobjid IN (old, (SELECT c.reltype FROM pg_class c WHERE c.oid = old))
      AND d.classid IN ('pg_proc'::regclass, 'pg_rewrite'::regclass) AND d.deptype = 'n';
    IF def IS NOT NULL THEN
        RAISE EXCEPTION 'cannot convert %: % depends on it (drop it, convert, create it again)', tbl, def;
    END IF;
    SELECT array_agg(format('ALTER TABLE %I ADD CONSTRAINT %I %s', tbl, c.conname, pg_get_constraintdef(c.oid))
                     ORDER BY c.contype <> 'p', c.conname)
    INTO constraints
    FROM pg_constraint c WHERE c.conrelid = old AND c.contype IN ('p', 'u', 'f', 'c', 'x');
    SELECT array_agg(pg_get_triggerdef(t.oid) ORDER BY t.tgname) INTO triggers
    FROM pg_trigger t WHERE t.tgrelid = old AND NOT t.tgisinternal;
    -- The indexes that back no key: the table's own, or the recorded ones.
    IF canon_table_layout() = 'partitioned' THEN
        SELECT array_agg(p.definition ORDER BY p.name), array_agg(p.name ORDER BY p.name) INTO indexes, names
        FROM partition_indexes p WHERE p.table_name = tbl;
    ELSE
        SELECT array_agg(pg_get_indexdef(x.indexrelid) ORDER BY x.indexrelid::regclass::text),
               array_agg(x.indexrelid::regclass::text ORDER BY x.indexrelid::regclass::text)
        INTO indexes, names
        FROM pg_index x
        WHERE x.indrelid = old AND NOT EXISTS (SELECT FROM pg_constraint c WHERE c.conindid = x.indexrelid);
    END IF;
    SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO columns
    FROM pg_attribute a WHERE a.attrelid = old AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '';
    IF EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = old AND a.attname = 'id' AND a.attidentity <> '') THEN
        seq := pg_get_serial_sequence(tbl, 'id');
    END IF;
    IF seq IS NOT NULL THEN
        EXECUTE format('SELECT CASE WHEN is_called THEN last_value END FROM %s', seq) INTO last;
    END IF;

    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING IDENTITY INCLUDING STORAGE)%s',
                   building, tbl, CASE WHEN target = 'partitioned' THEN ' PARTITION BY LIST (project_id)' ELSE '' END);
    IF target = 'partitioned' THEN
        FOR pid IN SELECT id FROM projects ORDER BY id LOOP
            PERFORM canon_partition_attach(tbl, building, pid);
        END LOOP;
    ELSIF tbl = 'chunks' THEN
        EXECUTE format('ALTER TABLE %I SET (toast_tuple_target = 8160)', building);
    END IF;
    EXECUTE format('INSERT INTO %I (%s) OVERRIDING SYSTEM VALUE SELECT %s FROM %I', building, columns, columns, tbl);
    EXECUTE format('DROP TABLE %I', tbl);
    EXECUTE format('ALTER TABLE %I RENAME TO %I', building, tbl);
    IF seq IS NOT NULL THEN
        EXECUTE format('ALTER SEQUENCE %s RENAME TO %I', pg_get_serial_sequence(tbl, 'id'), tbl || '_id_seq');
        IF last IS NOT NULL THEN
            PERFORM setval(pg_get_serial_sequence(tbl, 'id'), last);
        END IF;
    END IF;
    FOREACH def IN ARRAY coalesce(constraints, '{}') LOOP
        EXECUTE def;
    END LOOP;
    DELETE FROM partition_indexes WHERE table_name = tbl;
    IF target = 'partitioned' THEN
        FOR i IN 1 .. coalesce(cardinality(indexes), 0) LOOP
            INSERT INTO partition_indexes (table_name, name, definition) VALUES (tbl, names[i], indexes[i]);
        END LOOP;
        FOR pid IN SELECT id FROM projects ORDER BY id LOOP
            PERFORM canon_partition_index_create(tbl, pid);
        END LOOP;
    ELSE
        FOREACH def IN ARRAY coalesce(indexes, '{}') LOOP
            EXECUTE def;
        END LOOP;
    END IF;
    FOREACH def IN ARRAY coalesce(triggers, '{}') LOOP
        EXECUTE def;
    END LOOP;
END $$;
-- +goose StatementEnd

-- canon_set_table_layout converts chunks, postings and lexeme_stats to target
-- (single or partitioned); false when they are so already. An index a dead bulk
-- load left deferred is built first (`canon migrate up` does), so it is refused.
-- +goose StatementBegin
CREATE FUNCTION canon_set_table_layout(target text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    tbl text;
BEGIN
    IF target IS NULL OR target NOT IN ('single', 'partitioned') THEN
        RAISE EXCEPTION 'KB_TABLE_LAYOUT must be single or partitioned (got "%")', target;
    END IF;
    IF canon_table_layout() = target THEN
        RETURN false;
    END IF;
    IF EXISTS (SELECT FROM deferred_indexes) THEN
        RAISE EXCEPTION 'an interrupted bulk load left indexes unbuilt (%): run canon migrate up without KB_TABLE_LAYOUT first',
            (SELECT string_agg(name, ', ' ORDER BY name) FROM deferred_indexes);
    END IF;
    -- The layout is read from chunks: convert it last.
    FOREACH tbl IN ARRAY ARRAY['lexeme_stats', 'postings', 'chunks'] LOOP
        PERFORM canon_relayout(tbl, target);
    END LOOP;
    RETURN true;
END $$;
-- +goose StatementEnd

-- +goose ENVSUB ON
SELECT canon_set_table_layout('${KB_TABLE_LAYOUT:-single}');
-- +goose ENVSUB OFF

-- +goose Down
SELECT canon_set_table_layout('single');
DROP TRIGGER projects_partitions ON projects;
DROP FUNCTION projects_partitions, canon_set_table_layout, canon_relayout, canon_partitions_create,
    canon_partition_attach, canon_partition_index_create, canon_partition_index_name, canon_partition_name,
    canon_table_layout;
DROP TABLE partition_indexes;
DELETE FROM lexeme_stats s WHERE NOT EXISTS (SELECT FROM projects p WHERE p.id = s.project_id);
ALTER TABLE lexeme_stats ADD CONSTRAINT lexeme_stats_project_id_fkey
    FOREIGN KEY (project_id) REFERENCES projects (id) ON DELETE CASCADE;
