package markdown_test

import (
	"fmt"

	"github.com/canonkb/canon/markdown"
)

func ExampleParse() {
	src := []byte(`---
type: decision
status: accepted
tags: [Caching, redis]
rejects: [rej-memcached]
---
# Cache layer standard

All services share one Redis cluster. See [[std-cache|the standard]].

## Decision

Use the cache package.
`)
	doc, err := markdown.Parse("decisions/dec-cache-v2.md", src, markdown.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(doc.Slug, doc.Title, doc.CanonicalType, doc.Tags)
	for _, l := range doc.Links {
		fmt.Println(l.From, "->", l.To, l.EdgeType, l.Weight, l.Provenance)
	}
	for _, c := range doc.Chunks {
		fmt.Println(c.Ordinal, c.IsSummary, c.HeadingPath, c.Text)
	}

	_, err = markdown.Parse("decisions/x.md", []byte("---\nid: x\ntitle: X\ntype: decison\n---\n"), markdown.Options{})
	fmt.Println(err)
	// Output:
	// decisions/dec-cache-v2 Cache layer standard decision [caching redis]
	// rej-memcached -> decisions/dec-cache-v2 decision_for 1 frontmatter
	// decisions/dec-cache-v2 -> std-cache related_to 0.5 wikilink
	// 0 true [Cache layer standard] All services share one Redis cluster. See the standard.
	// 1 false [Cache layer standard] All services share one Redis cluster. See the standard.
	// 2 false [Cache layer standard Decision] Use the cache package.
	// decisions/x.md:4: unknown type "decison"; valid: project-index, module-kb, decision, runbook, standard, incident, integration, domain-concept, rejected-approach, person, team, project
}
