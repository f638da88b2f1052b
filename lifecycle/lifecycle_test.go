package lifecycle_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/lifecycle"
	"github.com/canonkb/canon/markdown"
)

const project = "life"

// corpus: two decisions (v2 supersedes nothing yet), a module, a raw note that
// dec-v2 already links to (the link waits until the note is canonical).
func corpus() map[string]string {
	return map[string]string{
		"dec-v1.md":   "---\nid: dec-v1\ntitle: Cache v1\ntype: decision\nstatus: accepted\n---\n\nSingle Redis primary.\n",
		"dec-v2.md":   "---\nid: dec-v2\ntitle: Cache v2\ntype: decision\nstatus: accepted\nrelated:\n  - {to: note-raw, type: depends_on, weight: 0.9}\n---\n\nRedis Cluster.\n",
		"mod-x.md":    "---\nid: mod-x\ntitle: Module x\ntype: module-kb\nstatus: active\n---\n\nA module.\n",
		"note-raw.md": "---\nid: note-raw\ntitle: Raw note\n---\n\nNotes about memcached.\n",
	}
}

type env struct {
	pool *pgxpool.Pool
	svc  *lifecycle.Service
	in   *ingest.Ingester
}

func setup(t *testing.T) *env {
	t.Helper()
	p := dbtest.FreshPool(t)
	e := &env{pool: p, svc: lifecycle.New(p),
		in: ingest.New(p, embed.NewHash(384), markdown.Options{ChunkTokens: 512, OverlapTokens: 64})}
	e.ingest(t, corpus())
	return e
}

func (e *env) ingest(t *testing.T, files map[string]string) ingest.Result {
	t.Helper()
	var fs []ingest.File
	for path, c := range files {
		fs = append(fs, ingest.File{Path: path, Content: []byte(c)})
	}
	slices.SortFunc(fs, func(a, b ingest.File) int { return strings.Compare(a.Path, b.Path) })
	res, err := e.in.Ingest(context.Background(), fs, ingest.Options{Project: project})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("ingest errors: %v", res.Errors)
	}
	return res
}

func (e *env) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *env) audits(t *testing.T) int { return e.count(t, "SELECT count(*) FROM lifecycle_audit") }

// edge returns the provenance of the edge from -type-> to, or "" when absent.
func (e *env) edge(t *testing.T, from, edgeType, to string) string {
	t.Helper()
	var prov string
	err := e.pool.QueryRow(context.Background(), `
		SELECT coalesce(max(e.provenance), '') FROM kb_edges e
		JOIN kb_nodes fn ON fn.id = e.from_node_id JOIN documents fd ON fd.id = fn.document_id
		JOIN kb_nodes tn ON tn.id = e.to_node_id JOIN documents td ON td.id = tn.document_id
		WHERE fd.slug = $1 AND e.edge_type = $2 AND td.slug = $3`, from, edgeType, to).Scan(&prov)
	if err != nil {
		t.Fatal(err)
	}
	return prov
}

func (e *env) state(t *testing.T, slug string) lifecycle.State {
	t.Helper()
	var s lifecycle.State
	var typ, status *string
	err := e.pool.QueryRow(context.Background(),
		"SELECT canonical_type, status, retrieval_priority FROM documents WHERE slug = $1", slug).Scan(&typ, &status, &s.RetrievalPriority)
	if err != nil {
		t.Fatal(err)
	}
	if typ != nil {
		s.CanonicalType = *typ
	}
	if status != nil {
		s.Status = *status
	}
	return s
}

// must fails the test on an error: must(t)(svc.Op(...)).
func must(t *testing.T) func(lifecycle.Change, error) lifecycle.Change {
	return func(ch lifecycle.Change, err error) lifecycle.Change {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
}

func TestPromote(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	if e.edge(t, "dec-v2", "depends_on", "note-raw") != "" {
		t.Fatal("test premise: a link to a raw document is not an edge yet")
	}
	prio := 70
	ch := must(t)(e.svc.Promote(ctx, "alice", lifecycle.PromoteRequest{Project: project, Slug: "note-raw",
		Type: "standard", Status: "accepted", Priority: &prio}))
	want := lifecycle.State{CanonicalType: "standard", Status: "accepted", RetrievalPriority: 70}
	if !ch.Changed || ch.After != want || ch.Before != (lifecycle.State{RetrievalPriority: 50}) || ch.AuditID == 0 {
		t.Errorf("change: %+v", ch)
	}
	if got := e.state(t, "note-raw"); got != want {
		t.Errorf("stored %+v", got)
	}
	if n := e.count(t, "SELECT count(*) FROM kb_nodes n JOIN documents d ON d.id = n.document_id WHERE d.slug = 'note-raw' AND n.node_type = 'standard'"); n != 1 {
		t.Errorf("graph node: %d", n)
	}
	// The link dec-v2 declared while the note was raw resolves now, as declared.
	if got := e.edge(t, "dec-v2", "depends_on", "note-raw"); got != "frontmatter" {
		t.Errorf("waiting link should resolve on promote, got %q", got)
	}
	var actor, op string
	var before, after []byte
	err := e.pool.QueryRow(ctx, "SELECT actor, operation, before, after FROM lifecycle_audit WHERE id = $1", ch.AuditID).
		Scan(&actor, &op, &before, &after)
	if err != nil {
		t.Fatal(err)
	}
	var b, a map[string]any
	if err := json.Unmarshal(before, &b); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(after, &a); err != nil {
		t.Fatal(err)
	}
	if actor != "alice" || op != "promote" || b["canonical_type"] != nil || a["canonical_type"] != "standard" ||
		a["retrieval_priority"] != float64(70) {
		t.Errorf("audit: actor %q op %q before %s after %s", actor, op, before, after)
	}

	// Re-running changes nothing and records nothing.
	again := must(t)(e.svc.Promote(ctx, "bob", lifecycle.PromoteRequest{Project: project, Slug: "note-raw",
		Type: "standard", Status: "accepted", Priority: &prio}))
	if again.Changed || again.AuditID != 0 || e.audits(t) != 1 {
		t.Errorf("re-run: %+v, %d audit rows", again, e.audits(t))
	}
	// Without --priority the priority stays.
	ch = must(t)(e.svc.Promote(ctx, "alice", lifecycle.PromoteRequest{Project: project, Slug: "note-raw", Type: "decision", Status: "review"}))
	if ch.After.RetrievalPriority != 70 || e.state(t, "note-raw").CanonicalType != "decision" {
		t.Errorf("retype: %+v", ch)
	}
}

func TestSupersede(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	ch := must(t)(e.svc.Supersede(ctx, "alice", project, "dec-v1", "dec-v2"))
	if !ch.Changed || ch.Slug != "dec-v1" || ch.After.Status != "superseded" ||
		!slices.Equal(ch.EdgesAdded, []lifecycle.Edge{{From: "dec-v2", To: "dec-v1", EdgeType: "supersedes", Weight: 1}}) {
		t.Errorf("change: %+v", ch)
	}
	if got := e.edge(t, "dec-v2", "supersedes", "dec-v1"); got != "lifecycle" {
		t.Errorf("edge provenance %q", got)
	}
	for range 3 {
		again := must(t)(e.svc.Supersede(ctx, "alice", project, "dec-v1", "dec-v2"))
		if again.Changed || len(again.EdgesAdded) != 0 {
			t.Errorf("re-run changed something: %+v", again)
		}
	}
	if n := e.count(t, "SELECT count(*) FROM kb_edges WHERE edge_type = 'supersedes'"); n != 1 || e.audits(t) != 1 {
		t.Errorf("%d supersedes edges, %d audit rows after re-runs", n, e.audits(t))
	}
	// The reverse would be a cycle.
	var se *lifecycle.StateError
	if _, err := e.svc.Supersede(ctx, "alice", project, "dec-v2", "dec-v1"); !errors.As(err, &se) {
		t.Errorf("reverse supersede: %v", err)
	}
	if e.state(t, "dec-v2").Status != "accepted" {
		t.Error("a failed operation must change nothing")
	}
	// Both ends must be canonical.
	if _, err := e.svc.Supersede(ctx, "alice", project, "note-raw", "dec-v2"); !errors.As(err, &se) {
		t.Errorf("raw old: %v", err)
	}
}

// decisionFile is an accepted decision's file; more adds frontmatter lines.
func decisionFile(slug string, more ...string) string {
	return "---\nid: " + slug + "\ntitle: Decision " + slug + "\ntype: decision\nstatus: accepted\n" +
		strings.Join(more, "\n") + "\n---\n\nWhat " + slug + " decides.\n"
}

// A supersede that would close a cycle of supersedes edges of any length (made
// by lifecycle operations or declared by files) is refused, naming the chain.
func TestSupersedeRefusesCycles(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		files    map[string]string
		before   [][2]string // supersedes (old, new) run first
		old, new string
		as       domain.Principal
		// refused: the message's chain; "" when the supersede is allowed.
		refused string
	}{
		{name: "direct reverse", before: [][2]string{{"cyc-a", "cyc-b"}}, old: "cyc-b", new: "cyc-a",
			refused: "cyc-b already supersedes cyc-a; the reverse would make a cycle"},
		{name: "three by lifecycle", before: [][2]string{{"cyc-a", "cyc-b"}, {"cyc-b", "cyc-c"}}, old: "cyc-c", new: "cyc-a",
			refused: "cyc-c already supersedes cyc-a through a chain (cyc-c -supersedes-> cyc-b -supersedes-> cyc-a)"},
		{name: "four through frontmatter", files: map[string]string{
			"fm-b.md": decisionFile("fm-b", "supersedes: [cyc-a]"),
			"fm-c.md": decisionFile("fm-c", "supersedes: [fm-b]"),
		}, before: [][2]string{{"fm-c", "cyc-b"}}, old: "cyc-b", new: "cyc-a",
			refused: "(cyc-b -supersedes-> fm-c -supersedes-> fm-b -supersedes-> cyc-a)"},
		{name: "hidden link named as such", files: map[string]string{
			"fm-b.md": decisionFile("fm-b", "supersedes: [cyc-a]", "access: [vault]"),
			"fm-c.md": decisionFile("fm-c", "supersedes: [fm-b]"),
		}, old: "fm-c", new: "cyc-a", as: domain.Principal{Name: "ed", Projects: []string{project}, Role: domain.RoleEditor},
			refused: "(fm-c -supersedes-> (a document you may not see) -supersedes-> cyc-a)"},
		{name: "a shortcut is no cycle", before: [][2]string{{"cyc-a", "cyc-b"}, {"cyc-b", "cyc-c"}}, old: "cyc-a", new: "cyc-c"},
		{name: "a cycle declared by files is walked to its end", files: map[string]string{
			"fm-b.md": decisionFile("fm-b", "supersedes: [fm-c]"),
			"fm-c.md": decisionFile("fm-c", "supersedes: [fm-b]"),
		}, old: "fm-b", new: "cyc-a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			ctx := context.Background()
			files := map[string]string{"cyc-a.md": decisionFile("cyc-a"), "cyc-b.md": decisionFile("cyc-b"), "cyc-c.md": decisionFile("cyc-c")}
			maps.Copy(files, c.files)
			e.ingest(t, files)
			for _, b := range c.before {
				must(t)(e.svc.Supersede(ctx, "alice", project, b[0], b[1]))
			}
			if c.as.Name != "" {
				ctx = domain.WithPrincipal(ctx, c.as)
			}
			statusBefore, audits := e.state(t, c.old).Status, e.audits(t)
			ch, err := e.svc.Supersede(ctx, "alice", project, c.old, c.new)
			if c.refused == "" {
				if err != nil || !ch.Changed {
					t.Fatalf("supersede %s by %s: %+v %v", c.old, c.new, ch, err)
				}
				return
			}
			var se *lifecycle.StateError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), c.refused) {
				t.Fatalf("supersede %s by %s: got %v, want a StateError containing %q", c.old, c.new, err, c.refused)
			}
			if e.state(t, c.old).Status != statusBefore || e.edge(t, c.new, "supersedes", c.old) != "" || e.audits(t) != audits {
				t.Error("a refused supersede must change nothing")
			}
		})
	}
}

// Promoting a raw document resolves the links files declared to and from it;
// when they would close a supersedes cycle, the promote is refused.
func TestPromoteRefusesToCloseACycle(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	e.ingest(t, map[string]string{
		"cyc-a.md": decisionFile("cyc-a", "supersedes: [cyc-raw]"),
		"cyc-b.md": decisionFile("cyc-b", "supersedes: [cyc-a]"),
		"raw.md":   "---\nid: cyc-raw\nsupersedes: [cyc-b]\n---\n\nA raw note that claims to supersede cyc-b.\n",
	})
	for _, op := range []func() error{
		func() error {
			return err2(e.svc.Promote(ctx, "alice", lifecycle.PromoteRequest{Project: project, Slug: "cyc-raw", Type: "decision", Status: "accepted"}))
		},
		func() error { return err2(e.svc.Reject(ctx, "alice", project, "cyc-raw", "cyc-a")) },
	} {
		err := op()
		var se *lifecycle.StateError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "(cyc-raw -supersedes-> cyc-b -supersedes-> cyc-a -supersedes-> cyc-raw)") {
			t.Errorf("got %v, want a StateError naming the cycle", err)
		}
	}
	if e.state(t, "cyc-raw").CanonicalType != "" || e.edge(t, "cyc-raw", "supersedes", "cyc-b") != "" || e.audits(t) != 0 {
		t.Error("a refused promote must change nothing")
	}
}

// Two supersedes on disjoint documents that would each close half of a cycle
// serialise on the project's graph lock: one is made, the other refused. The
// test holds both at their audit row until each has passed its own checks or is
// waiting for the other, so without the lock both would be made.
func TestConcurrentSupersedesCannotCloseACycle(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	// d-b supersedes d-c and d-d supersedes d-a (declared); d-a -> d-b and d-c -> d-d close the cycle.
	e.ingest(t, map[string]string{"d-a.md": decisionFile("d-a"), "d-b.md": decisionFile("d-b", "supersedes: [d-c]"),
		"d-c.md": decisionFile("d-c"), "d-d.md": decisionFile("d-d", "supersedes: [d-a]")})
	hold, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx) //nolint:errcheck // committed or rolled back below
	if _, err := hold.Exec(ctx, "LOCK TABLE lifecycle_audit IN EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for _, pair := range [][2]string{{"d-b", "d-a"}, {"d-d", "d-c"}} {
		go func() {
			_, err := e.svc.Supersede(ctx, "alice", project, pair[0], pair[1])
			errs <- err
		}()
	}
	// Both are waiting: on the audit table, or one of them on the graph lock.
	for waiting, deadline := 0, time.Now().Add(10*time.Second); waiting < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("%d supersedes waiting after 10 s, want 2", waiting)
		}
		time.Sleep(20 * time.Millisecond)
		waiting = e.count(t, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`)
	}
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	var made, refused int
	for range 2 {
		var se *lifecycle.StateError
		switch err := <-errs; {
		case err == nil:
			made++
		case errors.As(err, &se) && strings.Contains(err.Error(), "would make a cycle"):
			refused++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if made != 1 || refused != 1 {
		t.Errorf("%d made, %d refused: want one of each", made, refused)
	}
}

func TestDeprecateArchiveReject(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	for _, c := range []struct {
		op     func(context.Context, string, string, string) (lifecycle.Change, error)
		status string
	}{{e.svc.Deprecate, "deprecated"}, {e.svc.Archive, "archived"}} {
		ch := must(t)(c.op(ctx, "alice", project, "mod-x"))
		if !ch.Changed || e.state(t, "mod-x").Status != c.status {
			t.Errorf("%s: %+v", c.status, ch)
		}
		if again := must(t)(c.op(ctx, "alice", project, "mod-x")); again.Changed {
			t.Errorf("%s re-run: %+v", c.status, again)
		}
	}
	ch := must(t)(e.svc.Reject(ctx, "alice", project, "note-raw", "dec-v2"))
	if want := (lifecycle.State{CanonicalType: "rejected-approach", Status: "accepted", RetrievalPriority: 50}); ch.After != want {
		t.Errorf("reject: %+v", ch.After)
	}
	if got := e.edge(t, "note-raw", "decision_for", "dec-v2"); got != "lifecycle" {
		t.Errorf("decision_for edge: %q", got)
	}
	if again := must(t)(e.svc.Reject(ctx, "alice", project, "note-raw", "dec-v2")); again.Changed {
		t.Errorf("reject re-run: %+v", again)
	}
	if n := e.audits(t); n != 3 {
		t.Errorf("%d audit rows, want 3 (re-runs write none)", n)
	}
	if _, err := e.svc.Reject(ctx, "alice", project, "dec-v1", "mod-x"); !domain.IsInvalid(err) {
		t.Errorf("reject for a non-decision: %v", err)
	}
}

// The lifecycle refuses what would leave the canon contradicting itself: a
// supersede by a document not in force or of another type, a rejected approach
// that others were rejected in favour of or that replaced something, a
// canonical type on an entity page.
func TestLifecycleRules(t *testing.T) {
	t.Parallel()
	doc := func(slug, typ, status string, more ...string) string {
		return "---\nid: " + slug + "\ntype: " + typ + "\nstatus: " + status + "\n" + strings.Join(more, "\n") +
			"\n---\n\nAbout " + slug + ".\n"
	}
	files := map[string]string{
		"rb-y.md":       doc("rb-y", "runbook", "accepted"),
		"inc-z.md":      doc("inc-z", "incident", "accepted"),
		"dec-draft.md":  doc("dec-draft", "decision", "draft"),
		"dec-review.md": doc("dec-review", "decision", "review"),
		"dec-old.md":    doc("dec-old", "decision", "superseded"),
		"dec-dep.md":    doc("dec-dep", "decision", "deprecated"),
		"dec-arch.md":   doc("dec-arch", "decision", "archived"),
		"dec-act.md":    doc("dec-act", "decision", "active"),
		"dec-none.md":   "---\nid: dec-none\ntype: decision\n---\n\nA decision without a status.\n",
		"rej-x.md":      doc("rej-x", "rejected-approach", "accepted"),
		"rej-y.md":      doc("rej-y", "rejected-approach", "accepted", "access: [vault]"),
		"dec-target.md": doc("dec-target", "decision", "accepted", "rejects: [rej-x, rej-y]"),
		"dec-v3.md":     doc("dec-v3", "decision", "accepted", "supersedes: [dec-old]"),
		"dana.md":       "---\nid: dana\ntitle: Dana Okafor\ntype: person\nrole: Platform lead\n---\n\nDana leads the platform team.\n",
	}
	ctx := context.Background()
	editor := domain.WithPrincipal(ctx, domain.Principal{Name: "ed", Projects: []string{project}, Role: domain.RoleEditor})
	promote := func(slug, typ string) func(*lifecycle.Service) error {
		return func(s *lifecycle.Service) error {
			return err2(s.Promote(editor, "alice", lifecycle.PromoteRequest{Project: project, Slug: slug, Type: typ, Status: "accepted"}))
		}
	}
	supersede := func(oldSlug, newSlug string) func(*lifecycle.Service) error {
		return func(s *lifecycle.Service) error { return err2(s.Supersede(editor, "alice", project, oldSlug, newSlug)) }
	}
	reject := func(slug, decision string) func(*lifecycle.Service) error {
		return func(s *lifecycle.Service) error { return err2(s.Reject(editor, "alice", project, slug, decision)) }
	}
	const (
		allowed = iota
		state   // failed_precondition
		invalid // invalid_argument
	)
	cases := []struct {
		name string
		op   func(*lifecycle.Service) error
		want int
		msg  string
	}{
		{"supersede by an accepted decision", supersede("dec-v1", "dec-v2"), allowed, ""},
		{"supersede by an active decision", supersede("dec-v1", "dec-act"), allowed, ""},
		{"supersede by a rejected approach", supersede("rej-x", "rej-x-2"), state, ""},
		{"new is a rejected approach", supersede("dec-v1", "rej-x"), state,
			"rej-x is a rejected approach: an approach that was turned down cannot supersede anything"},
		{"old is a rejected approach", supersede("rej-x", "dec-v2"), state,
			"rej-x is a rejected approach: it was turned down, never in force, so nothing supersedes it"},
		{"new is superseded", supersede("dec-v1", "dec-old"), state,
			"dec-old's status is superseded: it is no longer in force, and only an accepted or active document can supersede another"},
		{"new is deprecated", supersede("dec-v1", "dec-dep"), state, "dec-dep's status is deprecated: it is no longer in force"},
		{"new is archived", supersede("dec-v1", "dec-arch"), state, "dec-arch's status is archived: it is no longer in force"},
		{"new is a draft", supersede("dec-v1", "dec-draft"), state,
			"dec-draft's status is draft: only an accepted or active document can supersede another " +
				"(accept it first: canon canon promote dec-draft --type decision --status accepted)"},
		{"new is in review", supersede("dec-v1", "dec-review"), state, "dec-review's status is review"},
		{"new has no status", supersede("dec-v1", "dec-none"), state, "dec-none has no status: only an accepted or active document"},
		{"another type", supersede("rb-y", "inc-z"), invalid,
			"rb-y is a runbook and inc-z an incident: a document is superseded only by one of its own type"},
		{"reject a decision others were rejected for", reject("dec-target", "dec-v2"), state,
			"dec-target is the decision rej-x and 1 you may not see were rejected in favour of: it cannot be a rejected approach itself; " +
				"to retire it, supersede or deprecate it"},
		{"reject a document that supersedes another", reject("dec-v3", "dec-v2"), state,
			"dec-v3 supersedes dec-old: a rejected approach cannot be what replaced it; to retire dec-v3, supersede or deprecate it"},
		{"reject a person page", reject("dana", "dec-v2"), invalid,
			"dana is a person page: an entity page takes its type from its file and cannot be given a canonical type"},
		{"reject a raw note", reject("note-raw", "dec-v2"), allowed, ""},
		{"promote a person page", promote("dana", "standard"), invalid,
			"dana is a person page: an entity page takes its type from its file and cannot be given a canonical type"},
		{"promote a decision others were rejected for to a rejected approach", promote("dec-target", "rejected-approach"), state,
			"dec-target is the decision rej-x and 1 you may not see were rejected in favour of"},
		{"promote a superseding decision to a rejected approach", promote("dec-v3", "rejected-approach"), state,
			"dec-v3 supersedes dec-old: a rejected approach cannot be what replaced it"},
		{"promote a raw note", promote("note-raw", "standard"), allowed, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			ingested := maps.Clone(files)
			ingested["rej-x-2.md"] = doc("rej-x-2", "rejected-approach", "accepted")
			e.ingest(t, ingested)
			err := c.op(e.svc)
			var se *lifecycle.StateError
			switch {
			case c.want == allowed && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want == state && !errors.As(err, &se):
				t.Fatalf("got %T %v, want a StateError (failed_precondition)", err, err)
			case c.want == invalid && !domain.IsInvalid(err):
				t.Fatalf("got %T %v, want an InvalidError (invalid_argument)", err, err)
			case c.want != allowed && !strings.Contains(err.Error(), c.msg):
				t.Errorf("message %q should contain %q", err, c.msg)
			}
			if c.want != allowed && e.audits(t) != 0 {
				t.Error("a refused operation must change nothing")
			}
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	prio := 101
	cases := []struct {
		name     string
		err      error
		notFound bool
	}{
		{"unknown project", err2(e.svc.Deprecate(ctx, "a", "nope", "mod-x")), true},
		{"unknown doc", err2(e.svc.Deprecate(ctx, "a", project, "nope")), true},
		{"unknown new doc", err2(e.svc.Supersede(ctx, "a", project, "dec-v1", "nope")), true},
		{"unknown decision", err2(e.svc.Reject(ctx, "a", project, "note-raw", "nope")), true},
		{"graph of unknown doc", err3(e.svc.Graph(ctx, project, "nope")), true},
		{"bad type", err2(e.svc.Promote(ctx, "a", lifecycle.PromoteRequest{Project: project, Slug: "mod-x", Type: "memo", Status: "accepted"})), false},
		{"bad status", err2(e.svc.Promote(ctx, "a", lifecycle.PromoteRequest{Project: project, Slug: "mod-x", Type: "decision", Status: "done"})), false},
		{"bad priority", err2(e.svc.Promote(ctx, "a", lifecycle.PromoteRequest{Project: project, Slug: "mod-x", Type: "decision", Status: "accepted", Priority: &prio})), false},
		{"self supersede", err2(e.svc.Supersede(ctx, "a", project, "dec-v1", "dec-v1")), false},
		{"no actor", err2(e.svc.Archive(ctx, "", project, "mod-x")), false},
		// Text the database cannot hold is the caller's mistake, not a failed statement.
		{"NUL in a slug", err2(e.svc.Deprecate(ctx, "a", project, "a\x00b")), false},
		{"invalid UTF-8 in a slug", err2(e.svc.Archive(ctx, "a", project, "\xff")), false},
		{"NUL in a project key", err2(e.svc.Deprecate(ctx, "a", "plat\x00form", "mod-x")), false},
		{"invalid UTF-8 in the new slug", err2(e.svc.Supersede(ctx, "a", project, "dec-v1", "\xff")), false},
		{"NUL in the decision", err2(e.svc.Reject(ctx, "a", project, "note-raw", "dec\x00")), false},
		{"NUL in a promoted slug", err2(e.svc.Promote(ctx, "a", lifecycle.PromoteRequest{Project: project, Slug: "a\x00", Type: "decision", Status: "accepted"})), false},
		{"graph of a slug that is not UTF-8", err3(e.svc.Graph(ctx, project, "\xff")), false},
		{"graph in a project key with NUL", err3(e.svc.Graph(ctx, "plat\x00form", "mod-x")), false},
		{"empty project key", err2(e.svc.Deprecate(ctx, "a", "", "mod-x")), false},
	}
	for _, c := range cases {
		var nf *domain.NotFoundError
		if c.notFound && !errors.As(c.err, &nf) || !c.notFound && !domain.IsInvalid(c.err) {
			t.Errorf("%s: got %T %v", c.name, c.err, c.err)
		}
	}
	if e.audits(t) != 0 {
		t.Error("failed operations wrote audit rows")
	}
}

func err2(_ lifecycle.Change, err error) error { return err }
func err3(_ lifecycle.Graph, err error) error  { return err }

// Concurrent runs of one operation serialise on the document lock: one changes,
// the others find it done.
func TestConcurrentRunsAreIdempotent(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	changed := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch, err := e.svc.Supersede(context.Background(), fmt.Sprintf("user%d", i), project, "dec-v1", "dec-v2")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if ch.Changed {
				changed++
			}
		}()
	}
	wg.Wait()
	if changed != 1 || e.audits(t) != 1 || e.count(t, "SELECT count(*) FROM kb_edges WHERE edge_type = 'supersedes'") != 1 {
		t.Errorf("changed %d times, %d audit rows", changed, e.audits(t))
	}
}

func TestGraph(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	must(t)(e.svc.Supersede(ctx, "alice", project, "dec-v1", "dec-v2"))
	must(t)(e.svc.Promote(ctx, "alice", lifecycle.PromoteRequest{Project: project, Slug: "note-raw", Type: "module-kb", Status: "active"}))
	g, err := e.svc.Graph(ctx, project, "dec-v2")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range g.Neighbours {
		got = append(got, fmt.Sprintf("%s %s %.1f %s %s/%s", n.Direction, n.EdgeType, n.Weight, n.Slug, n.Provenance, n.DeclaredBy))
	}
	want := []string{
		"outgoing supersedes 1.0 dec-v1 lifecycle/",
		"outgoing depends_on 0.9 note-raw frontmatter/dec-v2",
	}
	if !slices.Equal(got, want) || g.State.CanonicalType != "decision" {
		t.Errorf("graph of dec-v2:\n got %v\nwant %v", got, want)
	}
	g, err = e.svc.Graph(ctx, project, "dec-v1")
	if err != nil || len(g.Neighbours) != 1 || g.Neighbours[0].Direction != "incoming" || g.Neighbours[0].Slug != "dec-v2" {
		t.Errorf("graph of dec-v1: %+v %v", g, err)
	}
}

// Re-ingest keeps frontmatter as the source of truth and says when it overrides
// a lifecycle change.
func TestReingestOverridesLifecycleWithNotice(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	must(t)(e.svc.Supersede(ctx, "alice", project, "dec-v1", "dec-v2"))
	must(t)(e.svc.Reject(ctx, "alice", project, "note-raw", "dec-v2"))
	files := corpus()

	// Unchanged files are skipped: the lifecycle changes stand, nothing to say.
	res := e.ingest(t, files)
	if len(overrideNotices(res)) != 0 || e.state(t, "dec-v1").Status != "superseded" {
		t.Fatalf("unchanged re-ingest: notices %v, status %q", res.Notices, e.state(t, "dec-v1").Status)
	}

	// A changed file whose frontmatter agrees with the lifecycle change: no notice.
	files["dec-v1.md"] = strings.Replace(files["dec-v1.md"], "status: accepted", "status: superseded", 1)
	res = e.ingest(t, files)
	if n := overrideNotices(res); len(n) != 0 {
		t.Errorf("frontmatter agrees, yet: %v", n)
	}
	// The edge is not declared by any file and stays.
	if e.edge(t, "dec-v2", "supersedes", "dec-v1") != "lifecycle" {
		t.Error("lifecycle edge lost on re-ingest")
	}

	// A changed file that undoes the change: frontmatter wins, and the ingest says so.
	must(t)(e.svc.Deprecate(ctx, "bob", project, "dec-v1"))
	files["dec-v1.md"] += "\nMore context.\n"
	files["note-raw.md"] += "\nMore notes.\n"
	res = e.ingest(t, files)
	notices := overrideNotices(res)
	if len(notices) != 2 {
		t.Fatalf("want 2 override notices, got %v", res.Notices)
	}
	for _, want := range []string{`dec-v1: frontmatter overrides the lifecycle change "deprecate" by bob`, "status deprecated -> superseded"} {
		if !strings.Contains(notices[0]+notices[1], want) {
			t.Errorf("notices %v should contain %q", notices, want)
		}
	}
	if !strings.Contains(strings.Join(notices, "\n"), "note-raw: frontmatter overrides the lifecycle change \"reject\" by alice") ||
		!strings.Contains(strings.Join(notices, "\n"), "type rejected-approach -> none") {
		t.Errorf("notices %v should report the undone rejection", notices)
	}
	if got := e.state(t, "dec-v1").Status; got != "superseded" {
		t.Errorf("frontmatter status should win, got %q", got)
	}
	// note-raw is raw again: its node, and the lifecycle edge on it, are gone.
	if got := e.edge(t, "note-raw", "decision_for", "dec-v2"); got != "" || e.state(t, "note-raw").CanonicalType != "" {
		t.Errorf("note-raw should be raw again without its edge (edge %q)", got)
	}

	// The override is reported once: the next ingest is newer than the audit.
	files["dec-v1.md"] += "\nEven more.\n"
	if n := overrideNotices(e.ingest(t, files)); len(n) != 0 {
		t.Errorf("notice repeated: %v", n)
	}
}

// A lifecycle edge stands only while the frontmatter of the document it is about
// agrees with it: when a rewrite from the file overrides the change that made
// it (or says otherwise later), the edge goes too, and the notice says so.
func TestReingestTakesTheEdgesItContradicts(t *testing.T) {
	t.Parallel()
	setStatus := func(status string) func(map[string]string) {
		return func(files map[string]string) {
			files["dec-v1.md"] = statusLine.ReplaceAllString(files["dec-v1.md"], "status: "+status) + "\nEdited.\n"
		}
	}
	edit := func(files map[string]string) { files["dec-v1.md"] += "\nOne more word.\n" }
	const supersedes = "dec-v2 -supersedes-> dec-v1"
	cases := []struct {
		name string
		// change runs after the supersede of dec-v1 by dec-v2; then the files are ingested once per edit.
		change func(e *env, t *testing.T)
		edits  []func(map[string]string)
		// the last ingest's notice about dec-v1 (or mod-x), "" for none; the edge's provenance after it.
		notice, edge string
	}{
		{name: "override takes the edge", edits: []func(map[string]string){edit},
			notice: `dec-v1: frontmatter overrides the lifecycle change "supersede" by alice at * (status superseded -> accepted); ` +
				"the lifecycle edge " + supersedes + " goes with it; edit the file's frontmatter to keep the change"},
		{name: "frontmatter agrees", edits: []func(map[string]string){setStatus("superseded")}, edge: "lifecycle"},
		{name: "a later retired status keeps it", edits: []func(map[string]string){setStatus("archived")}, edge: "lifecycle",
			notice: `dec-v1: frontmatter overrides the lifecycle change "supersede" by alice at * (status superseded -> archived); ` +
				"edit the file's frontmatter to keep the change"},
		{name: "a file that agreed and then does not", edits: []func(map[string]string){setStatus("superseded"), setStatus("accepted")},
			notice: "dec-v1: the lifecycle edge " + supersedes +
				" goes: the frontmatter (status accepted) no longer agrees; declare it in the files to keep it"},
		{name: "a file that declares it keeps it", edits: []func(map[string]string){
			func(files map[string]string) {
				files["dec-v2.md"] = strings.Replace(files["dec-v2.md"], "status: accepted\n", "status: accepted\nsupersedes: [dec-v1]\n", 1)
			}, edit},
			notice: `dec-v1: frontmatter overrides the lifecycle change "supersede" by alice at * (status superseded -> accepted); ` +
				"edit the file's frontmatter to keep the change", edge: "frontmatter"},
		{name: "an undone rejection takes its edge", change: func(e *env, t *testing.T) {
			must(t)(e.svc.Reject(context.Background(), "bob", project, "mod-x", "dec-v2"))
		}, edits: []func(map[string]string){func(files map[string]string) { files["mod-x.md"] += "\nEdited.\n" }},
			notice: `mod-x: frontmatter overrides the lifecycle change "reject" by bob at * (type rejected-approach -> module-kb); ` +
				"the lifecycle edge mod-x -decision_for-> dec-v2 goes with it; edit the file's frontmatter to keep the change"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			ctx := context.Background()
			must(t)(e.svc.Supersede(ctx, "alice", project, "dec-v1", "dec-v2"))
			if c.change != nil {
				c.change(e, t)
			}
			files := corpus()
			var res ingest.Result
			for _, edit := range c.edits {
				edit(files)
				res = e.ingest(t, files)
			}
			var got []string
			for _, n := range res.Notices {
				if strings.HasPrefix(n, "dec-v1: ") || strings.HasPrefix(n, "mod-x: ") {
					got = append(got, n)
				}
			}
			wantNotices := 0
			if c.notice != "" {
				wantNotices = 1
			}
			if len(got) != wantNotices || c.notice != "" && !matches(got[0], c.notice) {
				t.Errorf("notices %q, want %q", got, c.notice)
			}
			if c.change != nil {
				if prov := e.edge(t, "mod-x", "decision_for", "dec-v2"); prov != "" {
					t.Errorf("the rejection's edge should be gone, is %q", prov)
				}
				return
			}
			if prov := e.edge(t, "dec-v2", "supersedes", "dec-v1"); prov != c.edge {
				t.Errorf("edge %s: provenance %q, want %q", supersedes, prov, c.edge)
			}
			// The graph agrees with the status: superseding again adds the edge again.
			if c.edge == "" {
				ch := must(t)(e.svc.Supersede(ctx, "alice", project, "dec-v1", "dec-v2"))
				if len(ch.EdgesAdded) != 1 {
					t.Errorf("supersede again: %+v", ch)
				}
			}
		})
	}
}

var statusLine = regexp.MustCompile(`(?m)^status: \w+$`)

// matches reports whether s is pattern with each * standing for a run of characters.
func matches(s, pattern string) bool {
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1:] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return s == "" || parts[len(parts)-1] == ""
}

func overrideNotices(res ingest.Result) []string {
	var out []string
	for _, n := range res.Notices {
		if strings.Contains(n, "overrides the lifecycle change") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// TestRestore: Restore undoes what the operations on a document did since its
// last ingest: its fields as its file says, the edges they added gone, a raw
// document out of the graph again (the link waiting for it waits again); the
// operations on other documents stay.
func TestRestore(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	raw := lifecycle.State{RetrievalPriority: 50}
	must(t)(e.svc.Reject(ctx, "alice", project, "note-raw", "dec-v2"))
	must(t)(e.svc.Supersede(ctx, "alice", project, "dec-v1", "dec-v2"))
	must(t)(e.svc.Deprecate(ctx, "alice", project, "dec-v1"))
	if e.edge(t, "dec-v2", "depends_on", "note-raw") != "frontmatter" {
		t.Fatal("test premise: the rejection gave the note a node, and dec-v2's link to it an edge")
	}

	ch := must(t)(e.svc.Restore(ctx, "bob", project, "note-raw"))
	if !ch.Changed || ch.After != raw || ch.Operation != lifecycle.OpRestore ||
		!slices.Equal(ch.EdgesRemoved, []lifecycle.Edge{{From: "note-raw", To: "dec-v2", EdgeType: "decision_for", Weight: 1}}) {
		t.Errorf("restore of the rejected note: %+v", ch)
	}
	if got := e.state(t, "note-raw"); got != raw {
		t.Errorf("note-raw after restore: %+v, want raw", got)
	}
	if n := e.count(t, "SELECT count(*) FROM kb_nodes n JOIN documents d ON d.id = n.document_id WHERE d.slug = 'note-raw'"); n != 0 {
		t.Errorf("a restored raw document keeps %d graph node(s)", n)
	}
	if got := e.edge(t, "dec-v2", "depends_on", "note-raw"); got != "" {
		t.Errorf("dec-v2's link to the raw note is an edge again (%q), want it waiting", got)
	}

	ch = must(t)(e.svc.Restore(ctx, "bob", project, "dec-v1"))
	want := lifecycle.State{CanonicalType: "decision", Status: "accepted", RetrievalPriority: 50}
	if !ch.Changed || ch.Before.Status != "deprecated" || ch.After != want ||
		!slices.Equal(ch.EdgesRemoved, []lifecycle.Edge{{From: "dec-v2", To: "dec-v1", EdgeType: "supersedes", Weight: 1}}) {
		t.Errorf("restore of the superseded, then deprecated decision: %+v", ch)
	}
	if got := e.state(t, "dec-v1"); got != want {
		t.Errorf("dec-v1 after restore: %+v, want %+v (current again)", got, want)
	}
	if got := e.edge(t, "dec-v2", "supersedes", "dec-v1"); got != "" {
		t.Errorf("the supersedes edge stays: %q", got)
	}

	// Nothing left to undo: nothing written, nothing audited.
	audits := e.audits(t)
	for _, slug := range []string{"note-raw", "dec-v1", "dec-v2"} {
		if again := must(t)(e.svc.Restore(ctx, "bob", project, slug)); again.Changed || again.AuditID != 0 {
			t.Errorf("restore of %s with nothing to undo: %+v", slug, again)
		}
	}
	if n := e.audits(t); n != audits {
		t.Errorf("%d audit rows after restores that changed nothing, want %d", n, audits)
	}
	var op string
	if err := e.pool.QueryRow(ctx, "SELECT operation FROM lifecycle_audit ORDER BY id DESC LIMIT 1").Scan(&op); err != nil || op != "restore" {
		t.Errorf("the last audit row: %q %v, want restore", op, err)
	}
	// Operations after a restore are undone by the next one alone.
	must(t)(e.svc.Archive(ctx, "carol", project, "dec-v1"))
	if ch := must(t)(e.svc.Restore(ctx, "bob", project, "dec-v1")); ch.Before.Status != "archived" || ch.After != want {
		t.Errorf("restore after an archive: %+v", ch)
	}
	var nf *domain.NotFoundError
	if _, err := e.svc.Restore(ctx, "bob", project, "no-such-doc"); !errors.As(err, &nf) {
		t.Errorf("restore of an unknown document: %v", err)
	}
}
