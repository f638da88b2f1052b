package embed

import (
	"bufio"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// hashGoldenTexts exercise every part of the feature function: the whole
// PostgreSQL english stop list (each word must stay dropped), words that are
// close to stop words but are not on the list, case, repetition, non-ASCII
// letters, digits and identifiers.
var hashGoldenTexts = []string{
	"Rotate the TLS certificates before they expire. Rotate them again; rotate often!",
	"How do we deploy the billing service to production?",
	// The 127 words of PostgreSQL's english.stop, each between two content words.
	"alpha i me my myself we our ours ourselves you your yours yourself yourselves he him his himself " +
		"she her hers herself it its itself they them their theirs themselves what which who whom this that " +
		"these those am is are was were be been being have has had having do does did doing a an the and " +
		"but if or because as until while of at by for with about against between into through during " +
		"before after above below to from up down in out on off over under again further then once here " +
		"there when where why how all any both each few more most other some such no nor not only own same " +
		"so than too very s t can will just don should now omega",
	"ALSO would could don't isn't shall may via per using used one two tell explain describe",
	"Straße naïve café — Ærøskøbing, 東京, señor; ПРИВЕТ мир",
	"error E5032 at v2.3.1 in pg_stat_statements: max_connections=200 (k8s, 42, 2024-11-05)",
	"migrate migrations migrating migrated Migration",
	"",
	"...!?",
}

type hashGolden struct {
	Dim    int       `json:"dim"`
	Text   string    `json:"text"`
	Vector []float32 `json:"vector"`
}

// Stored vectors are compared with query vectors made by later builds, so the
// hash embedder's output is pinned component by component: a change here means
// every user's stored embeddings silently stop matching. The tolerance only
// allows for floating-point differences between architectures.
func TestHashGoldenVectors(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "hash_vectors.golden")
	var got []hashGolden
	for _, dim := range []int{384, 768} {
		for _, text := range hashGoldenTexts {
			got = append(got, hashGolden{Dim: dim, Text: text, Vector: mustQuery(t, NewHash(dim), text)})
		}
	}
	if *update {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		for _, g := range got {
			if err := enc.Encode(g); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var want []hashGolden
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var g hashGolden
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatal(err)
		}
		want = append(want, g)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(got) {
		t.Fatalf("%s holds %d vectors, the test makes %d: run go test ./embed -run TestHashGoldenVectors -update", path, len(want), len(got))
	}
	for i, w := range want {
		g := got[i]
		if w.Dim != g.Dim || w.Text != g.Text || len(w.Vector) != len(g.Vector) {
			t.Fatalf("golden entry %d is for %q at %d, the test makes %q at %d", i, w.Text, w.Dim, g.Text, g.Dim)
		}
		for k := range w.Vector {
			if math.Abs(float64(w.Vector[k]-g.Vector[k])) > 1e-6 {
				t.Errorf("%q at dim %d: component %d is %v, pinned %v; the hash embedder's output changed, which invalidates every stored vector",
					g.Text, g.Dim, k, g.Vector[k], w.Vector[k])
				break
			}
		}
	}
}
