-- +goose Up
-- The English-only canon_tsvector(text) and canon_query_terms(text) of
-- migrations 00001 and 00008: since 00046 every chunk and question is analysed
-- through the functions that take the configuration, and nothing calls these.
DROP FUNCTION canon_query_terms(text);
DROP FUNCTION canon_tsvector(text);

-- +goose Down
-- +goose StatementBegin
CREATE FUNCTION canon_tsvector(body text) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN to_tsvector('english', body) || coalesce((
        SELECT string_agg(format('%s:%s', quote_literal(lower(m[1])), n), ' ')::tsvector
        FROM regexp_matches(body, '([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)', 'g') WITH ORDINALITY AS x (m, n)
    ), ''::tsvector);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION canon_query_terms(question text) RETURNS TABLE (lexeme text, qtf float8)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT u.lexeme, cardinality(u.positions)::float8 FROM unnest(canon_tsvector(question)) AS u
$$;
-- +goose StatementEnd
