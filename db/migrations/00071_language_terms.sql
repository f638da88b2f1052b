-- A chunk's keyword coverage (the refusal gate's evidence) counts against the
-- question's terms that its own language's configuration produced. The ranking
-- statement and the two-pass evidence read that number from two arrays, with
-- expressions rather than a join per candidate, so a project in one language
-- pays nothing for it (issue #24).

-- +goose Up
-- canon_array_cat concatenates arrays across rows (array_agg would make a
-- two-dimensional array, and refuses arrays of different lengths): it flattens
-- the configuration positions of the question's terms.
CREATE AGGREGATE canon_array_cat(anycompatiblearray) (
    SFUNC = array_cat,
    STYPE = anycompatiblearray,
    INITCOND = '{}',
    PARALLEL = SAFE
);

-- canon_language_terms is the number of the question's terms a chunk in
-- `language` is measured against: those its language's configuration produced
-- (positions holds a language's position in `languages` once per term it
-- produced), or all n when there is one language or the chunk's did not analyse
-- the question. One SELECT of an expression, so the planner inlines it.
-- +goose StatementBegin
CREATE FUNCTION canon_language_terms(languages text[], positions integer[], language text, n float8)
RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN cardinality(languages) = 1 THEN n
                WHEN array_position(languages, language) IS NULL THEN n
                ELSE cardinality(array_positions(positions, array_position(languages, language)))::float8
           END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION canon_language_terms(text[], integer[], text, float8);
DROP AGGREGATE canon_array_cat(anycompatiblearray);
