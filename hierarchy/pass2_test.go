package hierarchy

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
)

// The admission schedule of pass 2: (StableRounds+1)·BatchSize first, then
// doubling, never past the candidates nor MaxBatches·BatchSize; a schedule that
// could not stop early runs its last round alone.
func TestSchedule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                         string
		batch, stable, maxBatches, n int
		want                         []int
	}{
		{name: "defaults, one candidate", batch: 50, stable: 3, maxBatches: 20, n: 1, want: []int{1}},
		{name: "defaults, exactly four batches", batch: 50, stable: 3, maxBatches: 20, n: 200, want: []int{200}},
		{name: "defaults, the latency corpus's largest", batch: 50, stable: 3, maxBatches: 20, n: 545, want: []int{545}},
		{name: "defaults, capped at 20 batches", batch: 50, stable: 3, maxBatches: 20, n: 5000, want: []int{1000}},
		{name: "a cap far enough for a stable stop", batch: 50, stable: 3, maxBatches: 200, n: 5000,
			want: []int{200, 400, 800, 1600, 3200, 5000}},
		{name: "MaxBatches below StableRounds+1", batch: 50, stable: 3, maxBatches: 2, n: 500, want: []int{100}},
		{name: "batches of one, capped", batch: 1, stable: 1, maxBatches: 12, n: 1000, want: []int{2, 4, 8, 12}},
		{name: "batches of one", batch: 1, stable: 1, maxBatches: 20, n: 21, want: []int{2, 4, 8, 16, 20}},
		{name: "batches of one, two rounds", batch: 1, stable: 1, maxBatches: 20, n: 3, want: []int{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.BatchSize, c.StableRounds, c.MaxBatches = tc.batch, tc.stable, tc.maxBatches
			if got := c.schedule(tc.n); !slices.Equal(got, tc.want) {
				t.Errorf("schedule %v, want %v", got, tc.want)
			}
		})
	}
}

// linearPass2 is pass 2 as it ran before the admission schedule: BatchSize more
// candidates a round, stopping as Search does. TestFirstRoundIsTheLastLinearRound
// compares the two.
func linearPass2(t testing.TB, h *Searcher, r *domain.SearchRequest) (chunks []int64, scores []float64, rounds int) {
	t.Helper()
	ctx := context.Background()
	pr, err := h.flat.Prepare(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	p1, err := h.Pass1(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	cands, err := h.candidates(ctx, p1.Chosen())
	if err != nil {
		t.Fatal(err)
	}
	asked := pr
	if h.cfg.StripNames && p1.Residual != pr.Query() {
		if pr, err = pr.Requery(ctx, p1.Residual); err != nil {
			t.Fatal(err)
		}
	}
	intents := activeIntents(domain.QuestionIntents(asked.Query()), cands)
	byDoc := map[int64]*candidate{}
	var ids []int64
	for _, c := range cands {
		byDoc[c.documentID] = c
		ids = append(ids, c.documentID)
	}
	var (
		page     []scored
		prev     []int64
		stable   int
		admitted int
	)
	for {
		admitted = min(admitted+h.cfg.BatchSize, len(ids))
		rows, err := pr.Rank(ctx, ids[:admitted])
		if err != nil {
			t.Fatal(err)
		}
		rounds++
		page = rescore(rows, byDoc, h.cfg.Alpha, intents, h.cfg.IntentWeight)
		if admitted == len(ids) || rounds >= h.cfg.MaxBatches {
			break
		}
		top := topK(page, pr.Limit())
		if prev != nil && len(top) == pr.Limit() && slices.Equal(top, prev) {
			if stable++; stable >= h.cfg.StableRounds {
				break
			}
		} else {
			stable = 0
		}
		prev = top
	}
	for _, s := range page {
		chunks = append(chunks, s.row.ChunkID)
		scores = append(scores, s.final)
	}
	return chunks, scores, rounds
}

// With no more than StableRounds+1 batches of candidates the rounds of BatchSize
// could not stop early, so their last round ranked every candidate: the one
// round Search runs now returns that page, scores and all.
func TestFirstRoundIsTheLastLinearRound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q     string
		batch int
	}{
		{"What has Dana been working on?", 5},
		{"what did the platform team decide about migration?", 10},
		{"which meetings did Sam attend?", 3},
		{"what are the risks of Project Atlas?", 8},
	} {
		t.Run(tc.q, func(t *testing.T) {
			h := newSearcher(t, func(c *Config) { c.BatchSize = tc.batch })
			res := mustSearch(t, h, req(tc.q))
			if res.Meta.SearchMode != ModeTwoPass {
				t.Fatalf("search mode %s (%s)", res.Meta.SearchMode, res.Meta.HierarchyReason)
			}
			n := res.Meta.Pass2Candidates
			if n > (h.cfg.StableRounds+1)*tc.batch {
				t.Fatalf("%d candidates: more than %d batches of %d", n, h.cfg.StableRounds+1, tc.batch)
			}
			chunks, scores, rounds := linearPass2(t, h, req(tc.q))
			if rounds < 2 {
				t.Errorf("%d candidates in batches of %d: the linear schedule ran %d round", n, tc.batch, rounds)
			}
			if res.Meta.Pass2Batches != 1 {
				t.Errorf("%d rounds, want 1", res.Meta.Pass2Batches)
			}
			hits := append(slices.Clone(res.Primary), res.RunnerUp...)
			if !slices.Equal(chunkIDs(hits), chunks[:min(len(chunks), len(hits))]) {
				t.Fatalf("page %v, linear rounds %v", chunkIDs(hits), chunks)
			}
			for i, hit := range hits {
				if math.Abs(hit.Score-scores[i]) > 1e-12 {
					t.Errorf("hit %d: score %.12f, linear rounds %.12f", i, hit.Score, scores[i])
				}
			}
		})
	}
}

// Past StableRounds+1 batches the schedule doubles, stops on a stable page, and
// ranks at most MaxBatches·BatchSize candidates.
func TestPass2Batches(t *testing.T) {
	t.Parallel()
	q := "what did the platform team decide about migration?"
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		check  func(t *testing.T, m domain.SearchMeta, admitted []string)
	}{
		{name: "defaults: one round", mutate: func(*Config) {},
			check: func(t *testing.T, m domain.SearchMeta, _ []string) {
				if m.Pass2Candidates <= 20 || m.Pass2Candidates > 50 {
					t.Fatalf("candidates %d: the test needs between 21 and 50", m.Pass2Candidates)
				}
				if m.Pass2Batches != 1 {
					t.Errorf("%d candidates: %d rounds, want 1", m.Pass2Candidates, m.Pass2Batches)
				}
			}},
		{name: "batches of one stop on a stable page", mutate: func(c *Config) { c.BatchSize, c.StableRounds = 1, 1 },
			check: func(t *testing.T, m domain.SearchMeta, _ []string) {
				// 2, 4, 8, 16, 32, ...: every candidate is in after this many rounds.
				all := 1
				for a := 2; a < m.Pass2Candidates; a *= 2 {
					all++
				}
				if m.Pass2Batches < 2 || m.Pass2Batches >= all {
					t.Errorf("%d candidates: %d rounds, want an early stop after 2 to %d", m.Pass2Candidates, m.Pass2Batches, all-1)
				}
			}},
		{name: "MaxBatches·BatchSize candidates at most", mutate: func(c *Config) { c.BatchSize, c.StableRounds, c.MaxBatches = 1, 100, 3 },
			check: func(t *testing.T, m domain.SearchMeta, admitted []string) {
				if m.Pass2Batches != 1 {
					t.Errorf("%d rounds, want 1 (3 candidates)", m.Pass2Batches)
				}
				if len(admitted) != 3 {
					t.Errorf("ranked %v, want 3 documents", admitted)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newSearcher(t, tc.mutate)
			res := mustSearch(t, h, req(q))
			pr, err := h.flat.Prepare(ctx, req(q))
			if err != nil {
				t.Fatal(err)
			}
			p1, err := h.Pass1(ctx, pr)
			if err != nil {
				t.Fatal(err)
			}
			cands, err := h.candidates(ctx, p1.Chosen())
			if err != nil {
				t.Fatal(err)
			}
			first := map[string]bool{}
			for _, c := range cands[:min(len(cands), h.cfg.MaxBatches*h.cfg.BatchSize)] {
				first[c.slug] = true
			}
			ranked := distinctDocs(append(slices.Clone(res.Primary), res.RunnerUp...))
			for _, d := range ranked {
				if !first[d] {
					t.Errorf("%s ranked, not among the first %d candidates", d, h.cfg.MaxBatches*h.cfg.BatchSize)
				}
			}
			tc.check(t, res.Meta, ranked)
		})
	}
}

// A document tagged with an entity's slug, name or alias, in any case and with
// spaces or hyphens, links to it (documents_tag_forms); other tags do not.
func TestEntityLinksByTag(t *testing.T) {
	t.Parallel()
	p := dbtest.FreshPool(t)
	ctx := context.Background()
	files := []ingest.File{{Path: "orion/projects/project-orion.md", Content: []byte(`---
id: project-orion
title: Project Orion
type: project
aliases: [Orion, Hunter Programme]
project: orion
---

# Project Orion

The telescope scheduling programme.
`)}}
	tags := map[string]string{
		"doc-alias":         "[Orion]",
		"doc-name-spaces":   "[project orion]",
		"doc-slug-upper":    "[PROJECT-ORION]",
		"doc-alias-hyphen":  "[hunter-programme, ops]",
		"doc-two-forms":     "[orion, project-orion]",
		"doc-other-tag":     "[orion-api]",
		"doc-prefix":        "[project]",
		"doc-untagged":      "[]",
		"doc-alias-spelled": "[Hunter Programme]",
	}
	for slug, tagList := range tags {
		files = append(files, ingest.File{Path: "orion/notes/" + slug + ".md", Content: fmt.Appendf(nil,
			"---\nid: %s\ntitle: Note %s\ntags: %s\nproject: orion\n---\n\n# Note\n\nScheduling notes.\n", slug, slug, tagList)})
	}
	res, err := newIngester(p).Ingest(ctx, files, ingest.Options{Project: "orion"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("invalid files: %v", res.Errors)
	}
	var id, projectID int64
	if err := p.QueryRow(ctx, "SELECT id, project_id FROM entities WHERE slug = 'project-orion'").Scan(&id, &projectID); err != nil {
		t.Fatal(err)
	}
	h := New(p, flatSearcher(p), DefaultConfig())
	links, err := h.entityLinks(ctx, []Entity{{ID: id, ProjectID: projectID, ProjectKey: "orion", Slug: "project-orion"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range links[id] {
		got[l.Slug] = l.Link
	}
	for _, tc := range []struct {
		slug, link string
	}{
		{"project-orion", "page"},
		{"doc-alias", "tag"},
		{"doc-name-spaces", "tag"},
		{"doc-slug-upper", "tag"},
		{"doc-alias-hyphen", "tag"},
		{"doc-alias-spelled", "tag"},
		{"doc-two-forms", "tag"},
		{"doc-other-tag", ""},
		{"doc-prefix", ""},
		{"doc-untagged", ""},
	} {
		if got[tc.slug] != tc.link {
			t.Errorf("%s: link %q, want %q", tc.slug, got[tc.slug], tc.link)
		}
	}
	if len(links[id]) != 7 {
		t.Errorf("%d links, want 7: %v", len(links[id]), linkSlugs(links[id]))
	}
}

func linkSlugs(rows []db.EntityLinksRow) string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Slug+":"+r.Link)
	}
	return strings.Join(out, " ")
}
