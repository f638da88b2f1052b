-- Restore (package lifecycle) undoes the lifecycle operations on a document
-- since the ingest that last wrote it, and is audited like them.

-- +goose Up
ALTER TABLE lifecycle_audit
    DROP CONSTRAINT lifecycle_audit_operation_check,
    ADD CONSTRAINT lifecycle_audit_operation_check
        CHECK (operation IN ('promote', 'supersede', 'deprecate', 'archive', 'reject', 'restore'));

-- +goose Down
-- The restores on record stay (NOT VALID checks only new rows).
ALTER TABLE lifecycle_audit
    DROP CONSTRAINT lifecycle_audit_operation_check,
    ADD CONSTRAINT lifecycle_audit_operation_check
        CHECK (operation IN ('promote', 'supersede', 'deprecate', 'archive', 'reject')) NOT VALID;
