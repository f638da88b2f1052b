package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/internal/syncbuf"
)

func TestIngestFormatsWatchAndReembed(t *testing.T) {
	t.Setenv("DATABASE_URL", dbtest.FreshURL(t))
	dir := t.TempDir()
	for name, content := range map[string]string{
		"a.md":             "# Alpha\n\nThe alpha service.\n",
		"b.html":           "<h1>Beta</h1><p>The beta service.</p>",
		"c.txt":            "The gamma service.\n",
		"c.txt.meta.yaml":  "title: Gamma\ntype: module-kb\n",
		"d.txt.meta.yaml":  "title: Orphan\n",
		"notes/e.markdown": "# Epsilon\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := run(t, "ingest", dir, "--project", "fmt")
	if err == nil || !strings.Contains(out, "4 created") || !strings.Contains(out, "d.txt.meta.yaml: a sidecar for d.txt, which is not there") {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	if err := os.Remove(filepath.Join(dir, "d.txt.meta.yaml")); err != nil {
		t.Fatal(err)
	}

	// The embedder has not changed: nothing to re-embed.
	if out, err := run(t, "reembed", "--project", "fmt"); err != nil || !strings.HasPrefix(out, "re-embedded 0 documents (0 chunks, 0 entities) with hash") {
		t.Errorf("reembed: %v\n%s", err, out)
	}
	if _, err := run(t, "reembed", "--project", "nope"); err == nil || !strings.Contains(err.Error(), `no project "nope"`) {
		t.Errorf("reembed of an unknown project: %v", err)
	}

	// --watch: a first run, a run per change, a clean stop on interrupt.
	ctx, cancel := context.WithCancel(context.Background())
	var buf syncbuf.Buffer
	root := newRoot()
	root.SetOut(&buf)
	root.SetErr(&buf)
	root.SetArgs([]string{"ingest", dir, "--project", "fmt", "--watch", "--debounce", "50ms"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	waitFor := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); !strings.Contains(buf.String(), what); {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in:\n%s", what, buf.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("4 unchanged")
	if err := os.Remove(filepath.Join(dir, "b.html")); err != nil {
		t.Fatal(err)
	}
	waitFor("1 pruned")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("watch stopped with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not stop")
	}
}
