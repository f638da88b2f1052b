-- Citus-ready keys (docs/scale-out.md, checked by db/citus/citus_test.go): every
-- primary and unique key of a table distributed by project_id includes it, so
-- Citus can enforce it on one shard. ids stay unique on their own (one sequence
-- each); the keys only name the shard too. The foreign keys already pair
-- project_id; they are dropped and made again only to move them from the old
-- UNIQUE (project_id, id) constraints onto the primary keys that replace them.
--
-- chat_logs.project_id becomes NOT NULL (it is part of the key): a turn whose
-- project keys resolve to no project is no longer written (chatlog counts it as
-- unscoped), and the rows of such turns are deleted here; rolling back does not
-- bring them back.
--
-- postings_chunk_lexeme carries project_id, so the search's probe of a chunk's
-- postings can name the chunk's project and stay an index-only scan.

-- +goose Up
ALTER TABLE chunks DROP CONSTRAINT chunks_project_id_document_id_fkey;
ALTER TABLE kb_nodes DROP CONSTRAINT kb_nodes_project_id_document_id_fkey;
ALTER TABLE doc_links DROP CONSTRAINT doc_links_project_id_declared_by_fkey;
ALTER TABLE kb_edges DROP CONSTRAINT kb_edges_project_id_declared_by_fkey;
ALTER TABLE kb_edges DROP CONSTRAINT kb_edges_project_id_from_node_id_fkey;
ALTER TABLE kb_edges DROP CONSTRAINT kb_edges_project_id_to_node_id_fkey;
ALTER TABLE entities DROP CONSTRAINT entities_project_id_document_id_fkey;
ALTER TABLE entity_mentions DROP CONSTRAINT entity_mentions_project_id_document_id_fkey;
ALTER TABLE team_members DROP CONSTRAINT team_members_project_id_team_id_fkey;

ALTER TABLE documents DROP CONSTRAINT documents_pkey, DROP CONSTRAINT documents_project_id_id_key,
    ADD CONSTRAINT documents_pkey PRIMARY KEY (project_id, id);
ALTER TABLE chunks DROP CONSTRAINT chunks_pkey, DROP CONSTRAINT chunks_project_id_id_key,
    DROP CONSTRAINT chunks_document_ordinal,
    ADD CONSTRAINT chunks_pkey PRIMARY KEY (project_id, id),
    ADD CONSTRAINT chunks_document_ordinal UNIQUE (project_id, document_id, ordinal) INCLUDE (id);
ALTER TABLE kb_nodes DROP CONSTRAINT kb_nodes_pkey, DROP CONSTRAINT kb_nodes_project_id_id_key,
    ADD CONSTRAINT kb_nodes_pkey PRIMARY KEY (project_id, id);
ALTER TABLE kb_edges DROP CONSTRAINT kb_edges_pkey, ADD CONSTRAINT kb_edges_pkey PRIMARY KEY (project_id, id);
ALTER TABLE entities DROP CONSTRAINT entities_pkey, DROP CONSTRAINT entities_project_id_id_key,
    ADD CONSTRAINT entities_pkey PRIMARY KEY (project_id, id);
ALTER TABLE lifecycle_audit DROP CONSTRAINT lifecycle_audit_pkey,
    ADD CONSTRAINT lifecycle_audit_pkey PRIMARY KEY (project_id, id);
DELETE FROM chat_logs WHERE project_id IS NULL;
ALTER TABLE chat_logs DROP CONSTRAINT chat_logs_pkey, ALTER COLUMN project_id SET NOT NULL,
    ADD CONSTRAINT chat_logs_pkey PRIMARY KEY (project_id, id);

ALTER TABLE chunks ADD CONSTRAINT chunks_project_id_document_id_fkey
    FOREIGN KEY (project_id, document_id) REFERENCES documents (project_id, id) ON DELETE CASCADE;
ALTER TABLE kb_nodes ADD CONSTRAINT kb_nodes_project_id_document_id_fkey
    FOREIGN KEY (project_id, document_id) REFERENCES documents (project_id, id) ON DELETE CASCADE;
ALTER TABLE doc_links ADD CONSTRAINT doc_links_project_id_declared_by_fkey
    FOREIGN KEY (project_id, declared_by) REFERENCES documents (project_id, id) ON DELETE CASCADE;
ALTER TABLE kb_edges ADD CONSTRAINT kb_edges_project_id_declared_by_fkey
    FOREIGN KEY (project_id, declared_by) REFERENCES documents (project_id, id) ON DELETE CASCADE;
ALTER TABLE kb_edges ADD CONSTRAINT kb_edges_project_id_from_node_id_fkey
    FOREIGN KEY (project_id, from_node_id) REFERENCES kb_nodes (project_id, id) ON DELETE CASCADE;
ALTER TABLE kb_edges ADD CONSTRAINT kb_edges_project_id_to_node_id_fkey
    FOREIGN KEY (project_id, to_node_id) REFERENCES kb_nodes (project_id, id) ON DELETE CASCADE;
ALTER TABLE entities ADD CONSTRAINT entities_project_id_document_id_fkey
    FOREIGN KEY (project_id, document_id) REFERENCES documents (project_id, id) ON DELETE CASCADE;
ALTER TABLE entity_mentions ADD CONSTRAINT entity_mentions_project_id_document_id_fkey
    FOREIGN KEY (project_id, document_id) REFERENCES documents (project_id, id) ON DELETE CASCADE;
ALTER TABLE team_members ADD CONSTRAINT team_members_project_id_team_id_fkey
    FOREIGN KEY (project_id, team_id) REFERENCES entities (project_id, id) ON DELETE CASCADE;

DROP INDEX postings_chunk_lexeme;
CREATE INDEX postings_chunk_lexeme ON postings (chunk_id, lexeme) INCLUDE (project_id, tf, tf_heading, length);

-- +goose Down
DROP INDEX postings_chunk_lexeme;
CREATE INDEX postings_chunk_lexeme ON postings (chunk_id, lexeme) INCLUDE (tf, tf_heading, length);

ALTER TABLE chunks DROP CONSTRAINT chunks_project_id_document_id_fkey;
ALTER TABLE kb_nodes DROP CONSTRAINT kb_nodes_project_id_document_id_fkey;
ALTER TABLE doc_links DROP CONSTRAINT doc_links_project_id_declared_by_fkey;
ALTER TABLE kb_edges DROP CONSTRAINT kb_edges_project_id_declared_by_fkey;
ALTER TABLE kb_edges DROP CONSTRAINT kb_edges_project_id_from_node_id_fkey;
ALTER TABLE kb_edges DROP CONSTRAINT kb_edges_project_id_to_node_id_fkey;
ALTER TABLE entities DROP CONSTRAINT entities_project_id_document_id_fkey;
ALTER TABLE entity_mentions DROP CONSTRAINT entity_mentions_project_id_document_id_fkey;
ALTER TABLE team_members DROP CONSTRAINT team_members_project_id_team_id_fkey;

ALTER TABLE chat_logs DROP CONSTRAINT chat_logs_pkey, ALTER COLUMN project_id DROP NOT NULL,
    ADD CONSTRAINT chat_logs_pkey PRIMARY KEY (id);
ALTER TABLE lifecycle_audit DROP CONSTRAINT lifecycle_audit_pkey, ADD CONSTRAINT lifecycle_audit_pkey PRIMARY KEY (id);
ALTER TABLE entities DROP CONSTRAINT entities_pkey,
    ADD CONSTRAINT entities_pkey PRIMARY KEY (id), ADD CONSTRAINT entities_project_id_id_key UNIQUE (project_id, id);
ALTER TABLE kb_edges DROP CONSTRAINT kb_edges_pkey, ADD CONSTRAINT kb_edges_pkey PRIMARY KEY (id);
ALTER TABLE kb_nodes DROP CONSTRAINT kb_nodes_pkey,
    ADD CONSTRAINT kb_nodes_pkey PRIMARY KEY (id), ADD CONSTRAINT kb_nodes_project_id_id_key UNIQUE (project_id, id);
ALTER TABLE chunks DROP CONSTRAINT chunks_pkey, DROP CONSTRAINT chunks_document_ordinal,
    ADD CONSTRAINT chunks_pkey PRIMARY KEY (id), ADD CONSTRAINT chunks_project_id_id_key UNIQUE (project_id, id),
    ADD CONSTRAINT chunks_document_ordinal UNIQUE (document_id, ordinal) INCLUDE (id);
ALTER TABLE documents DROP CONSTRAINT documents_pkey,
    ADD CONSTRAINT documents_pkey PRIMARY KEY (id), ADD CONSTRAINT documents_project_id_id_key UNIQUE (project_id, id);

ALTER TABLE chunks ADD CONSTRAINT chunks_project_id_document_id_fkey
    FOREIGN KEY (project_id, document_id) REFERENCES documents (project_id, id) ON DELETE CASCADE;
ALTER TABLE kb_nodes ADD CONSTRAINT kb_nodes_project_id_document_id_fkey
    FOREIGN KEY (project_id, document_id) REFERENCES documents (project_id, id) ON DELETE CASCADE;
ALTER TABLE doc_links ADD CONSTRAINT doc_links_project_id_declared_by_fkey
    FOREIGN KEY (project_id, declared_by) REFERENCES documents (project_id, id) ON DELETE CASCADE;
ALTER TABLE kb_edges ADD CONSTRAINT kb_edges_project_id_declared_by_fkey
    FOREIGN KEY (project_id, declared_by) REFERENCES documents (project_id, id) ON DELETE CASCADE;
ALTER TABLE kb_edges ADD CONSTRAINT kb_edges_project_id_from_node_id_fkey
    FOREIGN KEY (project_id, from_node_id) REFERENCES kb_nodes (project_id, id) ON DELETE CASCADE;
ALTER TABLE kb_edges ADD CONSTRAINT kb_edges_project_id_to_node_id_fkey
    FOREIGN KEY (project_id, to_node_id) REFERENCES kb_nodes (project_id, id) ON DELETE CASCADE;
ALTER TABLE entities ADD CONSTRAINT entities_project_id_document_id_fkey
    FOREIGN KEY (project_id, document_id) REFERENCES documents (project_id, id) ON DELETE CASCADE;
ALTER TABLE entity_mentions ADD CONSTRAINT entity_mentions_project_id_document_id_fkey
    FOREIGN KEY (project_id, document_id) REFERENCES documents (project_id, id) ON DELETE CASCADE;
ALTER TABLE team_members ADD CONSTRAINT team_members_project_id_team_id_fkey
    FOREIGN KEY (project_id, team_id) REFERENCES entities (project_id, id) ON DELETE CASCADE;
