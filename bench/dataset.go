// Package bench measures canon's retrieval quality on public IR test collections
// in the BEIR layout (corpus.jsonl, queries.jsonl, qrels/test.tsv): it loads a
// collection into a project of its own through the normal ingest path, runs every
// judged test query through the normal search path with each fusion method, and
// scores the rankings with the standard BEIR metrics (nDCG@10, Recall@10,
// Recall@100, MRR@10) next to published baselines.
//
// Evaluation follows BEIR and Pyserini: a retrieved document whose id equals the
// query id is dropped (ignore_identical_ids / --remove-query), a document's score is
// its best chunk, and nDCG uses the qrels' graded scores as linear gains with the
// log2 discount, as pytrec_eval / trec_eval do.
package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Doc is one corpus document.
type Doc struct {
	ID    string `json:"_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// Dataset is a BEIR collection's test split.
type Dataset struct {
	Name string // the directory's base name, e.g. "scifact"
	Dir  string
	Docs []Doc
	// Queries holds every query text by id (all splits; only judged ones are run).
	Queries map[string]string
	// Qrels maps a query id to its judged documents and their scores.
	Qrels map[string]map[string]int
	// TestQueries are the ids of the judged queries, in qrels file order.
	TestQueries []string
}

// Load reads a BEIR collection from dir: corpus.jsonl, queries.jsonl and
// qrels/test.tsv (header "query-id corpus-id score", tab separated).
func Load(dir string) (*Dataset, error) {
	ds := &Dataset{Name: filepath.Base(filepath.Clean(dir)), Dir: dir, Queries: map[string]string{}, Qrels: map[string]map[string]int{}}
	seen := map[string]bool{}
	err := readJSONL(filepath.Join(dir, "corpus.jsonl"), func(line int, raw []byte) error {
		var d Doc
		if err := json.Unmarshal(raw, &d); err != nil {
			return err
		}
		if d.ID == "" {
			return errors.New("document without _id")
		}
		if seen[d.ID] {
			return fmt.Errorf("duplicate document id %q", d.ID)
		}
		seen[d.ID] = true
		ds.Docs = append(ds.Docs, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = readJSONL(filepath.Join(dir, "queries.jsonl"), func(line int, raw []byte) error {
		var q struct {
			ID   string `json:"_id"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &q); err != nil {
			return err
		}
		if q.ID == "" {
			return errors.New("query without _id")
		}
		ds.Queries[q.ID] = q.Text
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := ds.readQrels(filepath.Join(dir, "qrels", "test.tsv")); err != nil {
		return nil, err
	}
	for _, q := range ds.TestQueries {
		if _, ok := ds.Queries[q]; !ok {
			return nil, fmt.Errorf("%s: judged query %q is not in queries.jsonl", dir, q)
		}
	}
	if len(ds.Docs) == 0 || len(ds.TestQueries) == 0 {
		return nil, fmt.Errorf("%s: no documents or no judged test queries", dir)
	}
	return ds, nil
}

func readJSONL(path string, each func(line int, raw []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	for line := 1; ; line++ {
		raw, err := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(raw))) > 0 {
			if perr := each(line, raw); perr != nil {
				return fmt.Errorf("%s:%d: %w", path, line, perr)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
}

func (ds *Dataset) readQrels(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for i, line := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		// Tab separated (ids may hold spaces); whitespace separated as a fallback.
		fields := strings.Split(strings.TrimRight(line, "\r"), "\t")
		if len(fields) == 1 {
			fields = strings.Fields(line)
		}
		if i == 0 && fields[0] == "query-id" {
			continue
		}
		if len(fields) != 3 {
			return fmt.Errorf("%s:%d: want query-id, corpus-id and score, got %d fields", path, i+1, len(fields))
		}
		score, err := strconv.Atoi(fields[2])
		if err != nil {
			return fmt.Errorf("%s:%d: score %q is not an integer", path, i+1, fields[2])
		}
		q, d := fields[0], fields[1]
		if ds.Qrels[q] == nil {
			ds.Qrels[q] = map[string]int{}
			ds.TestQueries = append(ds.TestQueries, q)
		}
		ds.Qrels[q][d] = score
	}
	return nil
}

var projectKeyUnsafe = regexp.MustCompile(`[^a-z0-9_.-]+`)

// ProjectKey is the project a collection is loaded into: "beir-" and the
// directory name, e.g. beir-scifact.
func ProjectKey(name string) string {
	k := projectKeyUnsafe.ReplaceAllString(strings.ToLower(name), "-")
	k = strings.Trim(k, "-._")
	if k == "" {
		k = "dataset"
	}
	k = "beir-" + k
	if len(k) > 63 {
		k = k[:63]
	}
	return k
}
