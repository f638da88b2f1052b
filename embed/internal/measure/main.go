// Command measure compares variants of the model-free hash embedding on a BEIR
// dataset (SciFact's layout: corpus.jsonl, queries.jsonl, qrels/test.tsv) by exact
// in-memory cosine and nDCG@10. It backs the choice of the shipped configuration
// and the table in package embed's documentation. It is built by `go build ./...`
// and never run by tests:
//
//	go run ./embed/internal/measure -data ../shared/datasets/scifact
//
// The dataset stays where it is; nothing is copied into the repository.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/embed/internal/hashfeat"
)

type variant struct {
	name string
	cfg  hashfeat.Config
	// idf weighs features by corpus IDF on both sides ("both") or on the query
	// side only ("query"); neither is stateless, both are measured for reference.
	idf string
}

func main() {
	data := flag.String("data", "", "BEIR dataset directory (corpus.jsonl, queries.jsonl, qrels/test.tsv)")
	dims := flag.String("dims", "384,768", "comma-separated dimensions")
	only := flag.String("only", "", "run only variants whose name matches this regular expression")
	dropSelf := flag.Bool("dropself", false, "never rank a document whose id is the query's (ArguAna: queries are corpus documents)")
	prior := flag.String("prior", "", "another BEIR dataset whose corpus IDF is tried as a frozen, out-of-domain weight table")
	priorText := flag.String("prior-text", "", "comma-separated text files or directories used as the frozen-IDF corpus instead of -prior (a paragraph, or a Go file's comment block, is one document)")
	seeds := flag.Int("seeds", 5, "hash seeds to average over (bucket and sign assignments)")
	flag.Parse()
	if *data == "" {
		fmt.Fprintln(os.Stderr, "usage: measure -data DIR [-dims 384,768] [-only REGEXP] [-seeds N] [-prior DIR] [-dropself]")
		os.Exit(2)
	}
	onlyRE, err := regexp.Compile(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "measure: -only:", err)
		os.Exit(2)
	}
	ds, err := load(*data)
	if ds != nil {
		ds.dropSelf = *dropSelf
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		os.Exit(1)
	}
	if *prior != "" {
		p, err := load(*prior)
		if err != nil {
			fmt.Fprintln(os.Stderr, "measure:", err)
			os.Exit(1)
		}
		ds.prior = p.docs
	}
	if *priorText != "" {
		docs, err := loadText(strings.Split(*priorText, ","))
		if err != nil {
			fmt.Fprintln(os.Stderr, "measure:", err)
			os.Exit(1)
		}
		ds.prior = docs
		fmt.Printf("reference corpus: %d documents\n", len(docs))
	}
	ctx := context.Background()
	fmt.Printf("%d docs, %d test queries\n\n", len(ds.docs), len(ds.queries))
	fmt.Printf("mean over %d hash seeds (± is the standard deviation across seeds; seed 0 ships)\n\n", *seeds)
	fmt.Println("| variant | dim | nDCG@10 | ± | seed 0 | Recall@100 | embed s/seed |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, d := range strings.Split(*dims, ",") {
		dim, err := strconv.Atoi(strings.TrimSpace(d))
		if err != nil {
			fmt.Fprintln(os.Stderr, "measure: bad dim:", d)
			os.Exit(2)
		}
		for _, v := range variants() {
			if !onlyRE.MatchString(v.name) {
				continue
			}
			var ndcgs, recalls []float64
			start := time.Now()
			for seed := range *seeds {
				v.cfg.Seed = uint64(seed)
				docVecs, qVecs := ds.embed(v, dim)
				ndcg, recall := ds.evaluate(docVecs, qVecs)
				ndcgs, recalls = append(ndcgs, ndcg), append(recalls, recall)
			}
			secs := time.Since(start).Seconds() / float64(*seeds)
			m, sd := meanSD(ndcgs)
			r, _ := meanSD(recalls)
			fmt.Printf("| %s | %d | %.3f | %.3f | %.3f | %.3f | %.1f |\n", v.name, dim, m, sd, ndcgs[0], r, secs)
		}
		// The shipped embedder, through the public API, to confirm it matches the
		// variant it claims to be.
		if onlyRE.MatchString("shipped: embed.NewHash") {
			start := time.Now()
			h := embed.NewHash(dim)
			docVecs := make([][]float32, len(ds.docs))
			parallel(len(ds.docs), func(i int, _ *hashfeat.Scratch) {
				v, _ := h.EmbedQuery(ctx, ds.docs[i].text)
				docVecs[i] = v
			})
			qVecs, _ := h.EmbedDocuments(ctx, ds.queryTexts())
			secs := time.Since(start).Seconds()
			ndcg, recall := ds.evaluate(docVecs, qVecs)
			fmt.Printf("| shipped: embed.NewHash | %d | | | %.3f | %.3f | %.1f |\n", dim, ndcg, recall, secs)
		}
	}
}

func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	if len(xs) > 1 {
		sd = math.Sqrt(sd / float64(len(xs)-1))
	}
	return mean, sd
}

func variants() []variant {
	c35 := hashfeat.Config{MinN: 3, MaxN: 5, StopWeight: 1}
	with := func(base hashfeat.Config, f func(*hashfeat.Config)) hashfeat.Config {
		f(&base)
		return base
	}
	nostop := with(c35, func(c *hashfeat.Config) { c.StopWeight = 0 })
	shipped := with(nostop, func(c *hashfeat.Config) { c.WordWeight = 1 })
	return []variant{
		{name: "prototype: word 1+2-grams + char 3-5, no IDF", cfg: hashfeat.Config{MinN: 3, MaxN: 5, StopWeight: 1, WordWeight: 1, BigramWeight: 1}},
		{name: "char 3-5", cfg: c35},
		{name: "char 3-5, raw tf", cfg: with(c35, func(c *hashfeat.Config) { c.TF = hashfeat.TFRaw })},
		{name: "char 3-5, binary tf", cfg: with(c35, func(c *hashfeat.Config) { c.TF = hashfeat.TFBinary })},
		{name: "char 3-5, stop words x0.3", cfg: with(c35, func(c *hashfeat.Config) { c.StopWeight = 0.3 })},
		{name: "char 3-5, stop words dropped", cfg: nostop},
		{name: "char 3-5, stop dropped, across words", cfg: with(nostop, func(c *hashfeat.Config) { c.CrossWord = true })},
		{name: "char 2-5, stop dropped", cfg: with(nostop, func(c *hashfeat.Config) { c.MinN = 2 })},
		{name: "char 3-4, stop dropped", cfg: with(nostop, func(c *hashfeat.Config) { c.MaxN = 4 })},
		{name: "char 3-6, stop dropped", cfg: with(nostop, func(c *hashfeat.Config) { c.MaxN = 6 })},
		{name: "char 4-5, stop dropped", cfg: with(nostop, func(c *hashfeat.Config) { c.MinN = 4 })},
		{name: "char 4-6, stop dropped", cfg: with(nostop, func(c *hashfeat.Config) { c.MinN, c.MaxN = 4, 6 })},
		{name: "char 3-5 weighted 0.5/0.75/1 by n, stop dropped", cfg: with(nostop, func(c *hashfeat.Config) { c.NWeights = []float64{0.5, 0.75, 1} })},
		{name: "char 3-5, stop dropped, 2 probes", cfg: with(nostop, func(c *hashfeat.Config) { c.Probes = 2 })},
		{name: "char 3-5, stop dropped, 4 probes", cfg: with(nostop, func(c *hashfeat.Config) { c.Probes = 4 })},
		{name: "char 3-5 + words x0.5, stop dropped", cfg: with(nostop, func(c *hashfeat.Config) { c.WordWeight = 0.5 })},
		{name: "char 3-5 + words x1, stop dropped", cfg: with(nostop, func(c *hashfeat.Config) { c.WordWeight = 1 })},
		{name: "char 3-5 + words x2, stop dropped", cfg: with(nostop, func(c *hashfeat.Config) { c.WordWeight = 2 })},
		{name: "char 3-5 + words x1 + bigrams x0.5, stop dropped", cfg: with(nostop, func(c *hashfeat.Config) { c.WordWeight, c.BigramWeight = 1, 0.5 })},
		{name: "char 3-5, stop dropped, word length^0.5", cfg: with(nostop, func(c *hashfeat.Config) { c.WordLenWeight = 0.5 })},
		{name: "char 3-5, stop dropped, word length^1", cfg: with(nostop, func(c *hashfeat.Config) { c.WordLenWeight = 1 })},
		{name: "char 3-5, stop dropped, sqrt tf", cfg: with(nostop, func(c *hashfeat.Config) { c.TF = hashfeat.TFSqrt })},
		{name: "char 3-4 + words x1, stop dropped", cfg: with(nostop, func(c *hashfeat.Config) { c.MaxN, c.WordWeight = 4, 1 })},
		{name: "char 3-4 + words x2, stop dropped", cfg: with(nostop, func(c *hashfeat.Config) { c.MaxN, c.WordWeight = 4, 2 })},
		{name: "char 3-4, stop dropped, 4 probes", cfg: with(nostop, func(c *hashfeat.Config) { c.MaxN, c.Probes = 4, 4 })},
		{name: "reference (IDF, not stateless): char 3-5", cfg: c35, idf: "both"},
		{name: "reference (frozen IDF of another corpus): char 3-5, stop dropped", cfg: nostop, idf: "prior"},
		{name: "reference (frozen IDF of another corpus, top 2000 features): char 3-5, stop dropped", cfg: nostop, idf: "prior-top2000"},
		{name: "shipped + frozen IDF of the reference corpus", cfg: shipped, idf: "prior"},
		{name: "shipped + frozen IDF of the reference corpus, top 50000 features", cfg: shipped, idf: "prior-top50000"},
		{name: "shipped + frozen IDF of the reference corpus, top 20000 features", cfg: shipped, idf: "prior-top20000"},
		{name: "shipped + frozen IDF of the reference corpus, top 20000 features, others at the cut", cfg: shipped, idf: "prior-top20000-cut"},
		{name: "shipped + frozen IDF of the reference corpus, top 5000 features", cfg: shipped, idf: "prior-top5000"},
		{name: "shipped + frozen IDF of the reference corpus, top 5000 features, others at the cut", cfg: shipped, idf: "prior-top5000-cut"},
		{name: "shipped + frozen IDF of the reference corpus, top 2000 features", cfg: shipped, idf: "prior-top2000"},
		{name: "reference (query-side IDF, documents stateless): char 3-5, stop dropped", cfg: nostop, idf: "query"},
		{name: "reference (IDF, not stateless): char 3-5, stop dropped", cfg: nostop, idf: "both"},
		{name: "reference (IDF, not stateless): char 3-5 + words x1, stop dropped", cfg: with(nostop, func(c *hashfeat.Config) { c.WordWeight = 1 }), idf: "both"},
	}
}

type doc struct{ id, text string }

type dataset struct {
	docs    []doc
	queries []doc                     // test queries only
	qrels   map[string]map[string]int // query id -> doc id -> grade
	prior   []doc                     // an unrelated corpus for frozen-IDF variants
	// weightCache holds each variant's weight table across seeds.
	weightCache map[string]func(uint64) float64
	dropSelf    bool
}

func (ds *dataset) queryTexts() []string {
	out := make([]string, len(ds.queries))
	for i, q := range ds.queries {
		out[i] = q.text
	}
	return out
}

func (ds *dataset) embed(v variant, dim int) (docVecs, qVecs [][]float32) {
	weight := ds.weights(v)
	one := func(text string, w func(uint64) float64, s *hashfeat.Scratch) []float32 {
		out := make([]float32, dim)
		v.cfg.Embed(text, out, w, s)
		return out
	}
	docWeight := weight
	if v.idf == "query" {
		docWeight = nil
	}
	docVecs = make([][]float32, len(ds.docs))
	parallel(len(ds.docs), func(i int, s *hashfeat.Scratch) { docVecs[i] = one(ds.docs[i].text, docWeight, s) })
	qVecs = make([][]float32, len(ds.queries))
	parallel(len(ds.queries), func(i int, s *hashfeat.Scratch) { qVecs[i] = one(ds.queries[i].text, weight, s) })
	return docVecs, qVecs
}

// weights returns the feature weight table of a variant (nil for none), computed
// once per variant and reused across seeds (seeds change buckets, not features).
func (ds *dataset) weights(v variant) func(uint64) float64 {
	key := v.name
	if w, ok := ds.weightCache[key]; ok {
		return w
	}
	var weight func(uint64) float64
	switch v.idf {
	case "both", "query":
		weight = idf(ds.docs, v.cfg, 0, false)
	case "prior":
		weight = idf(ds.prior, v.cfg, 0, false)
	default:
		if n, ok := strings.CutPrefix(v.idf, "prior-top"); ok {
			n, cut := strings.CutSuffix(n, "-cut")
			top, err := strconv.Atoi(n)
			if err != nil {
				panic("measure: bad idf variant " + v.idf)
			}
			weight = idf(ds.prior, v.cfg, top, cut)
		}
	}
	if ds.weightCache == nil {
		ds.weightCache = map[string]func(uint64) float64{}
	}
	ds.weightCache[key] = weight
	return weight
}

// idf returns Lucene's idf, ln(1 + (N - df + 0.5)/(df + 0.5)), of each feature
// over docs; features unseen in docs get the maximum. top > 0 keeps only the top
// most frequent features, as a small shipped table would.
// With cut, features outside the top get the idf of the least frequent kept one
// instead of the maximum.
func idf(docs []doc, cfg hashfeat.Config, top int, cut bool) func(uint64) float64 {
	df := map[uint64]int{}
	unseen := 0
	s := hashfeat.NewScratch()
	for _, d := range docs {
		for h := range cfg.Count(d.text, s) {
			df[h]++
		}
	}
	if top > 0 && len(df) > top {
		dfs := make([]int, 0, len(df))
		for _, f := range df {
			dfs = append(dfs, f)
		}
		slices.Sort(dfs)
		minDF := dfs[len(dfs)-top]
		for h, f := range df {
			if f < minDF {
				delete(df, h)
			}
		}
		if cut {
			unseen = minDF
		}
	}
	n := float64(len(docs))
	return func(h uint64) float64 {
		f, ok := df[h]
		if !ok {
			f = unseen
		}
		x := float64(f)
		return math.Log(1 + (n-x+0.5)/(x+0.5))
	}
}

func (ds *dataset) evaluate(docVecs, qVecs [][]float32) (ndcg10, recall100 float64) {
	type hit struct {
		doc   int
		score float32
	}
	ndcgs := make([]float64, len(ds.queries))
	recalls := make([]float64, len(ds.queries))
	parallel(len(ds.queries), func(qi int, _ *hashfeat.Scratch) {
		q := qVecs[qi]
		hits := make([]hit, 0, len(docVecs))
		for i, d := range docVecs {
			if ds.dropSelf && ds.docs[i].id == ds.queries[qi].id {
				continue
			}
			var dot float32
			for k := range q {
				dot += q[k] * d[k]
			}
			hits = append(hits, hit{i, dot})
		}
		slices.SortFunc(hits, func(a, b hit) int {
			if a.score != b.score {
				if a.score > b.score {
					return -1
				}
				return 1
			}
			return strings.Compare(ds.docs[a.doc].id, ds.docs[b.doc].id)
		})
		rel := ds.qrels[ds.queries[qi].id]
		var dcg float64
		for i := 0; i < 10 && i < len(hits); i++ {
			if g := rel[ds.docs[hits[i].doc].id]; g > 0 {
				dcg += float64(g) / math.Log2(float64(i)+2)
			}
		}
		grades := make([]int, 0, len(rel))
		for _, g := range rel {
			grades = append(grades, g)
		}
		slices.SortFunc(grades, func(a, b int) int { return b - a })
		var idcg float64
		for i := 0; i < 10 && i < len(grades); i++ {
			idcg += float64(grades[i]) / math.Log2(float64(i)+2)
		}
		if idcg > 0 {
			ndcgs[qi] = dcg / idcg
		}
		var found, total int
		for _, g := range grades {
			if g > 0 {
				total++
			}
		}
		for i := 0; i < 100 && i < len(hits); i++ {
			if rel[ds.docs[hits[i].doc].id] > 0 {
				found++
			}
		}
		if total > 0 {
			recalls[qi] = float64(found) / float64(total)
		}
	})
	for i := range ndcgs {
		ndcg10 += ndcgs[i]
		recall100 += recalls[i]
	}
	n := float64(len(ds.queries))
	return ndcg10 / n, recall100 / n
}

// parallel runs f(i) for i in [0,n) on GOMAXPROCS goroutines, each with its own
// scratch buffers.
func parallel(n int, f func(i int, s *hashfeat.Scratch)) {
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := hashfeat.NewScratch()
			for i := w; i < n; i += workers {
				f(i, s)
			}
		}()
	}
	wg.Wait()
}

func load(dir string) (*dataset, error) {
	ds := &dataset{qrels: map[string]map[string]int{}}
	err := readJSONL(filepath.Join(dir, "corpus.jsonl"), func(id, title, text string) {
		ds.docs = append(ds.docs, doc{id, title + " " + text})
	})
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(dir, "qrels", "test.tsv"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for first := true; sc.Scan(); first = false {
		fields := strings.Split(sc.Text(), "\t")
		if first || len(fields) < 3 {
			continue // header: query-id corpus-id score
		}
		g, err := strconv.Atoi(fields[2])
		if err != nil {
			return nil, fmt.Errorf("qrels: %q: %w", sc.Text(), err)
		}
		if ds.qrels[fields[0]] == nil {
			ds.qrels[fields[0]] = map[string]int{}
		}
		ds.qrels[fields[0]][fields[1]] = g
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	err = readJSONL(filepath.Join(dir, "queries.jsonl"), func(id, _, text string) {
		if _, ok := ds.qrels[id]; ok {
			ds.queries = append(ds.queries, doc{id, text})
		}
	})
	return ds, err
}

func readJSONL(path string, f func(id, title, text string)) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var rec struct {
			ID    string `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		f(rec.ID, rec.Title, rec.Text)
	}
	return sc.Err()
}

// loadText reads reference documents for frozen-IDF variants: each blank-line
// separated paragraph of a text file, and each block of // comment lines of a Go
// file, is one document. Directories are walked for *.txt and *.go files.
func loadText(paths []string) ([]doc, error) {
	var docs []doc
	for _, root := range paths {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			isGo := strings.HasSuffix(path, ".go")
			if !isGo && !strings.HasSuffix(path, ".txt") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			var para []string
			flush := func() {
				if len(para) > 0 {
					docs = append(docs, doc{path, strings.Join(para, " ")})
					para = para[:0]
				}
			}
			for _, line := range strings.Split(string(b), "\n") {
				line = strings.TrimSpace(line)
				if isGo {
					c, ok := strings.CutPrefix(line, "//")
					if !ok {
						flush()
						continue
					}
					line = strings.TrimSpace(c)
				}
				if line == "" {
					flush()
					continue
				}
				para = append(para, line)
			}
			flush()
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return docs, nil
}
