package hierarchy

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/internal/testdocs"
)

// germanPerson is an entity page in German; the certificates page names her
// as its owner.
const germanPerson = `---
type: person
title: Ana Lima
lang: de
role: Leitet das Plattformteam
facts:
  - Erneuert die Zertifikate des Gateways
---
Ana leitet das Plattformteam.
`

// TestTwoPassInGerman: pass 1 finds the person a German question names (her
// name as a phrase under the german configuration), pass 2 ranks her documents by the rest of the question, and the
// refusal gate's evidence for them counts the German analysis.
func TestTwoPassInGerman(t *testing.T) {
	t.Parallel()
	p := dbtest.FreshPool(t)
	pages := testdocs.Handbooks()
	pages["de/zertifikate.md"] = strings.Replace(pages["de/zertifikate.md"], "lang: de\n", "lang: de\nowners: [de/ana]\n", 1)
	pages["de/ana.md"] = germanPerson
	var files []ingest.File
	for _, path := range slices.Sorted(maps.Keys(pages)) {
		if strings.HasPrefix(path, "de/") {
			files = append(files, ingest.File{Path: path, Content: []byte(pages[path])})
		}
	}
	if res, err := newIngester(p).Ingest(context.Background(), files, ingest.Options{Project: "de"}); err != nil || len(res.Errors) > 0 {
		t.Fatalf("ingest: %v %v", err, res.Errors)
	}
	h := New(p, flatSearcher(p), DefaultConfig())
	res := mustSearch(t, h, &domain.SearchRequest{Query: "Wann erneuern Ana Lima und ihr Team die Zertifikate des Gateways?",
		Filters: domain.RawFilters{ProjectKeys: []string{"de"}}, Options: domain.SearchOptions{Limit: 5}})
	if res.Meta.SearchMode != ModeTwoPass || len(res.Meta.Pass1Entities) == 0 || res.Meta.Pass1Entities[0].EntityID != "de/ana" ||
		!res.Meta.Pass1Entities[0].Chosen {
		t.Fatalf("want two-pass on de/ana: mode %s (%s), entities %+v", res.Meta.SearchMode, res.Meta.HierarchyReason,
			res.Meta.Pass1Entities)
	}
	var cert *domain.Hit
	for _, hit := range res.Primary {
		if hit.DocID == "de/zertifikate" {
			cert = hit
		}
	}
	if cert == nil {
		t.Fatalf("de/zertifikate not on the page: %v", docIDs(res.Primary))
	}
	if cert.KeywordCoverage < domain.DefaultGate().MinKeywordCoverage {
		t.Errorf("de/zertifikate covers %.2f of the question, below the gate's %.2f", cert.KeywordCoverage,
			domain.DefaultGate().MinKeywordCoverage)
	}
	if !slices.Equal(res.Meta.QueryConfigs, []string{"german"}) {
		t.Errorf("configs %v, want [german]", res.Meta.QueryConfigs)
	}
}
