package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgvector/pgvector-go"

	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/lifecycle"
	"github.com/canonkb/canon/postgres"
)

// ReembedResult summarises a reembed run.
type ReembedResult struct {
	// Documents, Chunks and Entities were embedded again by this run.
	Documents, Chunks, Entities int
	// Skipped documents were replaced by an ingest while the run read them;
	// that ingest made their vectors.
	Skipped int
	// Remaining documents still carry another embedder's vectors (changed by an
	// ingest that ran with another embedder during the run): run reembed again.
	Remaining int64
	Elapsed   time.Duration
}

// DimensionError is a reembed refused because the embedder's vectors do not
// fit the schema's column.
type DimensionError struct{ Embedder, Schema int }

func (e *DimensionError) Error() string {
	return fmt.Sprintf("the embedder makes %d-dimensional vectors but chunks.embedding is vector(%d); "+
		"the dimension is fixed when the schema is migrated: migrate a new database with KB_EMBEDDING_DIM=%d "+
		"(canon migrate up) and ingest into it, or configure a model that makes %d dimensions "+
		"(KB_EMBEDDING_REQUEST_DIMENSIONS=%d asks models that can shorten their vectors)",
		e.Embedder, e.Schema, e.Embedder, e.Schema, e.Schema)
}

// reembedPageSize is how many documents one look-up reads; a batch takes as
// many of them as fit minBatchChunks chunks.
const reembedPageSize = 256

// reembedAttempts bounds retries of a batch that lost a deadlock to an ingest.
const reembedAttempts = 3

// Reembed embeds every chunk and entity of a project again with the
// Ingester's embedder, a batch of documents per transaction. Each committed
// batch records the embedder on its documents, so a run that is stopped (or
// killed) resumes where it was, and an ingest with the same embedder skips
// them. Search keeps answering throughout: rows are updated in place, never
// locked for longer than their batch. progress receives documents done and
// the total.
func (in *Ingester) Reembed(ctx context.Context, projectKey string, progress Progress) (ReembedResult, error) {
	start := time.Now()
	var res ReembedResult
	q := db.New(in.pool)
	project, err := q.ProjectGetByKey(ctx, projectKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return res, fmt.Errorf("no project %q (canon projects lists them)", projectKey)
	}
	if err != nil {
		return res, err
	}
	schemaDim, err := postgres.EmbeddingDim(ctx, in.pool)
	if err != nil {
		return res, err
	}
	if in.embedder.Dim() != schemaDim {
		return res, &DimensionError{Embedder: in.embedder.Dim(), Schema: schemaDim}
	}
	identity := EmbedderIdentity(in.embedder)
	total, err := q.ReembedRemaining(ctx, db.ReembedRemainingParams{ProjectID: project.ID, Embedder: identity})
	if err != nil {
		return res, err
	}
	var after int64
	done := 0
	for {
		page, err := q.ReembedNextDocuments(ctx, db.ReembedNextDocumentsParams{
			ProjectID: project.ID, Embedder: identity, AfterID: after, MaxDocuments: reembedPageSize})
		if err != nil {
			return res, err
		}
		if len(page) == 0 {
			break
		}
		n, chunks := 0, 0
		for n < len(page) && (n == 0 || chunks+int(page[n].Chunks) <= minBatchChunks) {
			chunks += int(page[n].Chunks)
			n++
		}
		batch := page[:n]
		after = batch[n-1].ID
		for attempt := 1; ; attempt++ {
			err = in.reembedBatch(ctx, project.ID, identity, schemaDim, batch, &res)
			var pgErr *pgconn.PgError
			if err == nil || attempt == reembedAttempts || !errors.As(err, &pgErr) || pgErr.Code != "40P01" {
				break
			}
		}
		if err != nil {
			res.Elapsed = time.Since(start)
			return res, err
		}
		done += len(batch)
		if progress != nil {
			progress(done, int(total))
		}
	}
	if res.Documents > 0 {
		var notices []string // a re-embed reports none; the TTL covers a lost notification
		in.changed(ctx, []string{projectKey}, &notices)
	}
	res.Remaining, err = q.ReembedRemaining(ctx, db.ReembedRemainingParams{ProjectID: project.ID, Embedder: identity})
	res.Elapsed = time.Since(start)
	return res, err
}

// reembedBatch embeds one batch's chunks and entities and stores them in one
// transaction, with the embedder on their documents.
func (in *Ingester) reembedBatch(ctx context.Context, projectID int64, identity string, dim int,
	batch []db.ReembedNextDocumentsRow, res *ReembedResult) error {
	q := db.New(in.pool)
	ids := make([]int64, len(batch))
	hashes := make([]string, len(batch))
	embedders := make([]string, len(batch))
	titles := make(map[int64]string, len(batch))
	for i, d := range batch {
		ids[i], hashes[i], embedders[i], titles[d.ID] = d.ID, d.ContentHash, d.Embedder, d.Title
	}
	chunks, err := q.ReembedChunks(ctx, db.ReembedChunksParams{ProjectID: projectID, DocumentIds: ids})
	if err != nil {
		return err
	}
	entities, err := q.ReembedEntities(ctx, db.ReembedEntitiesParams{ProjectID: projectID, DocumentIds: ids})
	if err != nil {
		return err
	}
	texts := make([]string, 0, len(chunks)+len(entities))
	for _, c := range chunks {
		texts = append(texts, chunkEmbedText(titles[c.DocumentID], c.HeadingPath, c.Text))
	}
	for _, e := range entities {
		texts = append(texts, entityEmbedText(e.Name, e.Aliases, e.Role, e.Facts, e.Summary))
	}
	vecs, err := in.embedder.EmbedDocuments(ctx, texts)
	if err != nil {
		return fmt.Errorf("embed: %w", err)
	}
	if len(vecs) != len(texts) {
		return fmt.Errorf("embed: embedder returned %d vectors for %d texts", len(vecs), len(texts))
	}
	for _, v := range vecs {
		if len(v) != dim {
			return &DimensionError{Embedder: len(v), Schema: dim}
		}
	}
	var stored ReembedResult
	err = pgx.BeginFunc(ctx, in.pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		locked, err := q.ReembedLockDocuments(ctx, db.ReembedLockDocumentsParams{
			ProjectID: projectID, Ids: ids, ContentHashes: hashes, Embedders: embedders})
		if err != nil {
			return err
		}
		keep := make(map[int64]bool, len(locked))
		for _, id := range locked {
			keep[id] = true
		}
		var chunkIDs, entityIDs []int64
		var chunkVecs, entityVecs []*pgvector.Vector
		for i, c := range chunks {
			if keep[c.DocumentID] {
				v := pgvector.NewVector(vecs[i])
				chunkIDs, chunkVecs = append(chunkIDs, c.ID), append(chunkVecs, &v)
			}
		}
		for i, e := range entities {
			if keep[e.DocumentID] {
				v := pgvector.NewVector(vecs[len(chunks)+i])
				entityIDs, entityVecs = append(entityIDs, e.ID), append(entityVecs, &v)
			}
		}
		if err := q.ChunkEmbeddingsSet(ctx, db.ChunkEmbeddingsSetParams{ProjectID: projectID, Ids: chunkIDs, Embeddings: chunkVecs}); err != nil {
			return err
		}
		if len(entityIDs) > 0 {
			if err := q.EntityEmbeddingsSet(ctx, db.EntityEmbeddingsSetParams{ProjectID: projectID, Ids: entityIDs, Embeddings: entityVecs}); err != nil {
				return err
			}
		}
		if err := q.DocumentEmbedderSet(ctx, db.DocumentEmbedderSetParams{ProjectID: projectID, Embedder: identity, Ids: locked}); err != nil {
			return err
		}
		// The rows locked here were skipped by any refresh that ran meanwhile.
		if _, err := lifecycle.RefreshSupersession(ctx, q, projectID); err != nil {
			return err
		}
		stored = ReembedResult{Documents: len(locked), Skipped: len(batch) - len(locked), Chunks: len(chunkIDs), Entities: len(entityIDs)}
		return nil
	})
	if err != nil {
		return err
	}
	res.Documents += stored.Documents
	res.Skipped += stored.Skipped
	res.Chunks += stored.Chunks
	res.Entities += stored.Entities
	return nil
}
