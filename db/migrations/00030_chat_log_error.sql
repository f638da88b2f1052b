-- A chat turn that failed after retrieval (the language model timed out, was
-- unreachable or cut its stream) is logged with what went wrong, so the log
-- shows outages beside answers and refusals. NULL for a turn that answered.

-- +goose Up
ALTER TABLE chat_logs ADD COLUMN error text;

-- +goose Down
ALTER TABLE chat_logs DROP COLUMN error;
