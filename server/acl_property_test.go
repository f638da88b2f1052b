package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/canonkb/canon/auth"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/gen/canon/v1/canonv1connect"
	"github.com/canonkb/canon/ingest"
)

// TestDocumentACLProperty: over random corpora (projects, documents, people,
// teams, meetings, rejected approaches, edges, access lists) and random keys and
// questions, no document a key may not see appears anywhere in what the server
// answers: search (every block and the explain), chat (answer, citations), the
// web chat stream (citations, related, rejected, follow-ups), graph show,
// document reads, content gaps and project counts. Every document's slug is a
// random token written into its title and body, so a leak of its id, title or
// text shows as the token in the response. CANON_ACL_SEED and CANON_ACL_CORPORA
// reproduce or widen a run (make fuzz runs more corpora).
func TestDocumentACLProperty(t *testing.T) {
	seed := uint64(20261126)
	if s := os.Getenv("CANON_ACL_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CANON_ACL_SEED=%q: %v", s, err)
		}
		seed = v
	}
	corpora := 4
	if s := os.Getenv("CANON_ACL_CORPORA"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("CANON_ACL_CORPORA=%q: want a positive number", s)
		}
		corpora = v
	}
	var cases, exercised int
	for i := range corpora {
		s := seed + uint64(i)
		t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) {
			c, e := checkACLCorpus(t, s)
			cases += c
			exercised += e
		})
	}
	t.Logf("%d cases over %d corpora; %d times a hidden document was among the all-seeing key's hits", cases, corpora, exercised)
	// The property would hold vacuously if no question ever reached a hidden document.
	if !t.Failed() && exercised == 0 {
		t.Error("no hidden document ever matched a question: the generator does not exercise the ACL")
	}
}

var (
	aclProjects = []string{"alpha", "beta"}
	aclGroups   = []string{"g1", "g2", "g3"}
	aclWords    = []string{"cache", "queue", "ledger", "deploy", "failover", "schema", "index", "replica",
		"billing", "latency", "webhook", "rollback", "vacuum", "shard", "token", "invoice", "partition", "backup"}
	aclFirst = []string{"Alba", "Brice", "Cyra", "Dorian", "Elske", "Faro", "Gwen", "Hollis", "Ivo", "Juna"}
	aclLast  = []string{"Quist", "Varga", "Ostby", "Renn", "Malloy", "Tiber", "Sauer", "Nakai"}
	aclTeams = []string{"Orbit", "Harbor", "Falcon", "Cedar", "Summit"}
)

// aclDoc is a generated document and who may see it.
type aclDoc struct {
	project, slug string
	access        []string
}

// aclKey is a generated API key.
type aclKey struct {
	key              string
	projects, groups []string
}

// hidden reports whether the key may not see d.
func (k aclKey) hidden(d aclDoc) bool {
	if !slices.Contains(k.projects, d.project) {
		return true
	}
	if len(d.access) == 0 {
		return false
	}
	for _, g := range d.access {
		if slices.Contains(k.groups, g) {
			return false
		}
	}
	return true
}

type aclCorpus struct {
	files  map[string][]ingest.File
	docs   []aclDoc
	people []string // names, hidden ones included: questions name them too
	teams  []string
}

func genACLCorpus(r *rand.Rand) aclCorpus {
	c := aclCorpus{files: map[string][]ingest.File{}}
	token := func(prefix string) string {
		b := make([]byte, 10)
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		return prefix + string(b)
	}
	words := func(n int) string { return strings.Join(pick(r, aclWords, n), " ") }
	access := func() []string {
		if r.IntN(10) < 4 {
			return pick(r, aclGroups, 1+r.IntN(2))
		}
		return nil
	}
	list := func(xs []string) string { return "[" + strings.Join(xs, ", ") + "]" }
	for _, project := range aclProjects {
		var slugs, people []string
		add := func(slug, frontmatter, title, body string) {
			a := access()
			fm := fmt.Sprintf("id: %s\ntitle: %q\nproject: %s\n%s", slug, title, project, frontmatter)
			if a != nil {
				fm += "access: " + list(a) + "\n"
			}
			c.files[project] = append(c.files[project], ingest.File{Path: slug + ".md",
				Content: []byte("---\n" + fm + "---\n\n# " + title + "\n\n" + body + "\n")})
			c.docs = append(c.docs, aclDoc{project: project, slug: slug, access: a})
			slugs = append(slugs, slug)
		}
		sentence := func(slug string) string {
			return fmt.Sprintf("Note %s: we looked at the %s and the %s. The %s needs care.", slug, words(3), words(2), words(2))
		}
		for range 3 + r.IntN(3) {
			slug := token("per")
			name := aclFirst[r.IntN(len(aclFirst))] + " " + aclLast[r.IntN(len(aclLast))]
			c.people = append(c.people, name)
			people = append(people, slug)
			add(slug, fmt.Sprintf("type: person\nrole: %q\nfacts:\n  - %q\n", "engineer on "+words(2), "runs the "+words(2)),
				name+" "+slug, sentence(slug))
		}
		for range 1 + r.IntN(2) {
			slug := token("team")
			name := aclTeams[r.IntN(len(aclTeams))] + " team"
			c.teams = append(c.teams, name)
			add(slug, fmt.Sprintf("type: team\nmembers: %s\nrole: %q\n", list(pick(r, people, 2+r.IntN(2))), "owns the "+words(2)),
				name+" "+slug, sentence(slug))
		}
		var rejected []string
		for range 1 + r.IntN(2) {
			slug := token("rej")
			rejected = append(rejected, slug)
			add(slug, "type: rejected-approach\nstatus: accepted\nsource_type: adr\n",
				"Rejected: "+words(2)+" "+slug, sentence(slug)+" We rejected it for the "+words(2)+".")
		}
		var decisions []string
		for range 3 + r.IntN(3) {
			slug := token("dec")
			fm := fmt.Sprintf("type: decision\nstatus: accepted\nsource_type: adr\nowners: %s\ntags: %s\n",
				list(pick(r, people, 1+r.IntN(2))), list(pick(r, aclWords, 2)))
			if r.IntN(2) == 0 {
				fm += "rejects: " + list(pick(r, rejected, 1)) + "\n"
			}
			if len(decisions) > 0 && r.IntN(3) == 0 {
				fm += "related:\n  - {to: " + decisions[r.IntN(len(decisions))] + ", type: depends_on, weight: 0.8}\n"
			}
			decisions = append(decisions, slug)
			add(slug, fm, "Decision on "+words(2)+" "+slug, sentence(slug)+"\n\n## Consequences\n\n"+sentence(slug))
		}
		for range 2 + r.IntN(2) {
			slug := token("mtg")
			add(slug, fmt.Sprintf("source_type: meeting-notes\nattendees: %s\ndate: 2025-0%d-1%d\n",
				list(pick(r, people, 2)), 1+r.IntN(9), r.IntN(10)), "Meeting about "+words(2)+" "+slug, sentence(slug))
		}
		for range 3 + r.IntN(3) {
			slug := token("doc")
			add(slug, fmt.Sprintf("tags: %s\n", list(pick(r, aclWords, 2))), "Runbook for "+words(2)+" "+slug,
				sentence(slug)+"\n\n## Steps\n\n"+sentence(slug))
		}
	}
	return c
}

// questions returns the questions a key asks of a corpus.
func (c aclCorpus) questions(r *rand.Rand) []string {
	w := func() string { return aclWords[r.IntN(len(aclWords))] }
	person := func() string { return c.people[r.IntN(len(c.people))] }
	team := func() string { return c.teams[r.IntN(len(c.teams))] }
	return []string{
		fmt.Sprintf("what did %s say about the %s?", person(), w()),
		fmt.Sprintf("%s %s %s", w(), w(), w()),
		fmt.Sprintf("what has the %s been working on?", team()),
		fmt.Sprintf("how do we handle the %s %s?", w(), w()),
		fmt.Sprintf("why did we reject the %s?", w()),
		fmt.Sprintf("what has %s been working on?", person()),
	}
}

// checkACLCorpus builds one corpus and checks every surface for every key; it
// returns the cases it checked and how often a hidden document was a hit of the
// all-seeing key for the same question (the property was put to the test).
func checkACLCorpus(t *testing.T, seed uint64) (cases, exercised int) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c := genACLCorpus(r)
	srv, pool := newServerOver(t, auth.Config{Required: true}, c.files)
	ctx := context.Background()

	all, _ := newKey(t, pool, "reader", aclProjects, aclGroups...)
	var keys []aclKey
	for i := range 4 {
		projects := aclProjects
		if i > 0 && r.IntN(2) == 0 {
			j := r.IntN(len(aclProjects))
			projects = aclProjects[j : j+1]
		}
		var groups []string
		for _, g := range aclGroups {
			if r.IntN(3) == 0 {
				groups = append(groups, g)
			}
		}
		key, _ := newKey(t, pool, "reader", projects, groups...)
		keys = append(keys, aclKey{key: key, projects: projects, groups: groups})
	}

	for ki, k := range keys {
		var forbidden []string
		for _, d := range c.docs {
			if k.hidden(d) {
				forbidden = append(forbidden, d.slug)
			}
		}
		where := func(what string) string {
			return fmt.Sprintf("seed %d, key %d (projects %v, groups %v), %s", seed, ki, k.projects, k.groups, what)
		}
		check := func(what, body string) {
			cases++
			for _, slug := range forbidden {
				if strings.Contains(body, slug) {
					t.Errorf("%s: the answer shows %s, which the key may not see", where(what), slug)
				}
			}
		}
		filters := &canonv1.Filters{ProjectKeys: k.projects}
		sc := canonv1connect.NewSearchServiceClient(srv.Client(), srv.URL, bearer(k.key))
		cc := canonv1connect.NewChatServiceClient(srv.Client(), srv.URL, bearer(k.key))
		ref := canonv1connect.NewSearchServiceClient(srv.Client(), srv.URL, bearer(all))
		for qi, q := range c.questions(r) {
			req := &canonv1.SearchRequest{Query: q, Filters: filters, Options: &canonv1.SearchOptions{Explain: true}}
			res, err := sc.Search(ctx, connect.NewRequest(req))
			if err != nil {
				t.Fatalf("%s: %v", where("search "+q), err)
			}
			check("search "+q, protoJSON(t, res.Msg))
			if rr, err := ref.Search(ctx, connect.NewRequest(req)); err == nil {
				for _, h := range rr.Msg.GetResult().GetPrimary() {
					if slices.Contains(forbidden, h.GetDocId()) {
						exercised++
					}
				}
			}
			chat, err := cc.Chat(ctx, connect.NewRequest(&canonv1.ChatRequest{Question: q, Filters: filters}))
			if err != nil {
				t.Fatalf("%s: %v", where("chat "+q), err)
			}
			check("chat "+q, protoJSON(t, chat.Msg))
			if qi%2 == 0 {
				check("web chat "+q, webChat(t, srv.URL, k.key, q, k.projects))
			}
		}
		// Graph show and document reads, of documents hidden or not.
		for _, d := range pick(r, c.docs, 6) {
			gc := canonv1connect.NewCanonServiceClient(srv.Client(), srv.URL, bearer(k.key))
			g, err := gc.ShowGraph(ctx, connect.NewRequest(&canonv1.ShowGraphRequest{ProjectKey: d.project, Slug: d.slug}))
			status, body := getWithKey(t, srv.URL+"/api/doc/"+d.project+"/"+d.slug, k.key)
			cases += 2
			if k.hidden(d) {
				if want := []connect.Code{connect.CodeNotFound, connect.CodePermissionDenied}; !slices.Contains(want, codeOf(err)) {
					t.Errorf("%s: graph show answered %v, want NotFound or PermissionDenied", where("graph show "+d.slug), err)
				}
				if status != http.StatusNotFound && status != http.StatusForbidden {
					t.Errorf("%s: status %d, want 404 or 403", where("document "+d.slug), status)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", where("graph show "+d.slug), err)
			}
			check("graph show "+d.slug, protoJSON(t, g.Msg))
			if status != http.StatusOK {
				t.Errorf("%s: status %d, want 200", where("document "+d.slug), status)
			}
			check("document "+d.slug, body)
		}
		// Content gaps (the refused questions above) and the project sizes.
		gc := canonv1connect.NewChatServiceClient(srv.Client(), srv.URL, bearer(k.key))
		for _, p := range k.projects {
			gaps, err := gc.ContentGaps(ctx, connect.NewRequest(&canonv1.ContentGapsRequest{ProjectKey: p}))
			if err != nil {
				t.Fatalf("%s: %v", where("content gaps"), err)
			}
			check("content gaps "+p, protoJSON(t, gaps.Msg))
		}
		pc := canonv1connect.NewProjectServiceClient(srv.Client(), srv.URL, bearer(k.key))
		projects, err := pc.ListProjects(ctx, connect.NewRequest(&canonv1.ListProjectsRequest{}))
		if err != nil {
			t.Fatalf("%s: %v", where("list projects"), err)
		}
		cases++
		for _, p := range projects.Msg.GetProjects() {
			visible := 0
			for _, d := range c.docs {
				if d.project == p.GetProjectKey() && !k.hidden(d) {
					visible++
				}
			}
			if !slices.Contains(k.projects, p.GetProjectKey()) || p.GetDocuments() != int64(visible) {
				t.Errorf("%s: project %s lists %d documents, the key sees %d", where("list projects"), p.GetProjectKey(),
					p.GetDocuments(), visible)
			}
		}
	}
	return cases, exercised
}

func pick[T any](r *rand.Rand, from []T, n int) []T {
	out := slices.Clone(from)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out[:min(n, len(out))]
}

func protoJSON(t *testing.T, m proto.Message) string {
	t.Helper()
	b, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// webChat asks through POST /api/chat and returns the whole event stream.
func webChat(t *testing.T, url, key, question string, projects []string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"id":       "acl",
		"messages": []map[string]any{{"id": "1", "role": "user", "parts": []map[string]string{{"type": "text", "text": question}}}},
		"filters":  map[string]any{"project_keys": projects},
	})
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url+"/api/chat", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `"type":"finish"`) && !strings.Contains(string(b), "data-refusal") {
		t.Fatalf("web chat %q: status %d, %s", question, res.StatusCode, b)
	}
	return string(b)
}

func getWithKey(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
