-- Whether a document lists attendees (frontmatter attendees: meeting notes do),
-- stored with the document: it is part of the document's kind (domain.DocumentKind),
-- which the search's hits carry and the two-pass links read, and probing
-- entity_mentions for it cost every ranked row and every linked document a probe.

-- +goose Up
ALTER TABLE documents ADD COLUMN attended boolean NOT NULL DEFAULT false;

UPDATE documents d SET attended = true
WHERE EXISTS (SELECT FROM entity_mentions a
              WHERE a.project_id = d.project_id AND a.document_id = d.id AND a.source = 'attendee');

-- +goose Down
ALTER TABLE documents DROP COLUMN attended;
