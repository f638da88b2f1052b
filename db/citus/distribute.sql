-- How canon's schema would be laid out on Citus (docs/scale-out.md), run once on
-- the coordinator after `canon migrate up`. Not run by canon or its tests (no Citus
-- package here); db/citus/citus_test.go checks that it names every table of the
-- migrated schema and that the schema keeps the rules distribution needs.

-- Reference tables: small, read on every request by key, copied to every node.
-- projects maps a request's project key to project_id, the distribution column of
-- everything else, and is the target of their foreign keys.
SELECT create_reference_table('projects');
-- api_keys authenticates every request before its project is known, and a key
-- may name several projects.
SELECT create_reference_table('api_keys');
-- text_languages maps a language to its text-search configuration for every
-- chunk insert and every question.
SELECT create_reference_table('text_languages');

-- Distributed tables, all by project_id and co-located with documents, so every
-- join on project_id between them stays on one shard.
SELECT create_distributed_table('documents', 'project_id');
SELECT create_distributed_table('chunks', 'project_id', colocate_with => 'documents');
SELECT create_distributed_table('postings', 'project_id', colocate_with => 'documents');
SELECT create_distributed_table('lexeme_stats', 'project_id', colocate_with => 'documents');
SELECT create_distributed_table('project_stats', 'project_id', colocate_with => 'documents');
SELECT create_distributed_table('project_languages', 'project_id', colocate_with => 'documents');
SELECT create_distributed_table('kb_nodes', 'project_id', colocate_with => 'documents');
SELECT create_distributed_table('kb_edges', 'project_id', colocate_with => 'documents');
SELECT create_distributed_table('doc_links', 'project_id', colocate_with => 'documents');
SELECT create_distributed_table('entities', 'project_id', colocate_with => 'documents');
SELECT create_distributed_table('entity_mentions', 'project_id', colocate_with => 'documents');
SELECT create_distributed_table('mentions_pending', 'project_id', colocate_with => 'documents');
SELECT create_distributed_table('team_members', 'project_id', colocate_with => 'documents');
SELECT create_distributed_table('chat_logs', 'project_id', colocate_with => 'documents');
SELECT create_distributed_table('content_gaps', 'project_id', colocate_with => 'documents');
SELECT create_distributed_table('lifecycle_audit', 'project_id', colocate_with => 'documents');

-- Left as local tables on the coordinator (neither call above):
--   goose_db_version  the migration tool's own bookkeeping.
--   deferred_indexes  the bulk load's note of an index to rebuild (ingest/bulk.go).
--   audit_log         one row per authorization decision, written before or without
--                     a project (a refused key names none); append-only, read by admins.
