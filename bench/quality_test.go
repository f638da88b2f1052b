package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/canonkb/canon/bench"
	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/search"
)

// writeTinyBEIR writes a five-document collection whose keyword rankings are known:
// ids with upper case and a space (slug mapping), a query that is itself a corpus
// document (ignore_identical_ids), graded judgments in inverted order, an untitled
// document, and a judged document missing from the corpus.
func writeTinyBEIR(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := os.MkdirAll(filepath.Join(dir, "qrels"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("corpus.jsonl", strings.Join([]string{
		`{"_id": "d1", "title": "Orchards", "text": "Apples are a red fruit grown in orchards.", "metadata": {}}`,
		`{"_id": "d2", "title": "Tropics", "text": "Bananas are a yellow fruit grown in the tropics."}`,
		`{"_id": "Doc B", "title": "Baking", "text": "Banana bread needs ripe fruit and flour."}`,
		`{"_id": "d3", "title": "", "text": "Cars drive on roads and motorways."}`,
		`{"_id": "Q1", "title": "Claim", "text": "Red apples, red apples: apples are red."}`,
	}, "\n")+"\n")
	write("queries.jsonl", strings.Join([]string{
		`{"_id": "Q1", "text": "red apples", "metadata": {}}`,
		`{"_id": "q2", "text": "yellow bananas"}`,
		`{"_id": "q3", "text": "cars on motorways"}`,
		`{"_id": "q4", "text": "unjudged query"}`,
	}, "\n")+"\n")
	write("qrels/test.tsv", "query-id\tcorpus-id\tscore\n"+
		"Q1\td1\t1\n"+
		"q2\td2\t1\n"+
		"q2\tDoc B\t2\n"+
		"q3\td3\t1\n"+
		"q3\tgone\t1\n")
	return dir
}

func TestQualityOnTinyCollection(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.FreshPool(t)
	emb := embed.NewHash(384)
	ranking := domain.DefaultRanking(domain.ProfileHashKeywordLed)
	setup := bench.Setup{
		Pool:     pool,
		Ingester: ingest.New(pool, emb, markdown.Options{ChunkTokens: 512, OverlapTokens: 64}),
		Searcher: search.New(pool, emb, search.Config{Ranking: ranking, Profile: domain.ProfileHashKeywordLed}),
		Embedder: "hash/384", Profile: domain.ProfileHashKeywordLed, Ranking: ranking,
	}
	ds, err := bench.Load(writeTinyBEIR(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Docs) != 5 || len(ds.Queries) != 4 || strings.Join(ds.TestQueries, ",") != "Q1,q2,q3" || ds.Qrels["q2"]["Doc B"] != 2 {
		t.Fatalf("loaded %d docs, %d queries, test %v, qrels %v", len(ds.Docs), len(ds.Queries), ds.TestQueries, ds.Qrels)
	}

	rep, err := bench.Quality(ctx, ds, "", setup, bench.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Project != "beir-tiny" || rep.Ingest.Created != 5 || rep.Chunks != 5 || rep.Queries != 3 {
		t.Errorf("project %s, ingest %+v, %d chunks, %d queries", rep.Project, rep.Ingest, rep.Chunks, rep.Queries)
	}
	// The slugs stored are the encoded ids.
	rows, err := pool.Query(ctx, `SELECT slug FROM documents ORDER BY slug`)
	if err != nil {
		t.Fatal(err)
	}
	var slugs []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		slugs = append(slugs, s)
	}
	if got := strings.Join(slugs, " "); got != "%44oc%20%42 %511 d1 d2 d3" {
		t.Errorf("slugs %q", got)
	}

	byFusion := map[string]bench.Result{}
	for _, r := range rep.Results {
		byFusion[r.Fusion] = r
		for name, v := range map[string]float64{"nDCG@10": r.NDCG10, "R@10": r.Recall10, "R@100": r.Recall100, "MRR@10": r.MRR10} {
			if v < 0 || v > 1 || math.IsNaN(v) {
				t.Errorf("%s %s = %v", r.Fusion, name, v)
			}
		}
		if r.Queries != 3 || r.Rejected != 0 || r.P50Ms <= 0 || r.P95Ms < r.P50Ms {
			t.Errorf("%s: %+v", r.Fusion, r)
		}
	}
	if len(byFusion) != 4 {
		t.Fatalf("results for %d fusions, want 4", len(byFusion))
	}
	// keyword_only, hand-computed:
	//   Q1 "red apples": its own document Q1 ranks first and is dropped; d1 is next: nDCG 1.
	//   q2 "yellow bananas": d2 (both terms, score 1) before Doc B (banana, score 2):
	//      (1 + 2/log2 3) / (2 + 1/log2 3) = 0.859719.
	//   q3 "cars on motorways": d3 first; "gone" is judged but not in the corpus:
	//      1 / (1 + 1/log2 3) = 0.613147, recall 0.5.
	kw := byFusion[domain.FusionKeywordOnly]
	l3 := math.Log2(3)
	wantNDCG := (1 + (1+2/l3)/(2+1/l3) + 1/(1+1/l3)) / 3 // 0.824289
	if math.Abs(kw.NDCG10-wantNDCG) > 1e-6 || math.Abs(kw.NDCG10-0.824289) > 1e-6 {
		t.Errorf("keyword_only nDCG@10 = %.6f, want %.6f", kw.NDCG10, wantNDCG)
	}
	if want := (1 + 1 + 0.5) / 3.0; math.Abs(kw.Recall10-want) > 1e-9 || math.Abs(kw.Recall100-want) > 1e-9 {
		t.Errorf("keyword_only recall@10 %.6f, @100 %.6f, want %.6f", kw.Recall10, kw.Recall100, want)
	}
	if math.Abs(kw.MRR10-1) > 1e-9 {
		t.Errorf("keyword_only MRR@10 = %.6f, want 1", kw.MRR10)
	}

	// Loading again writes nothing.
	again, err := bench.Quality(ctx, ds, "", setup, bench.Options{Fusions: []string{domain.FusionKeywordOnly}})
	if err != nil {
		t.Fatal(err)
	}
	if again.Ingest.Unchanged != 5 || again.Ingest.Created+again.Ingest.Updated != 0 || again.Results[0].NDCG10 != kw.NDCG10 {
		t.Errorf("second run: ingest %+v, nDCG %v", again.Ingest, again.Results[0].NDCG10)
	}

	// Variants, query limit, parallel workers.
	v, err := bench.ParseVariant("k1=0.9,b=0.4,heading_boost=2")
	if err != nil {
		t.Fatal(err)
	}
	res, err := bench.Evaluate(ctx, setup.Searcher, ds, "beir-tiny", bench.Options{
		Fusions: []string{domain.FusionKeywordOnly, domain.FusionRRF}, Variants: []bench.Variant{{Name: "default"}, v},
		LimitQueries: 2, Parallel: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || res[0].Variant != "default" || res[2].Variant != v.Name || res[1].Fusion != domain.FusionRRF || res[0].Queries != 2 {
		t.Errorf("variant results: %+v", res)
	}
	if want := (1 + (1+2/l3)/(2+1/l3)) / 2; math.Abs(res[0].NDCG10-want) > 1e-6 {
		t.Errorf("first two queries nDCG@10 = %.6f, want %.6f", res[0].NDCG10, want)
	}

	// A bad override is an error, not a silent zero.
	bad, _ := bench.ParseVariant("bm25_b=2")
	if _, err := bench.Evaluate(ctx, setup.Searcher, ds, "beir-tiny", bench.Options{Variants: []bench.Variant{bad}}); err == nil || !domain.IsInvalid(err) {
		t.Errorf("bm25_b=2: err %v", err)
	}

	// Reports: text, Markdown, SVG (well-formed XML) and JSON.
	var text bytes.Buffer
	rep.Baselines = bench.BaselinesFor("scifact")
	rep.WriteText(&text)
	for _, want := range []string{"keyword_only", "0.8243", "BM25 flat (Anserini)", "0.6789"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	out := t.TempDir()
	paths, err := rep.WriteFiles(out)
	if err != nil || len(paths) != 3 {
		t.Fatalf("WriteFiles: %v %v", paths, err)
	}
	svg, _ := os.ReadFile(filepath.Join(out, "tiny.svg"))
	dec := xml.NewDecoder(bytes.NewReader(svg))
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("SVG is not well-formed: %v", err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "tiny.md"))
	if !strings.Contains(string(md), "](tiny.svg)") || !strings.Contains(string(md), "| default | keyword_only | 0.8243 |") {
		t.Errorf("markdown report:\n%s", md)
	}
	var back bench.Report
	b, _ := os.ReadFile(filepath.Join(out, "tiny.json"))
	if err := json.Unmarshal(b, &back); err != nil || len(back.Results) != 4 || back.Machine == nil || back.Machine.PGVector == "" {
		t.Errorf("json report: %v %+v", err, back.Machine)
	}
}
