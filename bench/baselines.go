package bench

import "slices"

// Baseline is a published result on a collection's test split.
type Baseline struct {
	System    string   `json:"system"`
	NDCG10    float64  `json:"ndcg_at_10"`
	Recall100 *float64 `json:"recall_at_100,omitempty"`
	Source    string   `json:"source"`
}

func f(v float64) *float64 { return &v }

// baselines: published figures by collection name, copied from the SOURCE.md that ships with
// each collection (../shared/datasets/<name>/SOURCE.md). The Anserini/Pyserini
// numbers are the reproducible reference and drop self-matches the way this
// harness does; the BEIR-paper figures come via a third-party transcription.
var baselines = map[string][]Baseline{
	"scifact": {
		{"BM25 flat (Anserini)", 0.6789, f(0.9253), "castorini/anserini docs/regressions/regressions-beir-v1.0.0-scifact.flat.md; castorini/pyserini pyserini/2cr/beir.yaml"},
		{"BM25 multifield (Anserini)", 0.6647, f(0.9076), "castorini/anserini docs/regressions/regressions-beir-v1.0.0-scifact.multifield.md; pyserini/2cr/beir.yaml"},
		{"BM25 (BEIR paper, Elasticsearch)", 0.665, nil, "BEIR paper Table 2 (third-party transcription)"},
		{"SPLADE++ ED", 0.7041, f(0.9353), "pyserini/2cr/beir.yaml"},
		{"contriever-msmarco", 0.6768, f(0.947), "pyserini/2cr/beir.yaml"},
		{"bge-small-en-v1.5", 0.71273, f(0.945), "embeddings-benchmark/results BAAI__bge-small-en-v1.5 SciFact.json (MTEB)"},
		{"bge-base-en-v1.5", 0.7408, f(0.9667), "pyserini/2cr/beir.yaml"},
	},
	"arguana": {
		{"BM25 flat (Anserini)", 0.3970, f(0.9324), "castorini/anserini docs/regressions/regressions-beir-v1.0.0-arguana.flat.md; castorini/pyserini pyserini/2cr/beir.yaml"},
		{"BM25 multifield (Anserini)", 0.4142, f(0.9431), "castorini/anserini docs/regressions/regressions-beir-v1.0.0-arguana.multifield.md; pyserini/2cr/beir.yaml"},
		{"BM25 (BEIR paper, Elasticsearch)", 0.315, nil, "BEIR paper Table 2 (third-party transcription)"},
		{"SPLADE++ ED", 0.5203, f(0.9744), "pyserini/2cr/beir.yaml"},
		{"contriever-msmarco", 0.4461, f(0.9765), "pyserini/2cr/beir.yaml"},
		{"all-MiniLM-L6-v2", 0.50167, f(0.97724), "embeddings-benchmark/results sentence-transformers__all-MiniLM-L6-v2 ArguAna.json (MTEB)"},
		{"bge-base-en-v1.5", 0.6362, f(0.9915), "pyserini/2cr/beir.yaml"},
	},
}

// BaselinesFor returns the published baselines of a collection (a copy).
func BaselinesFor(collection string) []Baseline { return slices.Clone(baselines[collection]) }
