// Package embed turns text into vectors for canon's semantic leg.
//
// Two embedders implement [Embedder]:
//
//   - "hash" ([NewHash]): model-free, offline, deterministic. The default.
//   - "openai" ([NewOpenAI]): any OpenAI-compatible POST {BaseURL}/embeddings
//     endpoint (OpenAI, Ollama, vLLM, text-embeddings-inference).
//
// [New] builds either from configuration; [NewCachedQueries] puts a small LRU with
// a TTL in front of EmbedQuery so that a chat that repeats or refines a question
// does not pay for the same query vector twice.
//
// # The hash embedder
//
// Text is lowercased and split into words (runs of letters and digits). English
// stop words (the Snowball list PostgreSQL's english configuration uses) are
// dropped. Each remaining word contributes its character 3-, 4- and 5-grams, taken
// from the word padded with a space on each side (so " exp" and "ing " mark
// prefixes and suffixes), plus the whole word as one more feature. A feature's
// weight is 1+ln(tf) of its count in the text. Features are hashed with 64-bit
// FNV-1a and the murmur3 finaliser into the vector's dimensions, one bit of the
// hash choosing the sign (signed feature hashing), and the vector is
// L2-normalised. There is no model, no network access, no random seed and no
// corpus statistic: the same text gives the same vector in every process, and a
// stored vector never goes stale as the corpus grows. A text with no letters or
// digits outside stop words yields the zero vector.
//
// What it captures: lexical and morphological similarity. Texts that share words,
// stems, inflections ("migrate", "migrations"), compounds, identifiers or
// misspellings land close together. What it does not capture: meaning. Synonyms
// and paraphrases without shared character sequences ("car" and "automobile",
// "outage" and "the service was down") are unrelated to it, and it knows nothing
// of negation or word order. It overlaps with the BM25 keyword leg, so rank
// fusion should lead with the keyword leg when it is the embedder; for semantic
// retrieval configure "openai" with a real embedding model.
//
// # Measurements
//
// nDCG@10 by exact in-memory cosine, document = title + " " + text, BEIR test
// qrels: SciFact (5,183 documents, 300 queries) and ArguAna (8,674 documents,
// 1,406 queries, a query's own document excluded). Variant rows are the mean over
// 5 (SciFact) or 3 (ArguAna) hash seeds, because which features collide is
// itself a source of variance (standard deviation across seeds 0.01–0.02 at 384
// dimensions): differences below about 0.01 are noise. The "shipped" row is
// [NewHash] itself. Reproduce with
// `go run ./embed/internal/measure -data <dir>/scifact` (add `-dropself` for
// ArguAna).
//
//	variant (stateless unless marked)                       SciFact 384  SciFact 768  ArguAna 384  ArguAna 768
//	word 1+2-grams + char 3-5 (prototype features, no IDF)     0.421        0.500        0.293        0.357
//	char 3-5                                                   0.435        0.508        0.312        0.367
//	char 3-5, stop words dropped                               0.456        0.523        0.352        0.404
//	char 3-4, stop words dropped                               0.464        0.528        0.324        0.374
//	char 3-5 across word boundaries, stop words dropped        0.420        0.505        0.281        0.360
//	char 3-5 + words, stop words dropped (the design)          0.455        0.521        0.355        0.414
//	shipped: NewHash (the design, seed 0)                      0.453        0.514        0.353        0.419
//	not stateless, for reference:
//	  IDF from the corpus itself, char 3-5, stop dropped       0.564        0.610        0.399        0.463
//	  IDF on the query side only (documents stateless)         0.496        0.578        0.350        0.425
//	  IDF frozen from the other data set (SciFact<->ArguAna)   0.555        0.596        0.396        0.441
//	  IDF frozen from an unrelated corpus, shipped features:
//	    Go's $GOROOT/src comments and text (194,475 docs)    0.521          –          0.423          –
//	    the same, its 20,000 most frequent features only     0.516          –          0.423          –
//	    the same, 5,000 features                             0.497          –            –            –
//	    Newton's Opticks (Go's src/testdata, 701 paragraphs) 0.504          –            –            –
//	BM25 keyword leg alone (prototype, k1 1.2 b 0.75)          0.689                     0.499
//
// Further SciFact variants, 384/768: raw tf 0.423/0.457, binary tf 0.239/0.355,
// sqrt tf 0.453/0.518; stop words weighted 0.3 instead of dropped 0.452/0.519;
// char 2-5 0.439/0.508, 3-6 0.454/0.519, 4-5 0.448/0.514, 4-6 0.445/0.503;
// longer n-grams weighted up 0.456/0.519; each feature in 2 buckets 0.455/0.515,
// in 4 buckets 0.464/0.515; words weighted 0.5 or 2 0.455/0.519 and 0.456/0.529;
// with word bigrams 0.450/0.521; long words weighted up 0.402/0.486.
//
// Why this design: sublinear tf (+0.01 to +0.05 over raw counts) and dropping
// stop words (+0.02 to +0.04) are the two stateless gains; word bigrams cost quality at these dimensions
// (collisions), as the prototype found; char 3-4 ties 3-5 on SciFact but loses
// 0.03 on ArguAna; the whole-word feature is neutral on SciFact and helps a
// little on ArguAna. IDF is worth about +0.1 on SciFact and +0.05 on ArguAna, but
// corpus IDF would make every stored vector depend on the corpus at the time it
// was embedded; canon's BM25 leg carries exact IDF instead. Notably, IDF taken
// from an unrelated corpus and frozen recovers most of that gain, which points
// to a shipped, fixed n-gram weight table as the way to improve this embedder
// without corpus state. Measured (bench/results/quality-no-model.md): a table of
// the 20,000 features most frequent in the Go standard library's comments
// raises this embedder alone from 0.462 to 0.519 on SciFact in canon (HNSW) and
// RRF from 0.667 to 0.690; the default weighted fusion moves from 0.7059 to
// 0.7060 on SciFact and from 0.5152 to 0.5213 on ArguAna. Not shipped yet: it
// changes every stored vector.
//
// Speed (BenchmarkHashEmbed): a 300-word chunk takes about 0.4 ms of CPU; 10,000
// such chunks took 6-8 s of wall time on a 2-vCPU machine under a load average
// of 9, on one goroutine or two.
package embed
