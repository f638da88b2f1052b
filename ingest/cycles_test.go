package ingest_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/lifecycle"
)

// decision is an accepted decision's file; more adds frontmatter lines.
func decision(slug string, more ...string) ingest.File {
	return file(slug+".md", "---\nid: "+slug+"\ntype: decision\nstatus: accepted\n"+strings.Join(more, "\n")+
		"\n---\n# "+slug+"\n\nWhat "+slug+" decides.\n")
}

func cycleNotices(res ingest.Result) []string {
	var out []string
	for _, n := range res.Notices {
		if strings.HasPrefix(n, "supersedes cycle ") {
			out = append(out, n)
		}
	}
	return out
}

// Files whose supersedes links make a cycle of any length are stored as
// declared, and every ingest that stores a document on the cycle says so.
func TestSupersedesCyclesAreNoticed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		runs  [][]ingest.File // ingested one after the other
		want  []string        // the last run's cycle notices, up to the colon
		edges int64           // supersedes edges after the last run
	}{
		{name: "two in one run", runs: [][]ingest.File{{
			decision("m-x", "supersedes: [m-y]"), decision("m-y", "supersedes: [m-x]"),
		}}, want: []string{"supersedes cycle m-x -> m-y -> m-x (declared by m-x, m-y)"}, edges: 2},
		{name: "three over two runs", runs: [][]ingest.File{
			{decision("m-a", "supersedes: [m-b]"), decision("m-b", "supersedes: [m-c]")},
			{decision("m-c", "supersedes: [m-a]")},
		}, want: []string{"supersedes cycle m-a -> m-b -> m-c -> m-a (declared by m-a, m-b, m-c)"}, edges: 3},
		{name: "reported again by a run that stores a document on it", runs: [][]ingest.File{
			{decision("m-x", "supersedes: [m-y]"), decision("m-y", "supersedes: [m-x]")},
			{decision("m-x", "supersedes: [m-y]", "tags: [edited]"), decision("m-y", "supersedes: [m-x]")},
		}, want: []string{"supersedes cycle m-x -> m-y -> m-x (declared by m-x, m-y)"}, edges: 2},
		{name: "a run that stores none of it is silent", runs: [][]ingest.File{
			{decision("m-x", "supersedes: [m-y]"), decision("m-y", "supersedes: [m-x]")},
			{decision("m-x", "supersedes: [m-y]"), decision("m-y", "supersedes: [m-x]"), decision("m-z")},
		}, edges: 2},
		{name: "gone once a file is fixed", runs: [][]ingest.File{
			{decision("m-x", "supersedes: [m-y]"), decision("m-y", "supersedes: [m-x]")},
			{decision("m-y")},
		}, edges: 1},
		{name: "two cycles, two notices", runs: [][]ingest.File{{
			decision("m-x", "supersedes: [m-y]"), decision("m-y", "supersedes: [m-x]"),
			decision("n-x", "supersedes: [n-y]"), decision("n-y", "supersedes: [n-z]"), decision("n-z", "supersedes: [n-x]"),
		}}, want: []string{
			"supersedes cycle m-x -> m-y -> m-x (declared by m-x, m-y)",
			"supersedes cycle n-x -> n-y -> n-z -> n-x (declared by n-x, n-y, n-z)",
		}, edges: 5},
		{name: "a chain is no cycle", runs: [][]ingest.File{{
			decision("m-a", "supersedes: [m-b, m-c]"), decision("m-b", "supersedes: [m-c]"), decision("m-c"),
		}}, edges: 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in, pool := newIngester(t)
			var res ingest.Result
			for _, files := range c.runs {
				res = run(t, in, "cyc", false, files...)
				if len(res.Errors) > 0 {
					t.Fatal(res.Errors)
				}
			}
			var got []string
			for _, n := range cycleNotices(res) {
				head, _, _ := strings.Cut(n, ":")
				got = append(got, head)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("cycle notices:\n got %q\nwant %q\n(all notices: %q)", got, c.want, res.Notices)
			}
			if n := scalar[int64](t, pool, "SELECT count(*) FROM kb_edges WHERE edge_type = 'supersedes'"); n != c.edges {
				t.Errorf("%d supersedes edges, want %d (the links stay as declared)", n, c.edges)
			}
		})
	}
}

// A file that closes a cycle through an edge canon canon supersede made is told
// which edge that is.
func TestSupersedesCycleThroughLifecycleEdge(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	ctx := context.Background()
	run(t, in, "cyc", false, decision("m-x"), decision("m-y"))
	if _, err := lifecycle.New(pool).Supersede(ctx, "alice", "cyc", "m-x", "m-y"); err != nil {
		t.Fatal(err)
	}
	// Its status agrees with the supersede, so the lifecycle edge stays.
	res := run(t, in, "cyc", false, file("m-x.md", "---\nid: m-x\ntype: decision\nstatus: superseded\nsupersedes: [m-y]\n---\n# m-x\n\nText.\n"))
	want := "supersedes cycle m-x -> m-y -> m-x (declared by m-x; m-y -> m-x made by canon canon supersede): " +
		"each document on it is superseded by another one on it; the links stay as declared: remove the supersedes entry that is wrong"
	if got := cycleNotices(res); !slices.Equal(got, []string{want}) {
		t.Errorf("notices %q, want %q", res.Notices, want)
	}
}
