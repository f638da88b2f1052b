-- An entity's role and facts as lexemes, analysed when the entity is written with
-- its page's text-search configuration: pass 1 of the two-pass search (EntityRank)
-- compared every question with every entity's role and facts, and analysing those
-- texts per question was most of its time on a project of 232 people (issue #20).

-- +goose Up
ALTER TABLE entities
    ADD COLUMN role_lexemes text[] NOT NULL DEFAULT '{}',
    ADD COLUMN facts_lexemes text[] NOT NULL DEFAULT '{}';

UPDATE entities e
SET role_lexemes = tsvector_to_array(to_tsvector(canon_text_config(d.language), e.role)),
    facts_lexemes = tsvector_to_array(to_tsvector(canon_text_config(d.language), array_to_string(e.facts, ' ')))
FROM documents d
WHERE d.project_id = e.project_id AND d.id = e.document_id;

-- +goose Down
ALTER TABLE entities DROP COLUMN role_lexemes, DROP COLUMN facts_lexemes;
