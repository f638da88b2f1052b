-- Languages beyond English (issue #24). Each document, and each of its chunks,
-- records a language (ISO 639-1: frontmatter `lang:`, else the project's
-- language, else detection at ingest, else `en`); text_languages maps a language
-- to the PostgreSQL text-search configuration that analyses it, and a language
-- it does not list goes through `simple` (no stemming, no stop words). That table
-- is the one definition of the map: the chunks' triggers, the documents' summary
-- and tag lexemes and the ranking statement all read it.
--
-- Existing rows were all analysed with `english`: they become `en` and keep every
-- lexeme they have, so nothing is re-derived here.

-- +goose Up
CREATE TABLE text_languages (
    language text PRIMARY KEY CHECK (language ~ '^[a-z]{2}$'),
    config   regconfig NOT NULL
);

-- The snowball configurations PostgreSQL ships, by ISO 639-1 code; a server
-- built without one of them simply lacks its row.
INSERT INTO text_languages (language, config)
SELECT v.language, v.name::regconfig
FROM (VALUES ('ar', 'arabic'), ('hy', 'armenian'), ('eu', 'basque'), ('ca', 'catalan'), ('da', 'danish'),
             ('nl', 'dutch'), ('en', 'english'), ('fi', 'finnish'), ('fr', 'french'), ('de', 'german'),
             ('el', 'greek'), ('hi', 'hindi'), ('hu', 'hungarian'), ('id', 'indonesian'), ('ga', 'irish'),
             ('it', 'italian'), ('lt', 'lithuanian'), ('ne', 'nepali'), ('no', 'norwegian'), ('pt', 'portuguese'),
             ('ro', 'romanian'), ('ru', 'russian'), ('sr', 'serbian'), ('es', 'spanish'), ('sv', 'swedish'),
             ('ta', 'tamil'), ('tr', 'turkish'), ('yi', 'yiddish')) AS v (language, name)
JOIN pg_ts_config c ON c.cfgname = v.name AND c.cfgnamespace = 'pg_catalog'::regnamespace;

-- canon_text_config is the configuration of a language: its row, else `simple`.
-- +goose StatementBegin
CREATE FUNCTION canon_text_config(language text) RETURNS regconfig
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce((SELECT t.config FROM text_languages t WHERE t.language = canon_text_config.language),
                    'simple'::regconfig)
$$;
-- +goose StatementEnd

-- canon_tsvector with a configuration: the same identifier rule as the english
-- one (migration 00008), so E5032 and KB_RRF_K stay whole lexemes in every language.
-- +goose StatementBegin
CREATE FUNCTION canon_tsvector(config regconfig, body text) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN to_tsvector(config, body) || coalesce((
        SELECT string_agg(format('%s:%s', quote_literal(lower(m[1])), n), ' ')::tsvector
        FROM regexp_matches(body, '([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)', 'g') WITH ORDINALITY AS x (m, n)
    ), ''::tsvector);
END
$$;
-- +goose StatementEnd

-- canon_query_terms over several configurations: the union of the question's
-- lexemes under each, a lexeme counted as often as the configuration that sees it
-- most often, with the configurations that produced it (their positions in
-- `configs`, from 1) so a chunk's coverage can count its own language's terms.
-- +goose StatementBegin
CREATE FUNCTION canon_query_terms(configs regconfig[], question text)
RETURNS TABLE (lexeme text, qtf float8, config_positions integer[])
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT u.lexeme, max(cardinality(u.positions))::float8, array_agg(c.ord ORDER BY c.ord)
    FROM unnest(configs) WITH ORDINALITY AS c (config, ord)
    CROSS JOIN LATERAL unnest(canon_tsvector(c.config, question)) AS u
    GROUP BY u.lexeme
$$;
-- +goose StatementEnd

-- The project's language (`canon ingest --language`): documents without a
-- frontmatter `lang:` take it; NULL leaves them to detection.
ALTER TABLE projects ADD COLUMN language text CHECK (language ~ '^[a-z]{2}$');
ALTER TABLE documents ADD COLUMN language text NOT NULL DEFAULT 'en' CHECK (language ~ '^[a-z]{2}$');
-- A chunk's language is its document's, copied by chunks_derive (which analyses
-- the chunk with it), so the ranking statement reads it without the document.
ALTER TABLE chunks ADD COLUMN language text NOT NULL DEFAULT 'en';

-- The languages of each project's chunks and how many: the ranking statement
-- analyses a question with the languages of the projects it searches, and these
-- counts order them. Kept beside project_stats by chunks_stats, under its lock.
CREATE TABLE project_languages (
    project_id   bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    language     text NOT NULL,
    chunk_count  bigint NOT NULL,
    total_length bigint NOT NULL,
    PRIMARY KEY (project_id, language)
);

INSERT INTO project_languages (project_id, language, chunk_count, total_length)
SELECT project_id, language, count(*), sum(length) FROM chunks GROUP BY project_id, language;

-- canon_project_languages lists the languages a question to these projects is
-- analysed in, with their configurations: those of the projects' chunks and
-- the projects' own, with their chunk counts; default_language alone when they
-- have none. The ranking statement and pass 1 of the two-pass search both read
-- it. A SQL function of one SELECT, so the planner inlines it.
-- +goose StatementBegin
CREATE FUNCTION canon_project_languages(project_ids bigint[], default_language text)
RETURNS TABLE (language text, config regconfig, chunks bigint)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT x.language, canon_text_config(x.language), sum(x.chunks)::bigint
    FROM (
        SELECT pl.language, pl.chunk_count AS chunks
        FROM project_languages pl WHERE pl.project_id = ANY (project_ids)
        UNION ALL
        SELECT p.language, 0 FROM projects p WHERE p.id = ANY (project_ids) AND p.language IS NOT NULL
        UNION ALL
        SELECT default_language, -1
        WHERE NOT EXISTS (SELECT FROM project_languages pl WHERE pl.project_id = ANY (project_ids))
          AND NOT EXISTS (SELECT FROM projects p WHERE p.id = ANY (project_ids) AND p.language IS NOT NULL)
    ) AS x
    GROUP BY x.language
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION chunks_derive() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    heading_text text;
    doc_language text;
    config       regconfig;
    heading      tsvector;
BEGIN
    SELECT concat_ws(' ', d.title, array_to_string(
               array(SELECT h FROM unnest(NEW.heading_path) h WHERE h IS DISTINCT FROM d.title), ' ')),
           d.language
    INTO heading_text, doc_language
    FROM documents d WHERE d.project_id = NEW.project_id AND d.id = NEW.document_id;
    NEW.language := coalesce(doc_language, NEW.language);
    config := canon_text_config(NEW.language);
    heading := canon_tsvector(config, coalesce(heading_text, ''));
    NEW.tsv := setweight(heading, 'A') || canon_tsvector(config, NEW.text);
    NEW.heading_lexemes := tsvector_to_array(heading);
    NEW.length := coalesce((SELECT sum(cardinality(u.positions)) FROM unnest(NEW.tsv) u), 0);
    RETURN NEW;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION chunks_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NOT EXISTS (SELECT FROM new_rows) THEN
            RETURN NULL;
        END IF;
        PERFORM canon_lock_stats(ARRAY(SELECT DISTINCT project_id FROM new_rows));
        INSERT INTO project_stats (project_id, chunk_count, total_length)
        SELECT project_id, count(*), sum(length) FROM new_rows GROUP BY project_id ORDER BY project_id
        ON CONFLICT (project_id) DO UPDATE SET
            chunk_count = project_stats.chunk_count + excluded.chunk_count,
            total_length = project_stats.total_length + excluded.total_length;
        INSERT INTO project_languages (project_id, language, chunk_count, total_length)
        SELECT project_id, language, count(*), sum(length) FROM new_rows
        GROUP BY project_id, language ORDER BY project_id, language
        ON CONFLICT (project_id, language) DO UPDATE SET
            chunk_count = project_languages.chunk_count + excluded.chunk_count,
            total_length = project_languages.total_length + excluded.total_length;
    ELSE
        IF NOT EXISTS (SELECT FROM old_rows) THEN
            RETURN NULL;
        END IF;
        PERFORM canon_lock_stats(ARRAY(SELECT DISTINCT project_id FROM old_rows));
        UPDATE project_stats s SET chunk_count = s.chunk_count - d.n, total_length = s.total_length - d.len
        FROM (SELECT project_id, count(*) AS n, sum(length) AS len FROM old_rows GROUP BY project_id) d
        WHERE s.project_id = d.project_id;
        UPDATE project_languages s SET chunk_count = s.chunk_count - d.n, total_length = s.total_length - d.len
        FROM (SELECT project_id, language, count(*) AS n, sum(length) AS len FROM old_rows
              GROUP BY project_id, language) d
        WHERE s.project_id = d.project_id AND s.language = d.language;
        -- A language whose last chunk went no longer analyses the project's questions.
        DELETE FROM project_languages s USING (SELECT DISTINCT project_id, language FROM old_rows) d
        WHERE s.project_id = d.project_id AND s.language = d.language AND s.chunk_count <= 0;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION chunks_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NOT EXISTS (SELECT FROM new_rows) THEN
            RETURN NULL;
        END IF;
        PERFORM canon_lock_stats(ARRAY(SELECT DISTINCT project_id FROM new_rows));
        INSERT INTO project_stats (project_id, chunk_count, total_length)
        SELECT project_id, count(*), sum(length) FROM new_rows GROUP BY project_id ORDER BY project_id
        ON CONFLICT (project_id) DO UPDATE SET
            chunk_count = project_stats.chunk_count + excluded.chunk_count,
            total_length = project_stats.total_length + excluded.total_length;
    ELSE
        IF NOT EXISTS (SELECT FROM old_rows) THEN
            RETURN NULL;
        END IF;
        PERFORM canon_lock_stats(ARRAY(SELECT DISTINCT project_id FROM old_rows));
        UPDATE project_stats s SET chunk_count = s.chunk_count - d.n, total_length = s.total_length - d.len
        FROM (SELECT project_id, count(*) AS n, sum(length) AS len FROM old_rows GROUP BY project_id) d
        WHERE s.project_id = d.project_id;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION chunks_derive() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    heading tsvector;
BEGIN
    SELECT canon_tsvector(concat_ws(' ', d.title, array_to_string(
               array(SELECT h FROM unnest(NEW.heading_path) h WHERE h IS DISTINCT FROM d.title), ' ')))
    INTO heading
    FROM documents d WHERE d.project_id = NEW.project_id AND d.id = NEW.document_id;
    heading := coalesce(heading, ''::tsvector);
    NEW.tsv := setweight(heading, 'A') || canon_tsvector(NEW.text);
    NEW.heading_lexemes := tsvector_to_array(heading);
    NEW.length := coalesce((SELECT sum(cardinality(u.positions)) FROM unnest(NEW.tsv) u), 0);
    RETURN NEW;
END $$;
-- +goose StatementEnd

DROP FUNCTION canon_project_languages(bigint[], text);
DROP TABLE project_languages;
ALTER TABLE chunks DROP COLUMN language;
ALTER TABLE documents DROP COLUMN language;
ALTER TABLE projects DROP COLUMN language;
DROP FUNCTION canon_query_terms(regconfig[], text);
DROP FUNCTION canon_tsvector(regconfig, text);
DROP FUNCTION canon_text_config(text);
DROP TABLE text_languages;
