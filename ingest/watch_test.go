package ingest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/canonkb/canon/ingest"
)

// watcher runs Watch on a real folder and hands out each run's result.
type watcher struct {
	t       *testing.T
	results chan ingest.Result
	cancel  context.CancelFunc
	done    chan error
}

func startWatch(t *testing.T, in *ingest.Ingester, dir string) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{t: t, results: make(chan ingest.Result, 100), cancel: cancel, done: make(chan error, 1)}
	go func() {
		w.done <- in.Watch(ctx, []string{dir}, ingest.WatchOptions{Project: "w", Debounce: 50 * time.Millisecond,
			OnRun: func(res ingest.Result, err error) {
				if err != nil {
					t.Errorf("run failed: %v", err)
					return
				}
				w.results <- res
			}})
	}()
	t.Cleanup(w.stop)
	return w
}

// next waits for the next run.
func (w *watcher) next() ingest.Result {
	w.t.Helper()
	select {
	case res := <-w.results:
		return res
	case <-time.After(15 * time.Second):
		w.t.Fatal("no run after the change")
		return ingest.Result{}
	}
}

// settle collects runs until the folder has been quiet for a while.
func (w *watcher) settle() []ingest.Result {
	var out []ingest.Result
	for {
		select {
		case res := <-w.results:
			out = append(out, res)
		case <-time.After(time.Second):
			return out
		}
	}
}

// stop cancels the watch, which must return promptly and cleanly.
func (w *watcher) stop() {
	w.cancel()
	select {
	case err := <-w.done:
		if err != nil {
			w.t.Errorf("Watch returned %v", err)
		}
		w.done <- nil // a second stop returns at once
	case <-time.After(10 * time.Second):
		w.t.Error("Watch did not stop within 10s of its context ending")
	}
}

func TestWatchFollowsTheFolder(t *testing.T) {
	in, pool := newIngester(t)
	dir := t.TempDir()
	writeFile(t, dir, "a.md", "# A\n\nalpha\n")
	w := startWatch(t, in, dir)
	if res := w.next(); res.Created != 1 {
		t.Fatalf("first run: %+v", res)
	}

	// A new folder with a file in it.
	writeFile(t, dir, "notes/b.txt", "beta\n")
	if res := w.next(); res.Created != 1 || res.Unchanged != 1 {
		t.Fatalf("create: %+v", res)
	}
	// An editor's save: a temporary file renamed over the original.
	writeFile(t, dir, "a.md.tmp~", "# A\n\nalpha, edited\n")
	if err := os.Rename(filepath.Join(dir, "a.md.tmp~"), filepath.Join(dir, "a.md")); err != nil {
		t.Fatal(err)
	}
	if res := w.next(); res.Updated != 1 || res.Unchanged != 1 {
		t.Fatalf("rename over: %+v", res)
	}
	// A bad file is reported; the watch goes on.
	writeFile(t, dir, "c.md", "---\ntype: nonsense\n---\n# C\n")
	if res := w.next(); len(res.Errors) != 1 || res.Errors[0].Path != "c.md" {
		t.Fatalf("bad file: %+v", res)
	}
	// A removed file's document goes.
	if err := os.Remove(filepath.Join(dir, "a.md")); err != nil {
		t.Fatal(err)
	}
	if res := w.next(); res.Pruned != 1 {
		t.Fatalf("remove: %+v", res)
	}
	// A burst of writes is one run, or a few, not one per write.
	for i := range 20 {
		writeFile(t, dir, "notes/b.txt", fmt.Sprintf("beta %d\n", i))
		time.Sleep(5 * time.Millisecond)
	}
	runs := w.settle()
	if len(runs) == 0 || len(runs) > 3 {
		t.Errorf("a burst of 20 writes made %d runs", len(runs))
	}
	// A removed folder takes its documents along.
	if err := os.RemoveAll(filepath.Join(dir, "notes")); err != nil {
		t.Fatal(err)
	}
	if res := w.next(); res.Pruned != 1 {
		t.Fatalf("remove folder: %+v", res)
	}
	w.stop()
	if got := queryStrings(t, pool, "SELECT slug FROM documents"); len(got) != 0 {
		t.Errorf("documents left: %v", got)
	}
}

// A folder that empties (a wrong checkout, an unmounted drive) is not taken
// as a project to empty: the documents stay until files are back.
func TestWatchKeepsTheProjectWhenTheFolderEmpties(t *testing.T) {
	in, pool := newIngester(t)
	dir := t.TempDir()
	writeFile(t, dir, "a.md", "# A\n\nalpha\n")
	w := startWatch(t, in, dir)
	if res := w.next(); res.Created != 1 {
		t.Fatalf("first run: %+v", res)
	}
	if err := os.Remove(filepath.Join(dir, "a.md")); err != nil {
		t.Fatal(err)
	}
	if res := w.next(); res.Pruned != 0 || len(res.Notices) != 1 || !strings.Contains(res.Notices[0], "hold no documents") {
		t.Fatalf("emptied: %+v", res)
	}
	if got := queryStrings(t, pool, "SELECT slug FROM documents"); !slices.Equal(got, []string{"a"}) {
		t.Errorf("documents = %v after the folder emptied, want a kept", got)
	}
	writeFile(t, dir, "b.md", "# B\n\nbeta\n")
	if res := w.next(); res.Created != 1 || res.Pruned != 1 {
		t.Fatalf("a file back: %+v", res)
	}
}

func TestWatchStopsCleanlyMidRun(t *testing.T) {
	in, pool := newIngester(t)
	dir := t.TempDir()
	w := startWatch(t, in, dir)
	w.next()
	for i := range 80 {
		writeFile(t, dir, fmt.Sprintf("doc-%02d.md", i), fmt.Sprintf("# Doc %d\n\n%s\n", i, slices.Repeat([]byte("word "), 300)))
	}
	// Stop while the run that follows is (probably) storing.
	time.Sleep(120 * time.Millisecond)
	w.stop()
	// Whatever was stored is whole: every document has its chunks, and the
	// BM25 statistics match the postings.
	if n := scalar[int64](t, pool, "SELECT count(*) FROM documents d WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = d.id)"); n != 0 {
		t.Errorf("%d documents without chunks", n)
	}
	checkStats(t, pool)
	// A later watch picks up where this one stopped.
	w = startWatch(t, in, dir)
	if res := w.next(); res.Created+res.Unchanged != 80 || len(res.Errors) != 0 {
		t.Errorf("restart: %+v", res)
	}
}
