-- lexeme_stats is stored with fillfactor 30. Every batch an ingest stores
-- adds its lexemes' document frequencies (postings_stats_insert), so a loaded
-- corpus's common lexemes are updated once per batch: 2.5 million updates over
-- the 425 batches of a 100,000-chunk load. With full pages almost none were HOT;
-- each new row version went to another page and into the primary key, and the
-- table and its index grew to 154 MB for 80,000 rows, slowing every batch that
-- followed. With room on the page, three in four updates stay HOT and are pruned
-- in place. (bench/results/ingest.md has the load before and after.)
--
-- canon_table_storage is where a table's storage parameters are written once:
-- the partitions a project gets (canon_partition_attach) and the tables a
-- layout conversion builds (canon_relayout) take theirs from it.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION canon_table_storage(tbl text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE tbl
        -- Rows stay whole in their page (00011_chunks_inline.sql).
        WHEN 'chunks' THEN 'toast_tuple_target = 8160'
        WHEN 'lexeme_stats' THEN 'fillfactor = 30'
    END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION canon_partition_attach(tbl text, parent text, project_id bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    part text := canon_partition_name(tbl, project_id);
BEGIN
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING STORAGE)', part, parent);
    IF canon_table_storage(tbl) IS NOT NULL THEN
        EXECUTE format('ALTER TABLE %I SET (%s)', part, canon_table_storage(tbl));
    END IF;
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES IN (%s)', parent, part, project_id);
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION canon_relayout(tbl text, target text) RETURNS void LANGUAGE plpgsql AS $$
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
    ELSIF canon_table_storage(tbl) IS NOT NULL THEN
        EXECUTE format('ALTER TABLE %I SET (%s)', building, canon_table_storage(tbl));
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

-- The table, or in the partitioned layout each project's partition of it;
-- pages written from now on keep the room (a load rewrites them soon enough).
-- +goose StatementBegin
DO $$
DECLARE
    rel regclass;
BEGIN
    FOR rel IN
        SELECT c.oid::regclass FROM pg_class c
        WHERE c.relkind = 'r' AND (c.oid = to_regclass('lexeme_stats')
            OR c.oid IN (SELECT i.inhrelid FROM pg_inherits i WHERE i.inhparent = to_regclass('lexeme_stats')))
    LOOP
        EXECUTE format('ALTER TABLE %s SET (%s)', rel, canon_table_storage('lexeme_stats'));
    END LOOP;
END $$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    rel regclass;
BEGIN
    FOR rel IN
        SELECT c.oid::regclass FROM pg_class c
        WHERE c.relkind = 'r' AND (c.oid = to_regclass('lexeme_stats')
            OR c.oid IN (SELECT i.inhrelid FROM pg_inherits i WHERE i.inhparent = to_regclass('lexeme_stats')))
    LOOP
        EXECUTE format('ALTER TABLE %s RESET (fillfactor)', rel);
    END LOOP;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION canon_relayout(tbl text, target text) RETURNS void LANGUAGE plpgsql AS $$
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION canon_partition_attach(tbl text, parent text, project_id bigint) RETURNS void
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

DROP FUNCTION canon_table_storage(text);
