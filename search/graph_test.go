package search_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"
	"google.golang.org/protobuf/proto"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/lifecycle"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/search"
)

// graphSearcher is a Searcher over pool with the given graph configuration.
func graphSearcher(p *pgxpool.Pool, cfg search.GraphConfig) *search.Searcher {
	s := search.New(p, embed.NewHash(dim), search.Config{
		Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed), Profile: domain.ProfileHashKeywordLed, Graph: cfg,
	})
	s.Today = func() time.Time { return time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC) }
	return s
}

// ingestFiles stores in-memory Markdown files (path -> content) in project.
func ingestFiles(t *testing.T, p *pgxpool.Pool, project string, files map[string]string) {
	t.Helper()
	var fs []ingest.File
	for path, content := range files {
		fs = append(fs, ingest.File{Path: path, Content: []byte(content)})
	}
	slices.SortFunc(fs, func(a, b ingest.File) int { return strings.Compare(a.Path, b.Path) })
	in := ingest.New(p, embed.NewHash(dim), markdown.Options{ChunkTokens: 512, OverlapTokens: 64})
	res, err := in.Ingest(context.Background(), fs, ingest.Options{Project: project})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("ingest errors: %v", res.Errors)
	}
}

// doc renders a canonical document; extra is raw frontmatter lines.
func doc(slug, typ, status, body string, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\nid: %s\ntitle: %s\n", slug, strings.ReplaceAll(slug, "-", " "))
	if typ != "" {
		fmt.Fprintf(&b, "type: %s\nstatus: %s\n", typ, status)
	}
	for _, e := range extra {
		b.WriteString(e + "\n")
	}
	fmt.Fprintf(&b, "---\n\n%s\n", body)
	return b.String()
}

func edgeOf(h *domain.Hit) string {
	e := h.Edge
	if e == nil {
		return h.DocID
	}
	return fmt.Sprintf("%s<%s %.1f %s from %s>", h.DocID, e.EdgeType, e.Weight, e.Direction, e.FromDocID)
}

func edgesOf(hits []*domain.Hit) []string {
	out := []string{}
	for _, h := range hits {
		out = append(out, edgeOf(h))
	}
	return out
}

// The worked example of the README, end to end on the example handbook.
func TestGraphWorkedExample(t *testing.T) {
	t.Parallel()
	handbook(t)
	s := graphSearcher(pool, search.DefaultGraphConfig())
	q := "what cache layer did we standardise on?"
	res := mustSearch(t, s, req(q, func(r *domain.SearchRequest) { r.Options.Limit = 8 }))

	primary := docIDs(res.Primary)
	if rankOf(res.Primary, "dec-cache-v2") != 0 {
		t.Errorf("dec-cache-v2 should lead the primary hits: %v", primary)
	}
	for _, note := range []string{"note-cache-musings", "note-cache-benchmarks"} {
		if r := rankOf(res.Primary, note); r >= 0 && r < rankOf(res.Primary, "dec-cache-v2") {
			t.Errorf("%s ranked above dec-cache-v2: %v", note, primary)
		}
	}
	// The superseded v1 is demoted off the page and comes back, labelled, through
	// the supersedes edge of v2.
	if rankOf(res.Primary, "dec-cache-v1") >= 0 {
		t.Errorf("superseded dec-cache-v1 should be demoted off the page: %v", primary)
	}
	expanded := edgesOf(res.Expanded)
	i := rankOf(res.Expanded, "mod-session-store")
	if i < 0 {
		t.Fatalf("expanded must include mod-session-store: %v", expanded)
	}
	if got := edgeOf(res.Expanded[i]); got != "mod-session-store<depends_on 0.9 outgoing from dec-cache-v2>" {
		t.Errorf("mod-session-store came through %s", got)
	}
	if h := res.Expanded[i]; h.Origin != "graph_expansion" || h.CanonicalType != "module-kb" || h.Text == "" {
		t.Errorf("expanded hit: origin %q type %q text %q", h.Origin, h.CanonicalType, h.Text)
	}
	if j := rankOf(res.Expanded, "dec-cache-v1"); j < 0 || res.Expanded[j].Status != "superseded" ||
		res.Expanded[j].Edge.EdgeType != "supersedes" {
		t.Errorf("dec-cache-v1 should come back through supersedes, labelled superseded: %v", expanded)
	}
	for _, h := range res.Expanded {
		if rankOf(res.Primary, h.DocID) >= 0 {
			t.Errorf("%s is primary and expanded", h.DocID)
		}
	}
	for k := 1; k < len(res.Expanded); k++ {
		if res.Expanded[k].Edge.Weight > res.Expanded[k-1].Edge.Weight {
			t.Errorf("expanded not ordered by weight: %v", expanded)
		}
	}

	j := rankOf(res.Rejected, "rej-memcached-2023")
	if j < 0 {
		t.Fatalf("rejected must include rej-memcached-2023: %v", edgesOf(res.Rejected))
	}
	rej := res.Rejected[j]
	want := summaryCosine(t, q, "rej-memcached-2023")
	if rej.Origin != "rejected_approach" || math.Abs(rej.Similarity-want) > 1e-6 {
		t.Errorf("rej-memcached-2023: origin %q similarity %v, want cosine %v", rej.Origin, rej.Similarity, want)
	}
	if e := rej.Edge; e.EdgeType != "decision_for" || e.FromDocID != "dec-cache-v2" || e.Direction != "incoming" {
		t.Errorf("rej-memcached-2023 should be linked to dec-cache-v2 by decision_for: %v", edgeOf(rej))
	}
	if rankOf(res.Expanded, "rej-memcached-2023") >= 0 {
		t.Error("a rejected approach is reported once, in the rejected section")
	}
	m := res.Meta
	if !m.SearchStrategy.GraphExpansionEnabled || !m.SearchStrategy.RejectedInjectionEnabled {
		t.Errorf("meta: strategy %v", m.SearchStrategy)
	}
	t.Logf("primary %v\nexpanded %v\nrejected %v", primary, expanded, edgesOf(res.Rejected))

	// Request options switch each feature off.
	off := mustSearch(t, s, req(q, func(r *domain.SearchRequest) {
		r.Options.Limit = 8
		r.Options.GraphExpansion = proto.Bool(false)
		r.Options.RejectedInjection = proto.Bool(false)
	}))
	if len(off.Expanded)+len(off.Rejected) != 0 || off.Meta.SearchStrategy.GraphExpansionEnabled {
		t.Errorf("features off: expanded %v rejected %v", docIDs(off.Expanded), docIDs(off.Rejected))
	}
	if !slices.Equal(chunkIDs(off), chunkIDs(res)) {
		t.Error("the graph step changed the ranked hits")
	}
}

// summaryCosine is the cosine of the question and a document's summary chunk, computed in Go.
func summaryCosine(t *testing.T, q, slug string) float64 {
	t.Helper()
	var v pgvector.Vector
	err := pool.QueryRow(context.Background(), `
		SELECT c.embedding FROM chunks c JOIN documents d ON d.id = c.document_id
		WHERE d.slug = $1 ORDER BY c.is_summary DESC, c.ordinal LIMIT 1`, slug).Scan(&v)
	if err != nil {
		t.Fatal(err)
	}
	qv, _ := embed.NewHash(dim).EmbedQuery(context.Background(), q)
	var dot, na, nb float64
	for i, x := range v.Slice() {
		dot += float64(x) * float64(qv[i])
		na += float64(x) * float64(x)
		nb += float64(qv[i]) * float64(qv[i])
	}
	return dot / math.Sqrt(na*nb)
}

// graphCorpus is a small project whose edges exercise every rule of the walk.
// The question "zebracorn" finds dec-a only.
func graphCorpus(project string) map[string]string {
	pj := "project: " + project
	return map[string]string{
		"dec-a.md": doc("dec-a", "decision", "accepted", "We chose zebracorn quokka quokka quokka for the quokka layer.", pj,
			"tags: [special]", "rejects: [rej-r]",
			"related:",
			"  - {to: mod-x, type: depends_on, weight: 0.9}",
			"  - {to: std-z, type: related_to, weight: 0.3}",
			"  - {to: zzz-neighbour, type: related_to, weight: 0.5}",
			"  - {to: mod-u, type: uses, weight: 0.8}",
			"  - {to: mod-aff, type: affects, weight: 0.8}",
			"  - {to: inc-arch, type: depends_on, weight: 0.7}",
			"  - {to: rb-tag, type: documented_by, weight: 0.7}"),
		"rb-y.md":          doc("rb-y", "runbook", "active", "Steps to operate the layer.", pj, "related:", "  - {to: dec-a, type: implements, weight: 1.0}"),
		"mod-x.md":         doc("mod-x", "module-kb", "active", "Module x.", pj, "related:", "  - {to: mod-far, type: depends_on, weight: 1.0}"),
		"mod-far.md":       doc("mod-far", "module-kb", "active", "Two hops away.", pj),
		"std-z.md":         doc("std-z", "standard", "accepted", "A standard.", pj),
		"zzz-neighbour.md": doc("zzz-neighbour", "module-kb", "active", "Neighbour of dec-a.", pj),
		"mod-u.md":         doc("mod-u", "module-kb", "active", "Used, not allowed.", pj),
		"mod-aff.md":       doc("mod-aff", "module-kb", "active", "Affected, not allowed.", pj),
		"inc-arch.md":      doc("inc-arch", "incident", "archived", "An archived incident.", pj),
		"rb-tag.md":        doc("rb-tag", "runbook", "active", "Tagged runbook.", pj, "tags: [special]"),
		"rej-r.md":         doc("rej-r", "rejected-approach", "accepted", "An aardvark approach we turned down.", pj),
		"dec-b.md": doc("dec-b", "decision", "accepted", "A decision that mentions quokka once among many other words about lemurs.", pj,
			"related:", "  - {to: aaa-neighbour, type: related_to, weight: 0.5}"),
		"aaa-neighbour.md": doc("aaa-neighbour", "module-kb", "active", "Neighbour of dec-b.", pj),
		"dec-old.md":       doc("dec-old", "decision", "superseded", "The platypus design.", pj),
		"dec-new.md":       doc("dec-new", "decision", "accepted", "The wombat design.", pj, "supersedes: [dec-old]"),
		"note-raw.md":      doc("note-raw", "", "", "A raw note about nothing in particular.", pj),
		// A project index: a hub that links to the headline documents.
		"idx.md": doc("idx", "project-index", "active", "The handbook index of everything: start here.", pj,
			"related:",
			"  - {to: dec-a, type: documented_by, weight: 0.6}",
			"  - {to: dec-b, type: documented_by, weight: 0.6}",
			"  - {to: dec-new, type: documented_by, weight: 0.6}",
			"  - {to: std-z, type: related_to, weight: 0.5}"),
	}
}

func graphPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	p := dbtest.FreshPool(t)
	ingestFiles(t, p, "g", graphCorpus("g"))
	ingestFiles(t, p, "h", graphCorpus("h"))
	return p
}

func TestGraphExpansionRules(t *testing.T) {
	t.Parallel()
	p := graphPool(t)
	seedA := func(r *domain.SearchRequest) {
		r.Query = "zebracorn"
		r.Filters.ProjectKeys = []string{"g"}
		r.Options.Limit = 1
	}
	run := func(t *testing.T, cfg search.GraphConfig, mutate ...func(*domain.SearchRequest)) *domain.SearchResult {
		t.Helper()
		res := mustSearch(t, graphSearcher(p, cfg), req("", append([]func(*domain.SearchRequest){seedA}, mutate...)...))
		if got := docIDs(res.Primary); len(mutate) == 0 && !slices.Equal(got, []string{"dec-a"}) {
			t.Fatalf("test premise: the page should be dec-a alone, got %v", got)
		}
		return res
	}
	cfg := search.DefaultGraphConfig()
	// These rules are about one seed's whole neighbourhood; the per-seed cap has a
	// case of its own.
	cfg.MaxPerSeed = 0
	noRejected := cfg
	noRejected.RejectedInjection = false

	t.Run("one hop, both directions, allow-list, weight order, archived skipped", func(t *testing.T) {
		res := run(t, noRejected)
		want := []string{
			"rb-y<implements 1.0 incoming from dec-a>",
			"rej-r<decision_for 1.0 incoming from dec-a>",
			"mod-x<depends_on 0.9 outgoing from dec-a>",
			"rb-tag<documented_by 0.7 outgoing from dec-a>",
			"zzz-neighbour<related_to 0.5 outgoing from dec-a>",
			"std-z<related_to 0.3 outgoing from dec-a>",
		}
		if got := edgesOf(res.Expanded); !slices.Equal(got, want) {
			t.Errorf("expanded\n got %v\nwant %v", got, want)
		}
	})
	t.Run("rejected approaches move to their own section", func(t *testing.T) {
		res := run(t, cfg)
		if rankOf(res.Expanded, "rej-r") >= 0 || rankOf(res.Rejected, "rej-r") < 0 {
			t.Errorf("rej-r: expanded %v rejected %v", docIDs(res.Expanded), docIDs(res.Rejected))
		}
	})
	t.Run("cap", func(t *testing.T) {
		c := cfg
		c.MaxNodes = 2
		res := run(t, c)
		if got := docIDs(res.Expanded); !slices.Equal(got, []string{"rb-y", "mod-x"}) {
			t.Errorf("capped at 2: %v", got)
		}
	})
	t.Run("per-seed cap", func(t *testing.T) {
		c := cfg
		c.MaxPerSeed = 1
		res := mustSearch(t, graphSearcher(p, c), req("quokka", func(r *domain.SearchRequest) {
			r.Filters.ProjectKeys = []string{"g"}
			r.Options.Limit = 2
			r.Options.Ranking = domain.RankingOverride{"max_chunks_per_doc": 1}
		}))
		if got := docIDs(res.Primary); !slices.Equal(got, []string{"dec-a", "dec-b"}) {
			t.Fatalf("test premise: page [dec-a dec-b], got %v", got)
		}
		// Each seed brings its strongest neighbour; rej-r goes to the rejected section.
		want := []string{"rb-y<implements 1.0 incoming from dec-a>", "aaa-neighbour<related_to 0.5 outgoing from dec-b>"}
		if got := edgesOf(res.Expanded); !slices.Equal(got, want) {
			t.Errorf("one per seed\n got %v\nwant %v", got, want)
		}
		if got := docIDs(res.Rejected); !slices.Equal(got, []string{"rej-r"}) {
			t.Errorf("rejected %v", got)
		}
	})
	t.Run("a hub is neither a seed nor a neighbour", func(t *testing.T) {
		index := func(c search.GraphConfig) *domain.SearchResult {
			res := mustSearch(t, graphSearcher(p, c), req("handbook index of everything", func(r *domain.SearchRequest) {
				r.Filters.ProjectKeys = []string{"g"}
				r.Options.Limit = 1
			}))
			if got := docIDs(res.Primary); !slices.Equal(got, []string{"idx"}) {
				t.Fatalf("test premise: page [idx], got %v", got)
			}
			return res
		}
		if got := edgesOf(index(cfg).Expanded); len(got) != 0 {
			t.Errorf("expanded from the index: %v", got)
		}
		noHubs := cfg
		noHubs.HubTypes = nil
		if got := docIDs(index(noHubs).Expanded); len(got) != 4 {
			t.Errorf("without hub types the index brings its 4 neighbours, got %v", got)
		}
		// dec-a is documented by the index; the index does not come back as its neighbour.
		if got := run(t, cfg); rankOf(got.Expanded, "idx") >= 0 {
			t.Errorf("the index was expanded: %v", edgesOf(got.Expanded))
		}
	})
	t.Run("no relevant hit, no graph context", func(t *testing.T) {
		// dec-a leads the page but covers one term of four and is far in cosine.
		q := func(c search.GraphConfig) *domain.SearchResult {
			res := mustSearch(t, graphSearcher(p, c), req("zebracorn capybara tapir okapi", func(r *domain.SearchRequest) {
				r.Filters.ProjectKeys = []string{"g"}
				r.Options.Limit = 1
			}))
			if got := docIDs(res.Primary); !slices.Equal(got, []string{"dec-a"}) {
				t.Fatalf("test premise: page [dec-a], got %v", got)
			}
			return res
		}
		if res := q(cfg); len(res.Expanded)+len(res.Rejected) != 0 {
			t.Errorf("irrelevant seed: expanded %v rejected %v", edgesOf(res.Expanded), edgesOf(res.Rejected))
		}
		open := cfg
		open.SeedGate = domain.Gate{}
		if res := q(open); len(res.Expanded) == 0 || rankOf(res.Rejected, "rej-r") < 0 {
			t.Errorf("without a seed gate dec-a is a seed: expanded %v rejected %v",
				edgesOf(res.Expanded), edgesOf(res.Rejected))
		}
	})
	t.Run("custom allow-list", func(t *testing.T) {
		c := cfg
		c.EdgeTypes = []string{"uses", "affects"}
		res := run(t, c)
		if got := edgesOf(res.Expanded); !slices.Equal(got, []string{
			"mod-aff<affects 0.8 outgoing from dec-a>", "mod-u<uses 0.8 outgoing from dec-a>"}) {
			t.Errorf("uses/affects only: %v", got)
		}
	})
	t.Run("archived on request", func(t *testing.T) {
		c := cfg
		c.IncludeArchived = true
		if res := run(t, c); rankOf(res.Expanded, "inc-arch") < 0 {
			t.Errorf("IncludeArchived: %v", docIDs(res.Expanded))
		}
	})
	t.Run("filters", func(t *testing.T) {
		res := run(t, cfg, func(r *domain.SearchRequest) { r.Filters.Tags = []string{"special"} })
		if got := docIDs(res.Expanded); !slices.Equal(got, []string{"rb-tag"}) {
			t.Errorf("tag filter: %v", got)
		}
		res = run(t, cfg, func(r *domain.SearchRequest) { r.Filters.CanonicalTypes = []string{"decision", "runbook"} })
		if got := docIDs(res.Expanded); !slices.Equal(got, []string{"rb-y", "rb-tag"}) {
			t.Errorf("canonical_types filter: %v", got)
		}
		res = run(t, cfg, func(r *domain.SearchRequest) {
			r.Filters.DocIDs = []string{"dec-a", "std-z"}
			r.Filters.DocIDsMode = "filter"
		})
		if got := docIDs(res.Expanded); !slices.Equal(got, []string{"std-z"}) {
			t.Errorf("doc_ids filter: %v", got)
		}
	})
	t.Run("seed rank breaks weight ties", func(t *testing.T) {
		c := cfg
		c.EdgeTypes = []string{"related_to"}
		res := mustSearch(t, graphSearcher(p, c), req("quokka", func(r *domain.SearchRequest) {
			r.Filters.ProjectKeys = []string{"g"}
			r.Options.Limit = 2
			r.Options.Ranking = domain.RankingOverride{"max_chunks_per_doc": 1}
		}))
		if got := docIDs(res.Primary); !slices.Equal(got, []string{"dec-a", "dec-b"}) {
			t.Fatalf("test premise: page [dec-a dec-b], got %v", got)
		}
		want := []string{
			"zzz-neighbour<related_to 0.5 outgoing from dec-a>",
			"aaa-neighbour<related_to 0.5 outgoing from dec-b>",
			"std-z<related_to 0.3 outgoing from dec-a>",
		}
		if got := edgesOf(res.Expanded); !slices.Equal(got, want) {
			t.Errorf("\n got %v\nwant %v", got, want)
		}
	})
	t.Run("a superseded seed reaches its successor", func(t *testing.T) {
		res := mustSearch(t, graphSearcher(p, cfg), req("platypus", func(r *domain.SearchRequest) {
			r.Filters.ProjectKeys = []string{"g"}
			r.Options.Limit = 1
		}))
		if got := edgesOf(res.Expanded); !slices.Equal(got, []string{"dec-new<supersedes 1.0 incoming from dec-old>"}) {
			t.Errorf("from dec-old: %v (page %v)", got, docIDs(res.Primary))
		}
		// ...and the successor reaches it, unless superseded documents are excluded.
		for _, include := range []bool{true, false} {
			res := mustSearch(t, graphSearcher(p, cfg), req("wombat", func(r *domain.SearchRequest) {
				r.Filters.ProjectKeys = []string{"g"}
				r.Filters.IncludeSuperseded = proto.Bool(include)
				r.Options.Limit = 1
			}))
			if got := rankOf(res.Expanded, "dec-old") >= 0; got != include {
				t.Errorf("include_superseded %v: expanded %v", include, edgesOf(res.Expanded))
			}
		}
	})
	t.Run("project scope", func(t *testing.T) {
		for _, scope := range [][]string{{"g"}, {"h"}, {"g", "h"}} {
			res := mustSearch(t, graphSearcher(p, cfg), req("zebracorn", func(r *domain.SearchRequest) {
				r.Filters.ProjectKeys = scope
				r.Options.Limit = 2
				r.Options.Ranking = domain.RankingOverride{"max_chunks_per_doc": 1}
			}))
			projects := map[string]int{}
			for _, h := range append(slices.Clone(res.Expanded), res.Rejected...) {
				if !slices.Contains(scope, h.ProjectKey) {
					t.Errorf("scope %v: %s comes from project %s", scope, h.DocID, h.ProjectKey)
				}
				projects[h.ProjectKey]++
			}
			if len(projects) != len(scope) {
				t.Errorf("scope %v: expanded from %v", scope, projects)
			}
		}
	})
}

func TestRejectedInjectionThreshold(t *testing.T) {
	t.Parallel()
	p := dbtest.FreshPool(t)
	files := map[string]string{
		"dec-main.md": doc("dec-main", "decision", "accepted", "We run the ocelot scheduler.", "rejects: [rej-linked]"),
		"rej-linked.md": doc("rej-linked", "rejected-approach", "accepted", "Aardvark sharding, turned down.",
			"summary: 'Aardvark sharding of the queue was rejected.'"),
		"rej-1.md": doc("rej-1", "rejected-approach", "accepted", "x", "summary: 'Memcached as the shared cache tier was rejected: no persistence.'"),
		"rej-2.md": doc("rej-2", "rejected-approach", "accepted", "x", "summary: 'A shared Memcached pool for sessions was rejected.'"),
		"rej-3.md": doc("rej-3", "rejected-approach", "accepted", "x", "summary: 'Self-hosted Kafka brokers were rejected in favour of MSK.'"),
		"rej-4.md": doc("rej-4", "rejected-approach", "archived", "x", "summary: 'Memcached shared cache tier, archived.'"),
		"note.md":  doc("note", "", "", "Notes on the memcached shared cache tier and the ocelot scheduler."),
	}
	ingestFiles(t, p, "r", files)
	q := "should memcached be the shared cache tier?"
	search1 := func(cfg search.GraphConfig, limit int) *domain.SearchResult {
		return mustSearch(t, graphSearcher(p, cfg), req(q, func(r *domain.SearchRequest) {
			r.Filters.ProjectKeys = []string{"r"}
			r.Options.Limit = limit
			r.Options.GraphExpansion = proto.Bool(false)
		}))
	}
	cfg := search.DefaultGraphConfig()
	cfg.RejectedMinSimilarity, cfg.RejectedMaxDocs = -1, 10
	all := search1(cfg, 1)
	if rankOf(all.Primary, "dec-main") >= 0 {
		t.Fatalf("test premise: dec-main is not on the page: %v", docIDs(all.Primary))
	}
	sims := map[string]float64{}
	for _, h := range all.Rejected {
		sims[h.DocID] = h.Similarity
		if h.Edge != nil {
			t.Errorf("%s: no decision on the page, yet linked by %v", h.DocID, edgeOf(h))
		}
	}
	if got := docIDs(all.Rejected); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"rej-1", "rej-2", "rej-3", "rej-linked"}) {
		t.Fatalf("threshold -1 should inject every non-archived rejected approach: %v", got)
	}
	for k := 1; k < len(all.Rejected); k++ {
		if all.Rejected[k].Similarity > all.Rejected[k-1].Similarity {
			t.Errorf("rejected not ordered by similarity: %v", sims)
		}
	}
	t.Logf("cosines %v", sims)
	// A rejected approach that is itself a relevant hit on the page comes whatever
	// its cosine.
	onPage := map[string]bool{}
	for _, h := range all.Primary {
		if h.CanonicalType == "rejected-approach" && search.DefaultGraphConfig().SeedGate.Relevant(
			domain.Evidence{VectorSimilarity: h.VectorSimilarity, KeywordCoverage: h.KeywordCoverage}) {
			onPage[h.DocID] = true
		}
	}
	t.Logf("relevant rejected approaches on the page: %v", onPage)

	for _, threshold := range []float64{0, 0.2, 0.3, 0.4, 0.5, 0.99} {
		c := cfg
		c.RejectedMinSimilarity = threshold
		var want []string
		for slug, sim := range sims {
			if sim >= threshold || onPage[slug] {
				want = append(want, slug)
			}
		}
		slices.Sort(want)
		got := docIDs(search1(c, 1).Rejected)
		slices.Sort(got)
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("threshold %.2f: got %v, want %v (cosines %v)", threshold, got, want, sims)
		}
	}
	// The cap keeps the closest.
	c := cfg
	c.RejectedMaxDocs = 1
	if got := docIDs(search1(c, 1).Rejected); len(got) != 1 || got[0] != all.Rejected[0].DocID {
		t.Errorf("max docs 1: %v, want the closest %s", got, all.Rejected[0].DocID)
	}
	// A rejected approach linked to a decision on the page comes whatever its cosine
	// and on top of the cap.
	c.RejectedMinSimilarity = 0.99
	res := mustSearch(t, graphSearcher(p, c), req("ocelot scheduler", func(r *domain.SearchRequest) {
		r.Filters.ProjectKeys = []string{"r"}
		r.Options.Limit = 1
	}))
	if got := edgesOf(res.Rejected); rankOf(res.Primary, "dec-main") != 0 ||
		!slices.Equal(got, []string{"rej-linked<decision_for 1.0 incoming from dec-main>"}) {
		t.Errorf("linked: page %v rejected %v", docIDs(res.Primary), got)
	}
	// keyword_only ranks without a vector; the cosine is still the real one.
	kw := mustSearch(t, graphSearcher(p, cfg), req(q, func(r *domain.SearchRequest) {
		r.Filters.ProjectKeys = []string{"r"}
		r.Options.Limit = 1
		r.Options.Fusion = domain.FusionKeywordOnly
	}))
	for _, h := range kw.Rejected {
		if math.Abs(h.Similarity-sims[h.DocID]) > 1e-9 {
			t.Errorf("keyword_only: %s similarity %v, want %v", h.DocID, h.Similarity, sims[h.DocID])
		}
	}
}

// The default threshold on the handbook: questions about a rejected option
// inject it by similarity; unrelated questions inject nothing by similarity
// (only rejected approaches linked to a decision on the page).
func TestRejectedThresholdCalibration(t *testing.T) {
	t.Parallel()
	handbook(t)
	s := graphSearcher(pool, search.DefaultGraphConfig())
	near := map[string]string{
		"should we use memcached as the shared cache?":      "rej-memcached-2023",
		"why not a GraphQL federation gateway?":             "rej-graphql-gateway",
		"GraphQL gateway":                                   "rej-graphql-gateway",
		"can we run our own Kafka brokers on EC2?":          "rej-self-hosted-kafka",
		"kafka kraft on ec2":                                "rej-self-hosted-kafka",
		"shared redis cache for payments reference data":    "pay-rej-shared-redis",
		"could we adopt Apollo GraphQL for the public API?": "rej-graphql-gateway",
	}
	for q, want := range near {
		project := "platform"
		if strings.HasPrefix(want, "pay-") {
			project = "payments"
		}
		res := mustSearch(t, s, req(q, func(r *domain.SearchRequest) { r.Filters.ProjectKeys = []string{project} }))
		if i := rankOf(res.Rejected, want); i < 0 {
			t.Errorf("%q should inject %s: %v", q, want, edgesOf(res.Rejected))
		}
	}
	far := []string{
		"how do deployment rollbacks work?", "what does error E5032 mean?", "who owns the ledger replicator?",
		"postgres 16 migration cutover plan", "incident ledger replication lag", "project relay timeline",
		"search service configuration", "redis cluster client-side caching", "what did we decide in the atlas kickoff?",
	}
	for _, q := range far {
		res := mustSearch(t, s, req(q))
		for _, h := range res.Rejected {
			if h.Edge == nil {
				t.Errorf("%q injected %s by similarity %.3f (threshold %.2f)", q, h.DocID, h.Similarity,
					search.DefaultRejectedMinSimilarity)
			}
		}
	}
}

// rejectedRecallQuestions are 20 questions about an option the team rejected, five
// per rejected approach of the handbook, each with the approach it should inject.
var rejectedRecallQuestions = []struct{ q, want string }{
	{"should we use memcached as the shared cache?", "rej-memcached-2023"},
	{"why did we reject memcached?", "rej-memcached-2023"},
	{"memcached for sessions and rate-limit counters", "rej-memcached-2023"},
	{"could the pricing worker's memcached pair become the shared cache tier?", "rej-memcached-2023"},
	{"is memcached's slab allocator a problem for eviction?", "rej-memcached-2023"},
	{"why not a GraphQL federation gateway?", "rej-graphql-gateway"},
	{"GraphQL gateway", "rej-graphql-gateway"},
	{"could we adopt Apollo GraphQL for the public API?", "rej-graphql-gateway"},
	{"should mobile clients query a single GraphQL endpoint?", "rej-graphql-gateway"},
	{"per-field authorization in GraphQL subgraphs", "rej-graphql-gateway"},
	{"can we run our own Kafka brokers on EC2?", "rej-self-hosted-kafka"},
	{"kafka kraft on ec2", "rej-self-hosted-kafka"},
	{"should we self-host Kafka instead of paying for MSK?", "rej-self-hosted-kafka"},
	{"is running Kafka ourselves cheaper than Amazon MSK?", "rej-self-hosted-kafka"},
	{"who would handle Kafka broker upgrades and partition rebalancing?", "rej-self-hosted-kafka"},
	{"shared redis cache for payments reference data", "pay-rej-shared-redis"},
	{"should FX rates live in a shared Redis?", "pay-rej-shared-redis"},
	{"why don't payments services read fee schedules from Redis?", "pay-rej-shared-redis"},
	{"can checkout depend on a shared Redis tier?", "pay-rej-shared-redis"},
	{"store merchant configuration in redis", "pay-rej-shared-redis"},
}

// offTopicQuestions are the refusal calibration's off-topic questions
// (chat/chat_test.go): nothing in the handbook answers them.
var offTopicQuestions = []string{"what is the capital of France?", "best banana bread recipe",
	"who won the football world cup in 2018?", "do I need a visa to travel to Japan?", "how tall is mount everest?",
	"what is the meaning of life", "recommend a good pizza place", "how do I knit a scarf?",
	"what's the weather tomorrow in Paris?", "translate hello into Spanish", "how many calories in an apple",
	"who painted the mona lisa", "write me a poem about the sea", "what is quantum entanglement?",
	"how do I change a car tire?"}

// TestRejectedRecallOnHandbook measures, with the shipped defaults, how many of the
// 20 questions about a rejected option get it in the rejected section (by
// similarity, through a decision on the page, or as a relevant hit itself), and
// that the 15 off-topic questions get no graph context. Run with -v for the numbers.
func TestRejectedRecallOnHandbook(t *testing.T) {
	t.Parallel()
	handbook(t)
	s := graphSearcher(pool, search.DefaultGraphConfig())
	var caught, bySimilarity, byEdge, onPage int
	for _, c := range rejectedRecallQuestions {
		project := "platform"
		if strings.HasPrefix(c.want, "pay-") {
			project = "payments"
		}
		res := mustSearch(t, s, req(c.q, func(r *domain.SearchRequest) {
			r.Filters.ProjectKeys = []string{project}
			r.Options.Limit = 8
		}))
		i := rankOf(res.Rejected, c.want)
		if i < 0 {
			t.Logf("missed %q: rejected %v", c.q, edgesOf(res.Rejected))
			continue
		}
		caught++
		// A rejected approach close enough to the question counts by similarity
		// even when an edge to a decision on the page also brought it.
		switch h := res.Rejected[i]; {
		case h.Similarity >= search.DefaultRejectedMinSimilarity:
			bySimilarity++
		case h.Edge != nil:
			byEdge++
		default:
			onPage++
		}
	}
	var offExpanded, offRejected, offQuestions int
	for _, q := range offTopicQuestions {
		res := mustSearch(t, s, req(q, func(r *domain.SearchRequest) { r.Options.Limit = 8 }))
		offExpanded += len(res.Expanded)
		offRejected += len(res.Rejected)
		if len(res.Expanded)+len(res.Rejected) > 0 {
			offQuestions++
		}
	}
	t.Logf("rejected recall: %d of %d questions (%d by similarity, %d through a decision on the page, %d as a relevant hit)",
		caught, len(rejectedRecallQuestions), bySimilarity, byEdge, onPage)
	t.Logf("off-topic: %d of %d questions got graph context (%d expanded, %d rejected)",
		offQuestions, len(offTopicQuestions), offExpanded, offRejected)
	if caught < minRejectedRecall {
		t.Errorf("rejected recall %d of %d, want at least %d", caught, len(rejectedRecallQuestions), minRejectedRecall)
	}
	// Before the graph step followed the refusal gate's evidence, all 15 got some
	// (106 neighbours, 9 rejected approaches in total).
	if offQuestions > 0 {
		t.Errorf("%d off-topic questions got graph context (%d expanded, %d rejected), want none",
			offQuestions, offExpanded, offRejected)
	}
}

// minRejectedRecall is the rejected recall TestRejectedRecallOnHandbook measured
// when it was written (20 of 20); a change to the graph step must not lower it.
const minRejectedRecall = 20

// A project without canonical documents gets exactly the plain hybrid result.
func TestGraphStepIsNoOpWithoutCanon(t *testing.T) {
	t.Parallel()
	p := dbtest.FreshPool(t)
	strip := regexp.MustCompile(`(?m)^(type|project|status|supersedes|rejects):.*\n`)
	files := map[string]string{}
	root := "../examples/handbook/platform"
	for _, dir := range []string{"decisions", "rejected", "modules", "notes", "meetings", "runbooks", "standards"} {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(root, dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			files[dir+"/"+e.Name()] = strip.ReplaceAllString(string(b), "")
		}
	}
	ingestFiles(t, p, "raw", files)
	var canonical int
	if err := p.QueryRow(context.Background(), "SELECT count(*) FROM documents WHERE canonical_type IS NOT NULL").Scan(&canonical); err != nil || canonical != 0 {
		t.Fatalf("test premise: no canonical documents (%d, %v)", canonical, err)
	}
	on, off := search.DefaultGraphConfig(), search.GraphConfig{}
	on.RejectedMinSimilarity = -1 // inject anything there is
	on.IncludeArchived = true
	for _, q := range []string{"what cache layer did we standardise on?", "why did we reject memcached?",
		"how do deployment rollbacks work?", "kafka"} {
		for _, fusion := range domain.Fusions() {
			r := func(r *domain.SearchRequest) {
				r.Filters.ProjectKeys = []string{"raw"}
				r.Options.Fusion = fusion
				r.Options.Explain = true
			}
			a := mustSearch(t, graphSearcher(p, on), req(q, r))
			b := mustSearch(t, graphSearcher(p, off), req(q, r))
			if len(a.Primary) == 0 {
				t.Fatalf("%q: no results", q)
			}
			if !a.Meta.SearchStrategy.GraphExpansionEnabled || b.Meta.SearchStrategy.GraphExpansionEnabled {
				t.Error("strategy flags should report the features in force")
			}
			for _, m := range []*domain.SearchMeta{&a.Meta, &b.Meta} {
				m.RetrievalMs = 0
				m.SearchStrategy.GraphExpansionEnabled, m.SearchStrategy.RejectedInjectionEnabled = false, false
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%q [%s]: features on and off differ:\non  %v %v %v\noff %v %v %v", q, fusion,
					docIDs(a.Primary), docIDs(a.Expanded), docIDs(a.Rejected),
					docIDs(b.Primary), docIDs(b.Expanded), docIDs(b.Rejected))
			}
		}
	}
}

// BenchmarkGraphStep measures what the graph step adds to a search on the
// handbook: compare the sub-benchmarks' ns/op.
func BenchmarkGraphStep(b *testing.B) {
	p := dbtest.FreshPool(b)
	files, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		b.Fatal(err)
	}
	in := ingest.New(p, embed.NewHash(dim), markdown.Options{ChunkTokens: 512, OverlapTokens: 64})
	if _, err := in.Ingest(context.Background(), files, ingest.Options{Project: "platform"}); err != nil {
		b.Fatal(err)
	}
	q := "what cache layer did we standardise on?"
	for _, c := range []struct {
		name string
		cfg  search.GraphConfig
	}{{"off", search.GraphConfig{}}, {"on", search.DefaultGraphConfig()}} {
		b.Run(c.name, func(b *testing.B) {
			s := graphSearcher(p, c.cfg)
			r := req(q, func(r *domain.SearchRequest) { r.Options.Limit = 8 })
			for b.Loop() {
				if _, err := s.Search(context.Background(), r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Lifecycle changes show in the next search: an archived neighbour leaves the
// expanded section, a rejection recorded by `canon canon reject` joins the
// rejected one.
func TestLifecycleChangesFeedSearch(t *testing.T) {
	t.Parallel()
	p := dbtest.FreshPool(t)
	files, err := ingest.ReadDirs([]string{"../examples/handbook/platform"})
	if err != nil {
		t.Fatal(err)
	}
	in := ingest.New(p, embed.NewHash(dim), markdown.Options{ChunkTokens: 512, OverlapTokens: 64})
	if _, err := in.Ingest(context.Background(), files, ingest.Options{Project: "platform"}); err != nil {
		t.Fatal(err)
	}
	svc := lifecycle.New(p)
	ctx := context.Background()
	if _, err := svc.Archive(ctx, "test", "platform", "mod-session-store"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Reject(ctx, "test", "platform", "mtg-2025-02-26-cache-review", "dec-cache-v2"); err != nil {
		t.Fatal(err)
	}
	res := mustSearch(t, graphSearcher(p, search.DefaultGraphConfig()),
		req("what cache layer did we standardise on?", func(r *domain.SearchRequest) { r.Options.Limit = 8 }))
	if rankOf(res.Primary, "dec-cache-v2") < 0 {
		t.Fatalf("test premise: dec-cache-v2 on the page: %v", docIDs(res.Primary))
	}
	if rankOf(res.Expanded, "mod-session-store") >= 0 {
		t.Errorf("archived mod-session-store still expanded: %v", edgesOf(res.Expanded))
	}
	i := rankOf(res.Rejected, "mtg-2025-02-26-cache-review")
	if i < 0 || edgeOf(res.Rejected[i]) != "mtg-2025-02-26-cache-review<decision_for 1.0 incoming from dec-cache-v2>" {
		t.Errorf("rejected: %v", edgesOf(res.Rejected))
	}
}

// canon search --sql prints the graph step's statement after the ranking, bound to
// the page the ranking returns: run as printed, it returns the expanded and
// rejected sections Search returned.
func TestGraphStatementIsRunnable(t *testing.T) {
	t.Parallel()
	handbook(t)
	s := graphSearcher(pool, search.DefaultGraphConfig())
	r := req("what cache layer did we standardise on?", func(r *domain.SearchRequest) { r.Options.Limit = 8 })
	stmt, err := s.Statement(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	res := mustSearch(t, s, r)
	conn, err := pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var rows pgx.Rows

	// The graph step's statement follows, bound to the page above: run as printed,
	// it returns the expanded and rejected sections Search returned.
	_, graph, ok := strings.Cut(stmt, "-- 2. Graph step")
	if !ok || !strings.Contains(graph, "WITH") {
		t.Fatalf("no graph statement after the ranking:\n%s", graph)
	}
	tx, err := conn.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	// It runs in the transaction its SET LOCAL lines configure.
	for _, line := range strings.Split(graph, "\n") {
		if strings.HasPrefix(line, "SET LOCAL ") {
			if _, err := tx.Exec(context.Background(), line); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
		}
	}
	graph = graph[strings.Index(graph, "WITH"):strings.LastIndex(graph, ";\nCOMMIT;")]
	rows, err = tx.Query(context.Background(), "SELECT origin, slug FROM ("+graph+") g ORDER BY origin, position")
	if err != nil {
		t.Fatalf("bound graph statement does not run: %v", err)
	}
	var expanded, rejected []string
	for rows.Next() {
		var origin, slug string
		if err := rows.Scan(&origin, &slug); err != nil {
			t.Fatal(err)
		}
		switch origin {
		case "graph_expansion":
			expanded = append(expanded, slug)
		case "rejected_approach":
			rejected = append(rejected, slug)
		}
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if want := docIDs(res.Expanded); len(want) == 0 || !slices.Equal(expanded, want) {
		t.Errorf("psql graph statement expanded %v, Search %v", expanded, want)
	}
	if want := docIDs(res.Rejected); len(want) == 0 || !slices.Equal(rejected, want) {
		t.Errorf("psql graph statement rejected %v, Search %v", rejected, want)
	}
}

// Rejected approaches near the question come from their own HNSW index
// (chunks_rejected_hnsw over chunks.represents_rejected): the section must be
// exactly the exact scan's, for every caller and filter, with hidden, archived
// and filtered approaches skipped past, and a document made a rejected approach
// later (canon lifecycle reject) found by similarity too.
func TestRejectedNearestMatchesExactScan(t *testing.T) {
	t.Parallel()
	p := dbtest.FreshPool(t)
	ctx := context.Background()
	words := strings.Fields("cache queue shard broker ledger tenant replica index vacuum backup " +
		"gateway token session schema rollout canary latency quota audit region")
	files := map[string]string{
		"dec-keep.md":  doc("dec-keep", "decision", "accepted", "We keep the ledger queue.", "tags: [ops]"),
		"dec-other.md": doc("dec-other", "decision", "accepted", "Lunch is at noon."),
	}
	for i := range 40 {
		extra := []string{fmt.Sprintf("summary: '%s %s %s rejected.'", words[i%20], words[(i*7+3)%20], words[(i*3+1)%20])}
		status := "accepted"
		switch {
		case i%5 == 1:
			extra = append(extra, "access: [vault]")
		case i%7 == 2:
			status = "archived"
		case i%4 == 3:
			extra = append(extra, "tags: [ops]")
		}
		slug := fmt.Sprintf("rej-%02d", i)
		files[slug+".md"] = doc(slug, "rejected-approach", status, "Turned down.", extra...)
	}
	ingestFiles(t, p, "n", files)
	svc := lifecycle.New(p)
	if _, err := svc.Reject(ctx, "test", "n", "dec-keep", "dec-other"); err != nil {
		t.Fatal(err)
	}
	var marked int
	if err := p.QueryRow(ctx, `SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id
		WHERE c.represents_rejected AND c.ordinal = 0 AND d.canonical_type = 'rejected-approach'`).Scan(&marked); err != nil {
		t.Fatal(err)
	}
	if marked != 41 {
		t.Fatalf("%d representative chunks marked, want 41 (40 ingested, 1 rejected by lifecycle)", marked)
	}

	cfg := search.DefaultGraphConfig()
	cfg.RejectedMinSimilarity, cfg.RejectedMaxDocs, cfg.Expansion = 0.05, 4, false
	s := graphSearcher(p, cfg)
	reader := domain.Principal{Name: "reader", Projects: []string{"n"}, Role: domain.RoleReader}
	vault := reader
	vault.Groups = []string{"vault"}
	callers := map[string]domain.Principal{"operator": domain.Operator(), "reader": reader, "vault": vault}
	compared, hidden := 0, 0
	for _, q := range []string{"cache shard rejected", "queue broker ledger", "token session gateway", "vacuum backup region"} {
		for name, who := range callers {
			for _, tags := range [][]string{nil, {"ops"}} {
				r := req(q, func(r *domain.SearchRequest) {
					r.Filters.ProjectKeys = []string{"n"}
					r.Filters.Tags = tags
					r.Options.Limit = 1
				})
				res, err := s.Search(domain.WithPrincipal(ctx, who), r)
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Primary) == 0 || !cfg.SeedGate.Relevant(domain.Evidence{
					VectorSimilarity: res.Primary[0].VectorSimilarity, KeywordCoverage: res.Primary[0].KeywordCoverage}) {
					continue // no relevant hit: the step does not run
				}
				var got []string
				for _, h := range res.Rejected {
					if h.DocID != res.Primary[0].DocID {
						got = append(got, h.DocID)
					}
				}
				want := exactNearestRejected(t, p, q, who, tags, cfg, res.Primary[0].DocID)
				if len(want) > 0 {
					compared++
				}
				if name == "reader" && !slices.Equal(want, exactNearestRejected(t, p, q, domain.Operator(), tags, cfg, res.Primary[0].DocID)) {
					hidden++
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("%q as %s, tags %v: rejected %v, exact scan %v", q, name, tags, got, want)
				}
			}
		}
	}
	// The premise: sections were compared, and hiding changed some of them.
	if compared < 12 || hidden == 0 {
		t.Errorf("compared %d non-empty sections, %d changed by hidden approaches", compared, hidden)
	}
}

// exactNearestRejected is the rejected section's similarity part by brute force:
// every rejected approach the caller may see under the tags filter, not archived,
// measured on its ordinal-0 chunk, the best cfg.RejectedMaxDocs at or above the
// threshold, without the page's own hit; sorted by slug.
func exactNearestRejected(t *testing.T, p *pgxpool.Pool, q string, who domain.Principal, tags []string,
	cfg search.GraphConfig, onPage string) []string {
	t.Helper()
	qv, err := embed.NewHash(dim).EmbedQuery(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := p.Query(context.Background(), `
		SELECT d.slug FROM documents d JOIN chunks c ON c.document_id = d.id AND c.ordinal = 0
		WHERE d.canonical_type = 'rejected-approach' AND d.status IS DISTINCT FROM 'archived'
		  AND ($1 OR cardinality(d.access) = 0 OR d.access && $2)
		  AND (cardinality($3::text[]) = 0 OR d.tags && $3)
		  AND 1 - (c.embedding <=> $4) >= $5
		ORDER BY c.embedding <=> $4, d.id
		LIMIT $6`,
		who.AllDocuments, nonNilStrings(who.Groups), nonNilStrings(tags), pgvector.NewVector(qv),
		cfg.RejectedMinSimilarity, cfg.RejectedMaxDocs)
	if err != nil {
		t.Fatal(err)
	}
	slugs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	slugs = slices.DeleteFunc(slugs, func(s string) bool { return s == onPage })
	slices.Sort(slugs)
	return slugs
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
