-- A deleted project's partitions go with it (KB_TABLE_LAYOUT=partitioned,
-- migration 00061): the cascade from projects has emptied them by the time this
-- row trigger fires, and an empty chunks_p<id> would otherwise stay attached,
-- planned and pruned for ever. DROP TABLE on a partition takes
-- AccessExclusiveLock on its parent, so the delete waits for running searches
-- and loads of other projects, and searches wait on it: a moment, the
-- partitions being empty. Nothing happens in the single layout.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION canon_partitions_drop(project_id bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    tbl text;
BEGIN
    IF canon_table_layout() <> 'partitioned' THEN
        RETURN;
    END IF;
    -- The order of canon_partitions_create, so a create and a drop lock the parents alike.
    FOREACH tbl IN ARRAY ARRAY['chunks', 'postings', 'lexeme_stats'] LOOP
        EXECUTE format('DROP TABLE IF EXISTS %I', canon_partition_name(tbl, project_id));
    END LOOP;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION projects_partitions_drop() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM canon_partitions_drop(OLD.id);
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER projects_partitions_drop AFTER DELETE ON projects
    FOR EACH ROW EXECUTE FUNCTION projects_partitions_drop();

-- +goose Down
DROP TRIGGER projects_partitions_drop ON projects;
DROP FUNCTION projects_partitions_drop, canon_partitions_drop;
