package markdown

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustParse(t *testing.T, path string, src []byte, opts Options) *Document {
	t.Helper()
	doc, err := Parse(path, src, opts)
	if err != nil {
		t.Fatalf("Parse(%s): %v", path, err)
	}
	return doc
}

func date(y int, m time.Month, d int) *time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return &t
}

func TestFrontmatterKeys(t *testing.T) {
	t.Parallel()
	doc := mustParse(t, "decisions/whatever.md", readFixture(t, "all-keys.md"), Options{})
	want := Document{
		Slug: "dec-cache-v2", Title: "Cache layer v2", SourcePath: "decisions/whatever.md", SourceType: "confluence",
		Project: "shop-api", CanonicalType: "decision", Status: "accepted", RetrievalPriority: 80,
		Tier: "auto", EvidenceTier: "official",
		Tags:          []string{"caching", "redis"},
		Owners:        []string{"people/ana", "platform team"},
		EffectiveDate: date(2024, 3, 1),
		Summary:       "Redis 7 replaces the per-service caches. Entries expire after five minutes.",
		Language:      "en",
		Links: []Link{
			{From: "dec-cache-v2", To: "dec-cache-v1", EdgeType: "supersedes", Weight: 1, Provenance: "frontmatter"},
			{From: "dec-cache-v2", To: "std-cache", EdgeType: "related_to", Weight: 0.5, Provenance: "frontmatter"},
			{From: "dec-cache-v2", To: "svc-orders", EdgeType: "affects", Weight: 0.8, Provenance: "frontmatter"},
			{From: "dec-cache-v2", To: "svc-payments", EdgeType: "depends_on", Weight: 2.5, Provenance: "frontmatter"},
			{From: "rej-memcached", To: "dec-cache-v2", EdgeType: "decision_for", Weight: 1, Provenance: "frontmatter"},
		},
		Attendees: []string{"people/ana", "people/bo"},
		Entities:  []string{"team-platform"},
	}
	got := *doc
	got.Chunks, got.ContentHash = nil, ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("document:\n got %+v\nwant %+v", got, want)
	}
	if len(doc.ContentHash) != 64 {
		t.Errorf("content hash %q", doc.ContentHash)
	}
}

func TestEntityPages(t *testing.T) {
	t.Parallel()
	person := mustParse(t, "people/ana.md", readFixture(t, "person.md"), Options{})
	if person.EntityType != "person" || person.CanonicalType != "" || person.Slug != "people/ana" || person.Title != "Ana Lima" {
		t.Errorf("person: %+v", person)
	}
	if want := []string{"Ana", "A. Lima"}; !reflect.DeepEqual(person.Aliases, want) {
		t.Errorf("aliases %q, want %q", person.Aliases, want)
	}
	if want := []string{"Owns the cache layer", "On call in weeks 1 and 3"}; !reflect.DeepEqual(person.Facts, want) {
		t.Errorf("facts %q, want %q", person.Facts, want)
	}
	if person.Role != "Staff engineer, platform" || person.Summary != "Ana leads the platform team." {
		t.Errorf("role %q summary %q", person.Role, person.Summary)
	}
	if len(person.Chunks) != 1 || person.Chunks[0].IsSummary {
		t.Errorf("entity pages get no summary chunk: %+v", person.Chunks)
	}

	team := mustParse(t, "teams/platform.md", readFixture(t, "team.md"), Options{})
	if team.EntityType != "team" || !reflect.DeepEqual(team.Members, []string{"people/ana", "people/bo"}) || team.Role != "Runs shared infrastructure" {
		t.Errorf("team: %+v", team)
	}
	// Empty body, no summary: one chunk holding the title.
	if len(team.Chunks) != 1 || team.Chunks[0].Text != "Platform team" || team.Chunks[0].IsSummary {
		t.Errorf("team chunks: %+v", team.Chunks)
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, src string
		slug, title     string
	}{
		{"slug from path, title from H1", "Decisions/Dec-Cache-V2.md", "intro\n\n# Cache v2\n\ntext\n", "decisions/dec-cache-v2", "Cache v2"},
		{"title from file name", "notes/Weekly Sync.markdown", "no heading here\n", "", ""},
		{"setext H1", "a/b.md", "Title here\n==========\n\ntext\n", "a/b", "Title here"},
		{"first H1 wins, H2 ignored", "x.md", "## Sub\n\n# First\n\n# Second\n", "x", "First"},
		{"frontmatter title beats H1", "x.md", "---\ntitle: From YAML\n---\n# From body\n", "x", "From YAML"},
		{"windows separators and dot segments", `.\notes\a.md`, "text\n", "notes/a", "a"},
		{"no extension", "README", "text\n", "readme", "README"},
		{"dots in directories", "v1.2/notes.md", "text\n", "v1.2/notes", "notes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Parse(tt.path, []byte(tt.src), Options{})
			if tt.slug == "" { // whitespace in the path: an error that points at id:
				var pe *ParseError
				if !errors.As(err, &pe) || pe.Line != 1 || !strings.Contains(pe.Reason, `set "id:"`) {
					t.Fatalf("want a path slug error, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if doc.Slug != tt.slug || doc.Title != tt.title {
				t.Errorf("slug %q title %q, want %q %q", doc.Slug, doc.Title, tt.slug, tt.title)
			}
			if doc.SourceType != "markdown" || doc.Tier != "human" || doc.RetrievalPriority != 50 || doc.Status != "" {
				t.Errorf("defaults: %+v", doc)
			}
		})
	}
}

func TestTagNormalisation(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ yaml, want string }{
		{`tags: [Go, " go ", GO, Postgres]`, "go,postgres"},
		{`tags: Security`, "security"},
		{"tags:\n  - A B\n  -\n  - ''\n  - a b", "a b"},
		{`tags: []`, ""},
		{`tags:`, ""},
	} {
		doc := mustParse(t, "x.md", []byte("---\n"+tt.yaml+"\n---\n"), Options{})
		if got := strings.Join(doc.Tags, ","); got != tt.want {
			t.Errorf("%s: tags %q, want %q", tt.yaml, got, tt.want)
		}
	}
}

func TestDates(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"2024-03-01", "2024-03-01T00:00:00Z"},
		{`"2024-03-01"`, "2024-03-01T00:00:00Z"},
		{"2024-03-01T10:30:00+02:00", "2024-03-01T10:30:00+02:00"},
		{"2024-03-01T10:30:00.5Z", "2024-03-01T10:30:00Z"},
	} {
		doc := mustParse(t, "x.md", []byte("---\ndate: "+tt.in+"\n---\n"), Options{})
		if got := doc.EffectiveDate.Format(time.RFC3339); got != tt.want {
			t.Errorf("date %s: got %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestNullValuesAreAbsent(t *testing.T) {
	t.Parallel()
	doc := mustParse(t, "x.md", []byte("---\nid:\ntitle: ~\ntype:\nstatus: ''\ntier:\nretrieval_priority:\ndate:\nrelated:\n---\n"), Options{})
	if doc.Slug != "x" || doc.Title != "x" || doc.CanonicalType != "" || doc.Tier != "human" || doc.RetrievalPriority != 50 || doc.EffectiveDate != nil || doc.Links != nil {
		t.Errorf("%+v", doc)
	}
}

const allowedKeys = "allowed: id, title, type, status, retrieval_priority, tier, evidence_tier, tags, owners, project, date, source_type, summary, supersedes, related, rejects, attendees, entities, aliases, role, members, facts, access, lang"

func TestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, src, want string
	}{
		// File level.
		{"invalid UTF-8", "a.md", "# T\n\nok\nbad \xff here\n", "a.md:4: invalid UTF-8: byte 0xff at column 5"},
		{"invalid UTF-8 in frontmatter", "a.md", "---\ntitle: \xc3\x28\n---\n", "a.md:2: invalid UTF-8: byte 0xc3 at column 8"},
		{"invalid UTF-8 after CRLF lines", "a.md", "one\r\ntwo\r\n\xfe\r\n", "a.md:3: invalid UTF-8: byte 0xfe at column 1"},
		{"NUL byte", "a.md", "text\nx\x00y\n", "a.md:2: NUL byte at column 2"},
		{"unterminated frontmatter", "a.md", "---\ntitle: a\n\n# Body\n", `a.md:1: unterminated frontmatter: no closing "---"`},
		{"lone opening line", "a.md", "---", `a.md:1: unterminated frontmatter: no closing "---"`},
		{"empty slug from path", ".md", "text", `.md:1: empty slug (from the file path; set "id:" in the frontmatter)`},
		{"whitespace in path slug", "my notes/x.md", "text", `my notes/x.md:1: slug "my notes/x" contains whitespace (from the file path; set "id:" in the frontmatter)`},
		{"NUL in path slug", "a\x00.md", "text", "a\x00.md:1: slug \"a\\x00\" contains a NUL character (U+0000), which text cannot hold (from the file path; set \"id:\" in the frontmatter)"},
		{"control character in path slug", "a\x01.md", "text", "a\x01.md:1: slug \"a\\x01\" contains a control character (U+0001) (from the file path; set \"id:\" in the frontmatter)"},
		{"path slug too long", strings.Repeat("p", 600) + ".md", "text", strings.Repeat("p", 600) + `.md:1: slug "` + strings.Repeat("p", 100) + `"… is 600 bytes long; the limit is 512 (from the file path; set "id:" in the frontmatter)`},

		// YAML syntax, mapped to file lines.
		{"mapping value", "a.md", "---\ntitle: a\ntype: b: c\n---\n", "a.md:3: invalid YAML: mapping values are not allowed in this context"},
		{"unclosed flow list", "a.md", "---\ntitle: a\ntags: [a, b\nstatus: draft\n---\n", "a.md:3: invalid YAML: did not find expected ',' or ']'"},
		{"tab indentation", "a.md", "---\ntitle: a\n\tstatus: x\n---\n", "a.md:3: invalid YAML: found a tab character that violates indentation"},
		{"stray list item", "a.md", "---\ntitle: a\nstatus: draft\n- x\n---\n", "a.md:4: invalid YAML: did not find expected key"},
		{"bad token on first line", "a.md", "---\ntitle: @x\n---\n", "a.md:2: invalid YAML: found character that cannot start any token"},
		{"unknown anchor", "a.md", "---\ntitle: a\ntags: *nope\n---\n", "a.md:3: invalid YAML: unknown anchor 'nope' referenced"},
		{"not a mapping", "a.md", "---\n- a\n- b\n---\n", "a.md:2: frontmatter must be a mapping of keys to values"},
		{"CRLF frontmatter", "a.md", "---\r\ntitle: a\r\ntype: b: c\r\n---\r\n", "a.md:3: invalid YAML: mapping values are not allowed in this context"},
		{"BOM frontmatter", "a.md", "\ufeff---\ntitle: a\ntype: b: c\n---\n", "a.md:3: invalid YAML: mapping values are not allowed in this context"},

		// Keys.
		{"unknown key", "a.md", "---\ntitle: a\ntitel: b\n---\n", `a.md:3: unknown key "titel"; ` + allowedKeys},
		{"lang not ISO 639-1", "a.md", "---\ntitle: a\nlang: german\n---\n", `a.md:3: lang: invalid language "german": want a two-letter ISO 639-1 code such as en, de or fr`},
		{"duplicate key", "a.md", "---\ntitle: a\nstatus: draft\ntitle: b\n---\n", `a.md:4: duplicate key "title" (first on line 2)`},
		{"title as list", "a.md", "---\ntitle: [a, b]\n---\n", "a.md:2: title must be a single value, not a list or mapping"},
		{"tags as mapping item", "a.md", "---\ntags:\n  - a\n  - {b: c}\n---\n", "a.md:4: tags must be a list of strings"},

		// Vocabularies.
		{"unknown type", "decisions/x.md", "---\nid: x\ntitle: X\ntype: decison\n---\n", `decisions/x.md:4: unknown type "decison"; valid: project-index, module-kb, decision, runbook, standard, incident, integration, domain-concept, rejected-approach, person, team, project`},
		{"unknown status", "a.md", "---\nstatus: aproved\n---\n", `a.md:2: unknown status "aproved"; valid: draft, review, accepted, active, superseded, deprecated, archived`},
		{"unknown tier", "a.md", "---\ntier: robot\n---\n", `a.md:2: unknown tier "robot"; valid: human, auto`},
		{"unknown evidence tier", "a.md", "---\nevidence_tier: rumour\n---\n", `a.md:2: unknown evidence_tier "rumour"; valid: guideline, peer_reviewed, official, preprint, news, blog, search_hint, unverified`},

		// Numbers and dates.
		{"priority too high", "a.md", "---\nretrieval_priority: 101\n---\n", `a.md:2: retrieval_priority must be an integer from 0 to 100, got "101"`},
		{"priority negative", "a.md", "---\nretrieval_priority: -1\n---\n", `a.md:2: retrieval_priority must be an integer from 0 to 100, got "-1"`},
		{"priority fraction", "a.md", "---\nretrieval_priority: 50.5\n---\n", `a.md:2: retrieval_priority must be an integer from 0 to 100, got "50.5"`},
		{"priority word", "a.md", "---\nretrieval_priority: high\n---\n", `a.md:2: retrieval_priority must be an integer from 0 to 100, got "high"`},
		{"priority list", "a.md", "---\nretrieval_priority: [1]\n---\n", `a.md:2: retrieval_priority must be an integer from 0 to 100, got a list`},
		{"impossible date", "a.md", "---\ndate: 2024-02-30\n---\n", `a.md:2: invalid date "2024-02-30": want YYYY-MM-DD or RFC 3339`},
		{"prose date", "a.md", "---\ndate: March 1st\n---\n", `a.md:2: invalid date "March 1st": want YYYY-MM-DD or RFC 3339`},
		{"invalid project", "a.md", "---\nproject: shop api\n---\n", `a.md:2: invalid project key "shop api": must match ^[a-z0-9][a-z0-9_.-]{0,62}$`},

		// Links.
		{"unknown edge type", "a.md", "---\nrelated:\n  - to: b\n    type: relates\n---\n", `a.md:4: unknown edge type "relates"; valid: decision_for, implements, supersedes, depends_on, uses, affects, documented_by, invalidated_by, owned_by, related_to`},
		{"negative weight", "a.md", "---\nrelated:\n  - {to: b, weight: -0.5}\n---\n", `a.md:3: weight must be a number from 0 to 100, got "-0.5"`},
		{"weight over 100", "a.md", "---\nrelated:\n  - to: b\n    weight: 100.5\n---\n", `a.md:4: weight must be a number from 0 to 100, got "100.5"`},
		{"weight not a number", "a.md", "---\nrelated:\n  - to: b\n    weight: .nan\n---\n", `a.md:4: weight must be a number from 0 to 100, got ".nan"`},
		{"related without to", "a.md", "---\nrelated:\n  - type: uses\n---\n", `a.md:3: related entry needs "to"`},
		{"related unknown key", "a.md", "---\nrelated:\n  - {to: b, kind: uses}\n---\n", `a.md:3: unknown key "kind" in related; allowed: to, type, weight`},
		{"related empty item", "a.md", "---\nrelated:\n  -\n---\n", `a.md:3: related: empty slug`},
		{"link target with space", "a.md", "---\nsupersedes:\n  - ok\n  - dec old\n---\n", `a.md:4: supersedes: slug "dec old" contains whitespace`},
		{"related target with space", "a.md", "---\nrelated: [a b]\n---\n", `a.md:2: related: slug "a b" contains whitespace`},
		{"self supersede", "dec/a.md", "---\nsupersedes: [Dec/A]\n---\n", `dec/a.md:2: supersedes: "dec/a" is this document's own slug`},
		{"self reject via id", "a.md", "---\nid: dec-x\nrejects:\n  - dec-x\n---\n", `a.md:4: rejects: "dec-x" is this document's own slug`},
		{"wikilink with space", "a.md", "---\ntitle: T\n---\n# T\n\nSee [[ok]] and\nalso [[Some Page]].\n", `a.md:7: wikilink [[Some Page]]: slug "some page" contains whitespace`},

		// Slugs.
		{"empty id", "a.md", "---\nid: ''\n---\n", "a.md:2: id: empty slug"},
		{"id with whitespace", "a.md", "---\nid: dec cache\n---\n", `a.md:2: id: slug "dec cache" contains whitespace`},
		{"id too long", "a.md", "---\nid: " + strings.Repeat("i", 513) + "\n---\n", `a.md:2: id: slug "` + strings.Repeat("i", 100) + `"… is 513 bytes long; the limit is 512`},

		// Type-specific keys.
		{"aliases on a decision", "a.md", "---\ntype: decision\naliases: [x]\n---\n", "a.md:3: aliases is only allowed on entity pages (type: person, team, project)"},
		{"role without type", "a.md", "---\nrole: lead\n---\n", "a.md:2: role is only allowed on entity pages (type: person, team, project)"},
		{"facts before type", "a.md", "---\nfacts: [x]\ntype: runbook\n---\n", "a.md:2: facts is only allowed on entity pages (type: person, team, project)"},
		{"members on a person", "a.md", "---\ntype: person\nmembers: [a]\n---\n", "a.md:3: members is only allowed on team pages (type: team)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Parse(tt.path, []byte(tt.src), Options{})
			if err == nil {
				t.Fatalf("no error; document %+v", doc)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T, want *ParseError", err)
			}
			if err.Error() != tt.want {
				t.Errorf("got  %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestParseReturnsNilErrorInterface(t *testing.T) {
	t.Parallel()
	if _, err := Parse("a.md", []byte("text"), Options{}); err != nil {
		t.Fatal(err)
	}
}

func TestWikilinks(t *testing.T) {
	t.Parallel()
	doc := mustParse(t, "notes/wiki.md", readFixture(t, "wikilinks.md"), Options{})
	var got []string
	for _, l := range doc.Links {
		if l.Provenance == ProvenanceWikilink {
			if l.From != "notes/wiki" || l.EdgeType != "related_to" || l.Weight != 0.5 {
				t.Errorf("wikilink %+v", l)
			}
			got = append(got, l.To)
		}
	}
	want := []string{"std-cache", "svc-orders", "rb-flush", "module-kb/cache"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("wikilink targets %q, want %q", got, want)
	}
	if n := len(doc.Links) - len(got); n != 2 {
		t.Errorf("%d frontmatter links, want 2", n)
	}
	text := doc.Chunks[0].Text
	for _, s := range []string{"Std-Cache, the standard, notes/wiki (self)", "order timeouts,", "[[escaped]]", "flush runbook | in a table", "list item with module-kb/cache"} {
		if !strings.Contains(text, s) {
			t.Errorf("chunk text lacks %q:\n%s", s, text)
		}
	}
}

func TestFencedCodeIsNotStructure(t *testing.T) {
	t.Parallel()
	doc := mustParse(t, "fenced.md", readFixture(t, "fenced.md"), Options{})
	var paths []string
	for _, c := range doc.Chunks {
		paths = append(paths, strings.Join(c.HeadingPath, " > "))
	}
	if want := []string{"Fences", "Fences > Real heading"}; !reflect.DeepEqual(paths, want) {
		t.Fatalf("heading paths %q, want %q", paths, want)
	}
	if len(doc.Links) != 1 || doc.Links[0].To != "real-link" {
		t.Errorf("links %+v, want only real-link (none from code)", doc.Links)
	}
	for _, s := range []string{"```markdown\n# Not a heading\n## Also not a heading\n[[not-a-link]]\n```", "```\n## Still code\n```", "```\n# indented code, not a heading\n```"} {
		if !strings.Contains(doc.Chunks[0].Text, s) {
			t.Errorf("first chunk lacks %q:\n%s", s, doc.Chunks[0].Text)
		}
	}
	if !strings.Contains(doc.Chunks[1].Text, "Runs `if [[ -f x ]]` and links real-link.") {
		t.Errorf("second chunk: %s", doc.Chunks[1].Text)
	}
}

func TestSummaryChunk(t *testing.T) {
	t.Parallel()
	src := "---\ntype: standard\n---\n# Cache standard\n\nFirst *paragraph* with `code` and [a link](x.md).\n\n## Rule\n\nUse Redis.\n"
	doc := mustParse(t, "std/cache.md", []byte(src), Options{})
	if doc.Summary != "First paragraph with `code` and a link." {
		t.Errorf("summary %q", doc.Summary)
	}
	want := []Chunk{
		{0, []string{"Cache standard"}, "First paragraph with `code` and a link.", CountTokens("First paragraph with `code` and a link."), true, nil},
		{1, []string{"Cache standard"}, "First paragraph with `code` and a link.", CountTokens("First paragraph with `code` and a link."), false, nil},
		{2, []string{"Cache standard", "Rule"}, "Use Redis.", CountTokens("Use Redis."), false, nil},
	}
	if !reflect.DeepEqual(doc.Chunks, want) {
		t.Errorf("chunks:\n got %+v\nwant %+v", doc.Chunks, want)
	}

	// The same document without a type has no summary chunk.
	raw := mustParse(t, "std/cache.md", []byte(strings.Replace(src, "type: standard", "", 1)), Options{})
	if len(raw.Chunks) != 2 || raw.Chunks[0].IsSummary || raw.Chunks[0].Ordinal != 0 {
		t.Errorf("raw chunks %+v", raw.Chunks)
	}
}

func TestDerivedSummaryIsCapped(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("The cache keeps prices for five minutes and then reloads them from the catalogue. ", 40)
	doc := mustParse(t, "x.md", []byte(long), Options{})
	if n := CountTokens(doc.Summary); n > maxDerivedSummaryTokens || n < maxDerivedSummaryTokens/2 {
		t.Errorf("summary of %d tokens", n)
	}
	if !strings.HasSuffix(doc.Summary, "catalogue.") {
		t.Errorf("summary does not end on a sentence: %q", doc.Summary)
	}
	fm := mustParse(t, "x.md", []byte("---\nsummary: |\n  "+long+"\n---\n"), Options{})
	if fm.Summary != strings.TrimSpace(long) {
		t.Error("a frontmatter summary is not capped")
	}
}

func TestOnlyFrontmatter(t *testing.T) {
	t.Parallel()
	doc := mustParse(t, "runbooks/flush.md", readFixture(t, "only-frontmatter.md"), Options{})
	want := []Chunk{{0, []string{"Only frontmatter"}, "Flush the cache safely.", CountTokens("Flush the cache safely."), true, nil}}
	if !reflect.DeepEqual(doc.Chunks, want) {
		t.Errorf("chunks %+v, want %+v", doc.Chunks, want)
	}
	// Without a summary the title is the text.
	doc = mustParse(t, "runbooks/flush.md", []byte("---\ntype: runbook\n---\n"), Options{})
	if len(doc.Chunks) != 1 || doc.Chunks[0].Text != "flush" || !doc.Chunks[0].IsSummary {
		t.Errorf("chunks %+v", doc.Chunks)
	}
	// Empty frontmatter, empty file.
	for _, src := range []string{"---\n---\n", "---\n...\n", ""} {
		doc := mustParse(t, "empty.md", []byte(src), Options{})
		if len(doc.Chunks) != 1 || doc.Chunks[0].Text != "empty" || doc.Chunks[0].IsSummary {
			t.Errorf("%q: chunks %+v", src, doc.Chunks)
		}
	}
}

func TestLineEndingsAndBOM(t *testing.T) {
	t.Parallel()
	lf := readFixture(t, "all-keys.md")
	want := mustParse(t, "a.md", lf, Options{})
	for name, src := range map[string][]byte{
		"CRLF":     []byte(strings.ReplaceAll(string(lf), "\n", "\r\n")),
		"CR":       []byte(strings.ReplaceAll(string(lf), "\n", "\r")),
		"BOM":      append([]byte("\ufeff"), lf...),
		"BOM+CRLF": append([]byte("\ufeff"), strings.ReplaceAll(string(lf), "\n", "\r\n")...),
	} {
		got := mustParse(t, "a.md", src, Options{})
		if got.ContentHash == want.ContentHash {
			t.Errorf("%s: the hash must be of the raw bytes", name)
		}
		got.ContentHash = want.ContentHash
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v\nwant %+v", name, got, want)
		}
	}
	bom := mustParse(t, "bom.md", readFixture(t, "bom.md"), Options{})
	if bom.Title != "With BOM" || bom.CanonicalType != "standard" || bom.Chunks[1].Text != "Text after a BOM." {
		t.Errorf("BOM file: %+v", bom)
	}
}

func TestNormalizeSlug(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"  Dec-Cache-V2 ": "dec-cache-v2",
		"People/Ana":      "people/ana",
		"Jane \t Doe":     "jane doe",
		"":                "",
		"ÄRGER":           "ärger",
	} {
		if got := NormalizeSlug(in); got != want {
			t.Errorf("NormalizeSlug(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOptionsDefaults(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want Options }{
		{Options{}, Options{512, 64}},
		{Options{ChunkTokens: 200, OverlapTokens: -1}, Options{200, 0}},
		{Options{ChunkTokens: 5}, Options{32, 16}},
		{Options{ChunkTokens: 100, OverlapTokens: 80}, Options{100, 50}},
	} {
		if got := tt.in.withDefaults(); got != tt.want {
			t.Errorf("%+v.withDefaults() = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestConcurrentParse(t *testing.T) {
	t.Parallel()
	src := readFixture(t, filepath.Join("golden", "decisions", "dec-cache-v2.md"))
	want := dumpDocument(mustParse(t, "d.md", src, Options{}))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				doc, err := Parse("d.md", src, Options{})
				if err != nil || dumpDocument(doc) != want {
					t.Error("concurrent Parse differs")
					return
				}
			}
		})
	}
	wg.Wait()
}
