-- +goose Up
-- canon_project_languages reads a language's configuration by joining
-- text_languages instead of calling canon_text_config: a SQL function holding a
-- subquery is never inlined, so each call planned and ran its own query (0.2 ms
-- of every ranking statement).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION canon_project_languages(project_ids bigint[], default_language text)
RETURNS TABLE (language text, config regconfig, chunks bigint)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT x.language, coalesce(t.config, 'simple'::regconfig), sum(x.chunks)::bigint
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
    LEFT JOIN text_languages t ON t.language = x.language
    GROUP BY x.language, t.config
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION canon_project_languages(project_ids bigint[], default_language text)
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
