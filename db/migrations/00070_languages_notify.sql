-- A search process keeps the languages of the projects it searches in memory and
-- passes their configurations to the ranking statement, which then reads no
-- language table (issue #24: an English-only search costs what it did before
-- languages). These triggers tell every listening process when that list changes:
-- a project gains its first chunk in a language or loses its last, or its own
-- language changes. The payload is the project's id; a transaction sends one
-- notification per project however many rows it changes (PostgreSQL folds
-- duplicates), at commit.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION canon_notify_languages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'projects' THEN
        PERFORM pg_notify('canon_languages', coalesce(NEW.id, OLD.id)::text);
    ELSE
        PERFORM pg_notify('canon_languages', coalesce(NEW.project_id, OLD.project_id)::text);
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- A new row is a language the project's questions were not analysed in; a deleted
-- one a language they no longer need. Count updates only reorder, and wait for the
-- cache's time to live.
CREATE TRIGGER project_languages_notify AFTER INSERT OR DELETE ON project_languages
    FOR EACH ROW EXECUTE FUNCTION canon_notify_languages();

CREATE TRIGGER projects_language_notify AFTER UPDATE OF language ON projects
    FOR EACH ROW WHEN (OLD.language IS DISTINCT FROM NEW.language)
    EXECUTE FUNCTION canon_notify_languages();

-- +goose Down
DROP TRIGGER projects_language_notify ON projects;
DROP TRIGGER project_languages_notify ON project_languages;
DROP FUNCTION canon_notify_languages();
