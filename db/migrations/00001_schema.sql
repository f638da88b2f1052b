-- canon schema.
--
-- Every table below `projects` carries project_id, and every foreign key between
-- project tables is composite (project_id, id): a row can never point at another
-- project's row, whatever the application does.
--
-- The embedding dimension is fixed here, at migration time, from KB_EMBEDDING_DIM
-- (default 384). Changing it later means a new database (or a migration that
-- re-creates the column and re-embeds).

-- +goose Up
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- canon_tsvector is the full-text form of any text canon indexes or queries: the
-- english configuration (stemming, stop words) plus each snake_case or SCREAMING_CASE
-- identifier as one whole lexeme (the parser alone splits KB_RRF_K into kb, rrf, k,
-- so an exact identifier would match loosely). Chunks and questions both go through
-- it, so the two sides always agree.
-- +goose StatementBegin
CREATE FUNCTION canon_tsvector(body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('english', body) || coalesce((
        SELECT string_agg(format('%s:%s', quote_literal(lower(m[1])), n), ' ')::tsvector
        FROM regexp_matches(body, '([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)', 'g') WITH ORDINALITY AS x (m, n)
    ), ''::tsvector)
$$;
-- +goose StatementEnd

-- canon_query_terms lists a question's lexemes with their count (a repeated term
-- weighs more in BM25), through the same canon_tsvector as the chunks.
-- +goose StatementBegin
CREATE FUNCTION canon_query_terms(question text) RETURNS TABLE (lexeme text, qtf float8)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT u.lexeme, cardinality(u.positions)::float8 FROM unnest(canon_tsvector(question)) AS u
$$;
-- +goose StatementEnd

CREATE TABLE projects (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_key text NOT NULL UNIQUE CHECK (project_key ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE documents (
    project_id         bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    slug               text NOT NULL CHECK (slug <> ''),
    title              text NOT NULL,
    source_path        text NOT NULL DEFAULT '',
    source_type        text NOT NULL DEFAULT 'markdown',
    tags               text[] NOT NULL DEFAULT '{}',
    owners             text[] NOT NULL DEFAULT '{}',
    content_hash       text NOT NULL,
    effective_date     date,
    -- Canonical fields: canonical_type is NULL for raw (non-canonical) documents.
    canonical_type     text CHECK (canonical_type IN ('project-index', 'module-kb', 'decision', 'runbook',
                           'standard', 'incident', 'integration', 'domain-concept', 'rejected-approach')),
    status             text CHECK (status IN ('draft', 'review', 'accepted', 'active', 'superseded',
                           'deprecated', 'archived')),
    retrieval_priority integer NOT NULL DEFAULT 50 CHECK (retrieval_priority BETWEEN 0 AND 100),
    tier               text NOT NULL DEFAULT 'human' CHECK (tier IN ('human', 'auto')),
    evidence_tier      text CHECK (evidence_tier IN ('guideline', 'peer_reviewed', 'official', 'preprint',
                           'news', 'blog', 'search_hint', 'unverified')),
    -- Entity pages (person, team, project) are documents too; entity_type marks them.
    entity_type        text CHECK (entity_type IN ('person', 'team', 'project')),
    -- The summary (frontmatter `summary:` or the first paragraph): the preamble signal.
    summary            text NOT NULL DEFAULT '',
    -- Lexemes (english config) of the summary and of the tags, computed at ingest so the
    -- ranking query compares them to the query's lexemes with array operators.
    preamble_lexemes   text[] NOT NULL DEFAULT '{}',
    tag_lexemes        text[] NOT NULL DEFAULT '{}',
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, id),
    UNIQUE (project_id, slug)
);

CREATE INDEX documents_project_canonical ON documents (project_id, canonical_type);

-- +goose ENVSUB ON
CREATE TABLE chunks (
    project_id      bigint NOT NULL,
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id     bigint NOT NULL,
    ordinal         integer NOT NULL,
    heading_path    text[] NOT NULL DEFAULT '{}',
    text            text NOT NULL,
    token_count     integer NOT NULL,
    is_summary      boolean NOT NULL DEFAULT false,
    embedding       vector(${KB_EMBEDDING_DIM:-384}) NOT NULL,
    -- Derived by the chunks_derive trigger, so every writer (COPY included) gets them:
    -- weighted full text (title and heading path at weight A, body at D), the
    -- lexemes of title + heading path (the heading signal) and the BM25 length of
    -- the chunk in lexeme occurrences.
    tsv             tsvector NOT NULL DEFAULT '',
    heading_lexemes text[] NOT NULL DEFAULT '{}',
    length          integer NOT NULL DEFAULT 0,
    UNIQUE (project_id, id),
    UNIQUE (document_id, ordinal),
    FOREIGN KEY (project_id, document_id) REFERENCES documents (project_id, id) ON DELETE CASCADE
);
-- +goose ENVSUB OFF

-- Vectors are small enough to live in the heap page; TOASTing them made exact
-- scans several times slower.
ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE PLAIN;
CREATE INDEX chunks_embedding_hnsw ON chunks USING hnsw (embedding vector_cosine_ops);
CREATE INDEX chunks_tsv_gin ON chunks USING gin (tsv);
CREATE INDEX chunks_document ON chunks (project_id, document_id, ordinal);

-- +goose StatementBegin
CREATE FUNCTION chunks_derive() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    heading text;
BEGIN
    SELECT concat_ws(' ', d.title, array_to_string(
               array(SELECT h FROM unnest(NEW.heading_path) h WHERE h IS DISTINCT FROM d.title), ' '))
    INTO heading
    FROM documents d WHERE d.project_id = NEW.project_id AND d.id = NEW.document_id;
    NEW.tsv := setweight(canon_tsvector(coalesce(heading, '')), 'A') || canon_tsvector(NEW.text);
    NEW.heading_lexemes := tsvector_to_array(canon_tsvector(coalesce(heading, '')));
    NEW.length := coalesce((SELECT sum(cardinality(u.positions)) FROM unnest(NEW.tsv) u), 0);
    RETURN NEW;
END $$;
-- +goose StatementEnd

CREATE TRIGGER chunks_derive BEFORE INSERT OR UPDATE OF text, heading_path ON chunks
    FOR EACH ROW EXECUTE FUNCTION chunks_derive();

-- BM25 postings: one row per (lexeme, chunk). tf counts body occurrences and
-- tf_heading those in the title/heading path, so the heading boost stays a query
-- parameter. The index covers the whole BM25 computation (index-only scans).
CREATE TABLE postings (
    project_id bigint NOT NULL,
    lexeme     text NOT NULL,
    chunk_id   bigint NOT NULL,
    tf         integer NOT NULL,
    tf_heading integer NOT NULL,
    length     integer NOT NULL,
    FOREIGN KEY (project_id, chunk_id) REFERENCES chunks (project_id, id) ON DELETE CASCADE
);

-- +goose StatementBegin
CREATE FUNCTION chunks_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO postings (project_id, lexeme, chunk_id, tf, tf_heading, length)
    SELECT c.project_id, u.lexeme, c.id,
           cardinality(u.positions) - cardinality(array_positions(u.weights, 'A')),
           cardinality(array_positions(u.weights, 'A')),
           c.length
    FROM new_rows c, unnest(c.tsv) u;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE INDEX postings_lexeme ON postings (project_id, lexeme) INCLUDE (chunk_id, tf, tf_heading, length);
CREATE INDEX postings_chunk ON postings (chunk_id);

-- Corpus statistics for BM25, maintained by triggers so any insert or delete
-- (including cascades from a deleted document) keeps them exact.
CREATE TABLE lexeme_stats (
    project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    lexeme     text NOT NULL,
    df         integer NOT NULL,
    PRIMARY KEY (project_id, lexeme)
);

CREATE TABLE project_stats (
    project_id   bigint PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    chunk_count  bigint NOT NULL DEFAULT 0,
    total_length bigint NOT NULL DEFAULT 0
);

-- +goose StatementBegin
CREATE FUNCTION postings_stats_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Sorted so concurrent ingests lock lexeme rows in the same order.
    INSERT INTO lexeme_stats (project_id, lexeme, df)
    SELECT project_id, lexeme, count(*) FROM new_rows
    GROUP BY project_id, lexeme ORDER BY project_id, lexeme
    ON CONFLICT (project_id, lexeme) DO UPDATE SET df = lexeme_stats.df + excluded.df;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION postings_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE lexeme_stats s SET df = s.df - d.n
    FROM (SELECT project_id, lexeme, count(*) AS n FROM old_rows
          GROUP BY project_id, lexeme ORDER BY project_id, lexeme) d
    WHERE s.project_id = d.project_id AND s.lexeme = d.lexeme;
    DELETE FROM lexeme_stats s USING (SELECT DISTINCT project_id, lexeme FROM old_rows) d
    WHERE s.project_id = d.project_id AND s.lexeme = d.lexeme AND s.df <= 0;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER chunks_postings AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION chunks_postings();
CREATE TRIGGER postings_stats_insert AFTER INSERT ON postings
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION postings_stats_insert();
CREATE TRIGGER postings_stats_delete AFTER DELETE ON postings
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION postings_stats_delete();

-- +goose StatementBegin
CREATE FUNCTION chunks_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO project_stats (project_id, chunk_count, total_length)
        SELECT project_id, count(*), sum(length) FROM new_rows GROUP BY project_id ORDER BY project_id
        ON CONFLICT (project_id) DO UPDATE SET
            chunk_count = project_stats.chunk_count + excluded.chunk_count,
            total_length = project_stats.total_length + excluded.total_length;
    ELSE
        UPDATE project_stats s SET chunk_count = s.chunk_count - d.n, total_length = s.total_length - d.len
        FROM (SELECT project_id, count(*) AS n, sum(length) AS len FROM old_rows GROUP BY project_id) d
        WHERE s.project_id = d.project_id;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER chunks_stats_insert AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION chunks_stats();
CREATE TRIGGER chunks_stats_delete AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION chunks_stats();

-- The knowledge graph: one node per canonical document.
CREATE TABLE kb_nodes (
    project_id  bigint NOT NULL,
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id bigint NOT NULL,
    node_type   text NOT NULL CHECK (node_type IN ('project-index', 'module-kb', 'decision', 'runbook',
                    'standard', 'incident', 'integration', 'domain-concept', 'rejected-approach')),
    UNIQUE (project_id, id),
    UNIQUE (project_id, document_id),
    FOREIGN KEY (project_id, document_id) REFERENCES documents (project_id, id) ON DELETE CASCADE
);

-- Links as documents declare them (frontmatter and wikilinks), by slug, so a link
-- to a document not yet ingested waits here and resolves into kb_edges when it arrives.
CREATE TABLE doc_links (
    project_id   bigint NOT NULL,
    declared_by  bigint NOT NULL,
    from_slug    text NOT NULL,
    to_slug      text NOT NULL,
    edge_type    text NOT NULL,
    weight       numeric(8, 4) NOT NULL,
    provenance   text NOT NULL CHECK (provenance IN ('frontmatter', 'wikilink')),
    UNIQUE (project_id, declared_by, from_slug, to_slug, edge_type),
    FOREIGN KEY (project_id, declared_by) REFERENCES documents (project_id, id) ON DELETE CASCADE
);

CREATE INDEX doc_links_from ON doc_links (project_id, from_slug);
CREATE INDEX doc_links_to ON doc_links (project_id, to_slug);

CREATE TABLE kb_edges (
    project_id   bigint NOT NULL,
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    from_node_id bigint NOT NULL,
    to_node_id   bigint NOT NULL,
    edge_type    text NOT NULL CHECK (edge_type IN ('decision_for', 'implements', 'supersedes', 'depends_on',
                     'uses', 'affects', 'documented_by', 'invalidated_by', 'owned_by', 'related_to')),
    weight       numeric(8, 4) NOT NULL CHECK (weight >= 0),
    provenance   text NOT NULL CHECK (provenance IN ('frontmatter', 'wikilink', 'lifecycle')),
    -- The document whose frontmatter or body declared the edge (NULL for lifecycle
    -- edges): re-ingesting that document replaces exactly its edges.
    declared_by  bigint,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, from_node_id, to_node_id, edge_type),
    FOREIGN KEY (project_id, from_node_id) REFERENCES kb_nodes (project_id, id) ON DELETE CASCADE,
    FOREIGN KEY (project_id, to_node_id) REFERENCES kb_nodes (project_id, id) ON DELETE CASCADE,
    FOREIGN KEY (project_id, declared_by) REFERENCES documents (project_id, id) ON DELETE CASCADE
);

CREATE INDEX kb_edges_to ON kb_edges (project_id, to_node_id);

-- Entities (people, teams, projects) come from entity pages; their slug is the page's slug.
-- +goose ENVSUB ON
CREATE TABLE entities (
    project_id  bigint NOT NULL,
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id bigint NOT NULL,
    slug        text NOT NULL,
    entity_type text NOT NULL CHECK (entity_type IN ('person', 'team', 'project')),
    name        text NOT NULL,
    aliases     text[] NOT NULL DEFAULT '{}',
    role        text NOT NULL DEFAULT '',
    facts       text[] NOT NULL DEFAULT '{}',
    embedding   vector(${KB_EMBEDDING_DIM:-384}),
    UNIQUE (project_id, id),
    UNIQUE (project_id, slug),
    UNIQUE (project_id, document_id),
    FOREIGN KEY (project_id, document_id) REFERENCES documents (project_id, id) ON DELETE CASCADE
);
-- +goose ENVSUB OFF

CREATE INDEX entities_name_trgm ON entities USING gin (lower(name) gin_trgm_ops);

-- Team membership, declared by the team page (members: [...]) by slug.
CREATE TABLE team_members (
    project_id  bigint NOT NULL,
    team_id     bigint NOT NULL,
    member_slug text NOT NULL,
    PRIMARY KEY (project_id, team_id, member_slug),
    FOREIGN KEY (project_id, team_id) REFERENCES entities (project_id, id) ON DELETE CASCADE
);

-- Which documents mention which entities (by entity slug, so mentions of an entity
-- whose page is not ingested yet resolve as soon as it is).
CREATE TABLE entity_mentions (
    project_id  bigint NOT NULL,
    entity_slug text NOT NULL,
    document_id bigint NOT NULL,
    strength    real NOT NULL CHECK (strength > 0),
    source      text NOT NULL CHECK (source IN ('text', 'attendee', 'frontmatter')),
    PRIMARY KEY (project_id, entity_slug, document_id, source),
    FOREIGN KEY (project_id, document_id) REFERENCES documents (project_id, id) ON DELETE CASCADE
);

CREATE INDEX entity_mentions_document ON entity_mentions (project_id, document_id);

CREATE TABLE chat_logs (
    project_id       bigint REFERENCES projects (id) ON DELETE CASCADE,
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    question         text NOT NULL,
    filters          jsonb NOT NULL DEFAULT '{}',
    refusal_reason   text,
    citations        jsonb NOT NULL DEFAULT '[]',
    provider         text NOT NULL DEFAULT '',
    model            text NOT NULL DEFAULT '',
    retrieval_ms     double precision NOT NULL DEFAULT 0,
    generation_ms    double precision NOT NULL DEFAULT 0,
    total_ms         double precision NOT NULL DEFAULT 0,
    prompt_tokens    integer NOT NULL DEFAULT 0,
    completion_tokens integer NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now()
);

-- Questions canon could not answer, rolled up per project and normalised question.
CREATE TABLE content_gaps (
    project_id          bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    normalized_question text NOT NULL,
    example_question    text NOT NULL,
    count               bigint NOT NULL DEFAULT 1,
    first_seen          timestamptz NOT NULL DEFAULT now(),
    last_seen           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, normalized_question)
);
-- +goose Down
DROP TABLE content_gaps;
DROP TABLE chat_logs;
DROP TABLE entity_mentions;
DROP TABLE team_members;
DROP TABLE entities;
DROP TABLE kb_edges;
DROP TABLE doc_links;
DROP TABLE kb_nodes;
DROP TABLE project_stats;
DROP TABLE lexeme_stats;
DROP TABLE postings;
DROP FUNCTION postings_stats_insert, postings_stats_delete;
DROP TABLE chunks;
DROP FUNCTION chunks_stats, chunks_derive, chunks_postings;
DROP TABLE documents;
DROP TABLE projects;
DROP FUNCTION canon_query_terms, canon_tsvector;
