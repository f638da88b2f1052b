-- name: ChatLogInsert :exec
-- The JSON arrives as text: a []byte parameter goes out as bytea in the exec and
-- simple-protocol modes (PgBouncer in transaction mode), which jsonb refuses.
INSERT INTO chat_logs (
    project_id, question, filters, refusal_reason, citations, provider, model,
    retrieval_ms, generation_ms, total_ms, prompt_tokens, completion_tokens, error
) VALUES (
    sqlc.arg(project_id), sqlc.arg(question), sqlc.arg(filters)::text::jsonb, sqlc.narg(refusal_reason),
    sqlc.arg(citations)::text::jsonb, sqlc.arg(provider), sqlc.arg(model), sqlc.arg(retrieval_ms), sqlc.arg(generation_ms),
    sqlc.arg(total_ms), sqlc.arg(prompt_tokens), sqlc.arg(completion_tokens), sqlc.narg(error)
);

-- name: ContentGapRecord :exec
-- One more refusal of a question: the rollup counts it and keeps the first wording.
-- Its audience narrows to the groups every asker held (NULL: an operator, who
-- sees everything, asked it), so the gap is listed to whoever could have asked.
INSERT INTO content_gaps (project_id, normalized_question, example_question, count, first_seen, last_seen, audience)
VALUES (sqlc.arg(project_id), sqlc.arg(normalized_question), sqlc.arg(example_question), 1, sqlc.arg(at)::timestamptz,
        sqlc.arg(at)::timestamptz, sqlc.narg(asker_groups)::text[])
ON CONFLICT (project_id, normalized_question) DO UPDATE SET
    audience = CASE WHEN content_gaps.audience IS NULL THEN excluded.audience
                    WHEN excluded.audience IS NULL THEN content_gaps.audience
                    ELSE ARRAY(SELECT unnest(content_gaps.audience) INTERSECT SELECT unnest(excluded.audience))
               END,
    count = content_gaps.count + 1,
    last_seen = greatest(content_gaps.last_seen, excluded.last_seen),
    first_seen = least(content_gaps.first_seen, excluded.first_seen);

-- name: ContentGapList :many
-- Most asked first; ties by the most recent. Only gaps whose audience's groups
-- the caller holds (all of them; an empty audience is everyone).
SELECT g.example_question, g.count, g.first_seen, g.last_seen
FROM content_gaps g
WHERE g.project_id = sqlc.arg(project_id)
  AND (sqlc.arg(access_all)::boolean OR g.audience <@ sqlc.arg(access_groups)::text[])
ORDER BY g.count DESC, g.last_seen DESC, g.normalized_question
LIMIT sqlc.arg(row_limit);
