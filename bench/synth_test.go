package bench_test

import (
	"bytes"
	"testing"

	"github.com/canonkb/canon/bench"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/markdown"
)

func synthFiles(t *testing.T, chunks int, seed uint64) ([]ingest.File, *bench.Synth) {
	t.Helper()
	words, err := bench.HandbookVocabulary("../examples/handbook")
	if err != nil {
		t.Fatal(err)
	}
	g, err := bench.NewSynth(bench.SynthOptions{Chunks: chunks, Seed: seed, Project: "syn", Words: words, Terms: 2000,
		Chunking: markdown.Options{ChunkTokens: 512, OverlapTokens: 64}})
	if err != nil {
		t.Fatal(err)
	}
	var files []ingest.File
	for {
		f, _, ok, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return files, g
		}
		files = append(files, f)
	}
}

func TestSynthIsDeterministicAndExact(t *testing.T) {
	a, g := synthFiles(t, 997, 7)
	b, _ := synthFiles(t, 997, 7)
	if len(a) != len(b) {
		t.Fatalf("%d files, then %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Path != b[i].Path || !bytes.Equal(a[i].Content, b[i].Content) {
			t.Fatalf("file %d differs between runs", i)
		}
	}
	if c, _ := synthFiles(t, 997, 8); bytes.Equal(a[5].Content, c[5].Content) {
		t.Error("another seed gave the same document")
	}
	total, kinds := 0, map[string]int{}
	for _, f := range a {
		doc, err := markdown.Parse(f.Path, f.Content, markdown.Options{ChunkTokens: 512, OverlapTokens: 64})
		if err != nil {
			t.Fatalf("%s: %v\n%s", f.Path, err, f.Content)
		}
		total += len(doc.Chunks)
		kind := doc.CanonicalType + doc.EntityType
		if doc.SourceType == "meeting-notes" {
			kind = "meeting"
		}
		kinds[kind]++
		if len(doc.Links) > 0 {
			kinds["with links"]++
		}
	}
	if total != 997 || g.Chunks() != 997 {
		t.Errorf("%d chunks (generator says %d), want 997", total, g.Chunks())
	}
	for _, k := range []string{"decision", "runbook", "rejected-approach", "person", "meeting", "", "with links"} {
		if kinds[k] == 0 {
			t.Errorf("no %q documents among %d: %v", k, len(a), kinds)
		}
	}
	qs := g.Queries(20)
	if len(qs) != 20 || qs[0] == qs[1] {
		t.Errorf("queries: %q", qs)
	}
}
