package lifecycle_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/lifecycle"
)

// The trial's case (s26, finding 1): ADR-004 says it supersedes ADR-001, whose
// own file still says accepted.
const (
	adr001 = "---\nid: adr-001\ntitle: \"ADR-001: Orchestrate pipelines with Apache Airflow 2\"\ntype: decision\n" +
		"status: accepted\n---\n\nWe run a self-hosted Apache Airflow on Kubernetes.\n"
	adr004 = "---\nid: adr-004\ntitle: \"ADR-004: Move orchestration from Airflow to Dagster\"\ntype: decision\n" +
		"status: accepted\nsupersedes: [adr-001]\n---\n\nWe replace Airflow with Dagster Cloud.\n"
)

// supersession is a document's declared status, effective status and superseding documents.
func (e *env) supersession(t *testing.T, slug string) (declared, status string, by []string) {
	t.Helper()
	err := e.pool.QueryRow(context.Background(),
		"SELECT coalesce(declared_status, ''), coalesce(status, ''), superseded_by FROM documents WHERE slug = $1",
		slug).Scan(&declared, &status, &by)
	if err != nil {
		t.Fatal(err)
	}
	return declared, status, by
}

func (e *env) wantSupersession(t *testing.T, slug, declared, status string, by ...string) {
	t.Helper()
	d, s, b := e.supersession(t, slug)
	if d != declared || s != status || !slices.Equal(b, by) {
		t.Errorf("%s: declared %q, status %q, superseded by %v; want %q, %q, %v", slug, d, s, b, declared, status, by)
	}
}

func supersessionNotices(res ingest.Result) []string {
	var out []string
	for _, n := range res.Notices {
		if strings.Contains(n, "canon treats") {
			out = append(out, n)
		}
	}
	return out
}

func TestSupersededByAnotherFilesFrontmatter(t *testing.T) {
	e := setup(t)
	res := e.ingest(t, map[string]string{"adr-001.md": adr001, "adr-004.md": adr004})
	e.wantSupersession(t, "adr-001", "accepted", "superseded", "adr-004")
	e.wantSupersession(t, "adr-004", "accepted", "accepted")
	want := "adr-001.md says status accepted, but adr-004.md (status accepted) supersedes it: canon treats adr-001 as superseded; " +
		"set `status: superseded` in its frontmatter, or remove the supersedes entry from adr-004.md"
	if n := supersessionNotices(res); !slices.Equal(n, []string{want}) {
		t.Errorf("notices %q, want %q", n, want)
	}
	// graph show tells why.
	g, err := e.svc.Graph(context.Background(), project, "adr-001")
	if err != nil {
		t.Fatal(err)
	}
	if g.State.Status != "superseded" || g.DeclaredStatus != "accepted" || !slices.Equal(g.SupersededBy, []string{"adr-004"}) {
		t.Errorf("graph: %+v", g)
	}

	// Re-ingesting either file warns again; an unchanged run stores nothing and says nothing.
	res = e.ingest(t, map[string]string{"adr-004.md": adr004 + "\nMore.\n"})
	if len(supersessionNotices(res)) != 1 {
		t.Errorf("re-ingest of the superseding file: notices %q", res.Notices)
	}
	e.wantSupersession(t, "adr-001", "accepted", "superseded", "adr-004")

	// The file agrees: no warning, same status.
	res = e.ingest(t, map[string]string{"adr-001.md": strings.Replace(adr001, "accepted", "superseded", 1)})
	if n := supersessionNotices(res); len(n) > 0 {
		t.Errorf("agreeing files: notices %q", n)
	}
	e.wantSupersession(t, "adr-001", "superseded", "superseded", "adr-004")
}

func TestSupersessionFollowsEveryChange(t *testing.T) {
	ctx := context.Background()
	e := setup(t)
	// The superseding document first: its link waits, then resolves.
	e.ingest(t, map[string]string{"adr-004.md": adr004})
	e.ingest(t, map[string]string{"adr-001.md": adr001})
	e.wantSupersession(t, "adr-001", "accepted", "superseded", "adr-004")

	// Deprecating the superseding document makes the old one current again, and says so.
	ch := must(t)(e.svc.Deprecate(ctx, "tester", project, "adr-004"))
	e.wantSupersession(t, "adr-001", "accepted", "accepted")
	if len(ch.Notes) != 1 || !strings.Contains(ch.Notes[0], "adr-001 is accepted again") {
		t.Errorf("deprecate notes %q", ch.Notes)
	}
	ch = must(t)(e.svc.Promote(ctx, "tester", lifecycle.PromoteRequest{Project: project, Slug: "adr-004",
		Type: "decision", Status: "accepted"}))
	e.wantSupersession(t, "adr-001", "accepted", "superseded", "adr-004")
	if len(ch.Notes) != 1 || !strings.Contains(ch.Notes[0], "adr-001 is now treated as superseded") {
		t.Errorf("promote notes %q", ch.Notes)
	}

	// A superseding document that is itself superseded later still retires the first.
	adr007 := "---\nid: adr-007\ntitle: ADR-007\ntype: decision\nstatus: accepted\nsupersedes: [adr-004]\n---\n\nBack to cron.\n"
	e.ingest(t, map[string]string{"adr-007.md": adr007,
		"adr-004.md": strings.Replace(adr004, "status: accepted", "status: superseded", 1)})
	e.wantSupersession(t, "adr-001", "accepted", "superseded", "adr-004")
	e.wantSupersession(t, "adr-004", "superseded", "superseded", "adr-007")

	// A draft retires nothing yet.
	e.ingest(t, map[string]string{"adr-004.md": strings.Replace(adr004, "status: accepted", "status: draft", 1)})
	e.wantSupersession(t, "adr-001", "accepted", "accepted")
	// Its supersedes entry removed: nothing either.
	e.ingest(t, map[string]string{"adr-004.md": strings.Replace(adr004, "supersedes: [adr-001]\n", "", 1)})
	e.wantSupersession(t, "adr-001", "accepted", "accepted")
	e.ingest(t, map[string]string{"adr-004.md": adr004})
	e.wantSupersession(t, "adr-001", "accepted", "superseded", "adr-004")

	// The superseding file deleted (a whole-project run with --prune).
	files := corpus()
	files["adr-001.md"] = adr001
	files["adr-007.md"] = adr007
	var fs []ingest.File
	for p, c := range files {
		fs = append(fs, ingest.File{Path: p, Content: []byte(c)})
	}
	res, err := e.in.Ingest(ctx, fs, ingest.Options{Project: project, Prune: true})
	if err != nil || res.Pruned != 1 {
		t.Fatalf("prune: %+v, %v", res, err)
	}
	e.wantSupersession(t, "adr-001", "accepted", "accepted")

	// The lifecycle operation makes the same edge; the file of the document it
	// retires then says accepted, and the next ingest of it takes the edge back.
	must(t)(e.svc.Supersede(ctx, "tester", project, "adr-001", "adr-007"))
	e.wantSupersession(t, "adr-001", "superseded", "superseded", "adr-007")
	e.ingest(t, map[string]string{"adr-001.md": adr001 + "\nEdited.\n"})
	e.wantSupersession(t, "adr-001", "accepted", "accepted")
}
