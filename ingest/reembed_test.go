package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"

	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/markdown"
)

// negatedHash speaks the OpenAI embeddings wire format; each text embeds to
// the hash embedder's vector for it, negated. After a reembed every stored
// vector must be the negation of what ingest stored: the texts were rebuilt
// exactly. failFrom, when > 0, fails that request and every later one.
type negatedHash struct {
	hash *embed.Hash

	mu       sync.Mutex
	requests int
	embedded int // texts answered
	failFrom int
}

func (f *negatedHash) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Input []string `json:"input"`
		Model string   `json:"model"`
	}
	if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&body) != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests++
	fail := f.failFrom > 0 && f.requests >= f.failFrom
	if !fail {
		f.embedded += len(body.Input)
	}
	f.mu.Unlock()
	if fail {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"injected failure","type":"invalid_request_error"}}`)
		return
	}
	vecs, _ := f.hash.EmbedDocuments(r.Context(), body.Input)
	type datum struct {
		Object    string    `json:"object"`
		Embedding []float32 `json:"embedding"`
		Index     int       `json:"index"`
	}
	data := make([]datum, len(vecs))
	for i, v := range vecs {
		for k := range v {
			v[k] = -v[k]
		}
		data[i] = datum{"embedding", v, i}
	}
	w.Header().Set("Content-Type", "application/json")
	// A failed write shows as a broken response in the test that made it.
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": body.Model,
		"usage": map[string]int{"prompt_tokens": 1, "total_tokens": 1}})
}

// reembedCorpus is 30 documents of 20 sections (several batches of chunks)
// and two people, whose entity vectors are re-embedded too.
func reembedCorpus() []ingest.File {
	var files []ingest.File
	for i := range 30 {
		var b strings.Builder
		fmt.Fprintf(&b, "# Service %d\n\n", i)
		for j := range 20 {
			fmt.Fprintf(&b, "## Part %d\n\nService %d keeps its part %d in the cache for a while.\n\n", j, i, j)
		}
		files = append(files, file(fmt.Sprintf("svc/%02d.md", i), b.String()))
	}
	files = append(files,
		file("people/dana.md", "---\ntype: person\naliases: [D. Okafor]\nrole: Platform lead\nfacts: [\"owns the cache\"]\n---\n# Dana Okafor\n\nDana leads the platform team.\n"),
		file("people/lee.md", "---\ntype: person\nrole: SRE\n---\n# Lee\n\nLee runs the on-call rota.\n"))
	return files
}

// vectors reads every stored chunk and entity vector by row.
func vectors(t *testing.T, pool *pgxpool.Pool) map[string][]float32 {
	t.Helper()
	out := map[string][]float32{}
	for _, sql := range []string{"SELECT 'c' || id, embedding FROM chunks", "SELECT 'e' || id, embedding FROM entities"} {
		rows, err := pool.Query(context.Background(), sql)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var key string
			var v pgvector.Vector
			if err := rows.Scan(&key, &v); err != nil {
				t.Fatal(err)
			}
			out[key] = v.Slice()
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestReembedResumesAndMatchesIngest(t *testing.T) {
	t.Parallel()
	hashIn, pool := newIngester(t)
	run(t, hashIn, "re", false, reembedCorpus()...)
	before := vectors(t, pool)
	nChunks := scalar[int64](t, pool, "SELECT count(*) FROM chunks")
	if nChunks < 600 || len(before) != int(nChunks)+2 {
		t.Fatalf("corpus: %d chunks, %d vectors", nChunks, len(before))
	}

	fake := &negatedHash{hash: embed.NewHash(384), failFrom: 3}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	// One request per batch, never retried: the injected failure stops the run.
	openai, err := embed.NewOpenAI(embed.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "negated-hash", Dim: 384,
		BatchSize: 1000, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	in := ingest.New(pool, openai, markdown.Options{ChunkTokens: 512, OverlapTokens: 64})
	identity := ingest.EmbedderIdentity(openai)

	// Search keeps answering during the run: nearest-neighbour reads through
	// the HNSW index, each given a second, run beside it without pause.
	stop := make(chan struct{})
	searched := make(chan int)
	go func() {
		n := 0
		defer func() { searched <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			hits := 0
			err := pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT c.id FROM chunks c
				WHERE c.project_id = (SELECT id FROM projects WHERE project_key = 're')
				ORDER BY c.embedding <=> (SELECT embedding FROM chunks ORDER BY id LIMIT 1) LIMIT 5) s`).Scan(&hits)
			cancel()
			if err != nil || hits != 5 {
				t.Errorf("search during reembed: %d hits, %v", hits, err)
				return
			}
			n++
		}
	}()
	var progress ingest.Progress

	// The first run stops at its third batch: two batches stay committed.
	res, err := in.Reembed(context.Background(), "re", progress)
	if err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("want the injected failure, got %v", err)
	}
	doneAfterStop := scalar[int64](t, pool, "SELECT count(*) FROM documents WHERE embedder = $1", identity)
	if doneAfterStop == 0 || doneAfterStop >= 32 || int(doneAfterStop) != res.Documents {
		t.Fatalf("after the stop: %d documents done, result %+v", doneAfterStop, res)
	}

	// The second run does the rest, and nothing twice.
	fake.mu.Lock()
	fake.failFrom = 0
	fake.mu.Unlock()
	res, err = in.Reembed(context.Background(), "re", progress)
	if err != nil {
		t.Fatal(err)
	}
	if res.Documents != 32-int(doneAfterStop) || res.Remaining != 0 || res.Skipped != 0 || res.Entities == 0 {
		t.Errorf("second run: %+v", res)
	}
	if fake.embedded != len(before) {
		t.Errorf("the fake embedded %d texts for %d vectors: a batch was done twice or missed", fake.embedded, len(before))
	}
	close(stop)
	if n := <-searched; n < 3 {
		t.Errorf("search ran %d times during the runs", n)
	}
	after := vectors(t, pool)
	for key, old := range before {
		v := after[key]
		for k := range old {
			if v[k] != -old[k] {
				t.Fatalf("%s: vector is not the new embedder's for the same text", key)
			}
		}
	}

	// Done: another reembed has nothing to do, and an ingest with the new
	// embedder finds every file unchanged.
	res, err = in.Reembed(context.Background(), "re", nil)
	if err != nil || res.Documents != 0 {
		t.Errorf("third run: %+v %v", res, err)
	}
	fp := fingerprint(t, pool)
	if res := run(t, in, "re", false, reembedCorpus()...); res.Unchanged != 32 {
		t.Errorf("ingest after reembed: %+v", res)
	}
	if fingerprint(t, pool) != fp {
		t.Error("ingest after reembed wrote rows")
	}
}

func TestReembedRefuses(t *testing.T) {
	t.Parallel()
	_, pool := newIngester(t)
	in := ingest.New(pool, embed.NewHash(256), markdown.Options{})
	run(t, ingest.New(pool, embed.NewHash(384), markdown.Options{}), "dim", false, file("a.md", "# A\n\ntext\n"))
	_, err := in.Reembed(context.Background(), "dim", nil)
	var dimErr *ingest.DimensionError
	if !errors.As(err, &dimErr) || !strings.Contains(err.Error(), "the embedder makes 256-dimensional vectors but chunks.embedding is vector(384)") ||
		!strings.Contains(err.Error(), "KB_EMBEDDING_DIM=256") {
		t.Errorf("dimension mismatch: %v", err)
	}
	if n := scalar[int64](t, pool, "SELECT count(*) FROM documents WHERE embedder = 'hash/256'"); n != 0 {
		t.Errorf("%d documents marked", n)
	}
	_, err = in.Reembed(context.Background(), "nope", nil)
	if err == nil || err.Error() != `no project "nope" (canon projects lists them)` {
		t.Errorf("unknown project: %v", err)
	}
}
