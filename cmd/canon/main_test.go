package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/canonkb/canon/config"
	"github.com/canonkb/canon/hierarchy"
	"github.com/canonkb/canon/internal/dbtest"
)

// run executes the canon command line in-process against the test's database.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestHelpDescribesEveryCommand(t *testing.T) {
	out, err := run(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"serve", "migrate", "ingest", "reembed", "search", "ask", "projects", "gaps"} {
		if !strings.Contains(out, cmd) {
			t.Errorf("canon --help does not list %s", cmd)
		}
		sub, err := run(t, cmd, "--help")
		if err != nil || !strings.Contains(sub, "Flags:") {
			t.Errorf("canon %s --help: %v\n%s", cmd, err, sub)
		}
	}
}

func TestCommandLineEndToEnd(t *testing.T) {
	t.Setenv("DATABASE_URL", dbtest.FreshURL(t))
	if out, err := run(t, "migrate", "status"); err != nil || strings.Contains(out, "pending") {
		t.Fatalf("migrate status: %v\n%s", err, out)
	}
	out, err := run(t, "ingest", "../../examples/handbook", "--project", "platform")
	if err != nil || !strings.Contains(out, "0 errors") {
		t.Fatalf("ingest: %v\n%s", err, out)
	}

	// A broken file: reported as path:line: reason, exit status 1, the rest stored.
	dir := t.TempDir()
	for name, text := range map[string]string{"ok.md": "# Fine\n\nfine text\n", "bad.md": "---\ntype: decison\n---\n# Bad\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err = run(t, "ingest", dir, "--project", "scratch")
	var exit *exitError
	if !errors.As(err, &exit) || exit.code != 1 || !strings.Contains(out, "bad.md:2: unknown type \"decison\"") ||
		!strings.Contains(out, "1 created") {
		t.Fatalf("bad file: %v\n%s", err, out)
	}

	// --prune over a folder with no documents would empty the project: refused.
	out, err = run(t, "ingest", t.TempDir(), "--project", "scratch", "--prune")
	if err == nil || !strings.Contains(err.Error(), `would delete every document of project "scratch"`) {
		t.Fatalf("ingest --prune of an empty folder: %v\n%s", err, out)
	}
	if out, err := run(t, "projects"); err != nil || !regexp.MustCompile(`(?m)^scratch\s+1\s`).MatchString(out) {
		t.Fatalf("the refused prune emptied scratch: %v\n%s", err, out)
	}

	out, err = run(t, "search", "what cache layer did we standardise on?", "--project", "platform", "--json", "--limit", "3")
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("search --json is not JSON: %v\n%s", err, out)
	}
	primary := res["primary"].([]any)
	if first := primary[0].(map[string]any); first["doc_id"] != "dec-cache-v2" || first["heading_path"] == nil {
		t.Errorf("search --json must use proto field names: %v", first)
	}
	// The worked example through the CLI: expanded and rejected come along.
	// protojson varies its whitespace on purpose: compare with spaces removed.
	compact := strings.Join(strings.Fields(out), "")
	if !strings.Contains(compact, `"doc_id":"mod-session-store"`) || !strings.Contains(compact, `"edge_type":"depends_on"`) ||
		!strings.Contains(compact, `"doc_id":"rej-memcached-2023"`) || !strings.Contains(compact, `"origin":"rejected_approach"`) {
		t.Errorf("search --json should carry the expanded session store and the rejected Memcached approach")
	}

	out, err = run(t, "search", "error E5032", "--project", "platform", "--sql")
	if err != nil || !strings.HasPrefix(out, "-- 1. Ranking") || !strings.Contains(out, "\nBEGIN;\n") ||
		!strings.Contains(out, "-- 2. Graph step") || strings.Contains(out, "$1") {
		t.Errorf("--sql: %v\n%.300s", err, out)
	}
	if out, err = run(t, "search", "x", "--project", "platform", "--fusion", "magic"); err == nil || !strings.Contains(err.Error(), "unknown fusion") {
		t.Errorf("unknown fusion: %v %s", err, out)
	}

	out, err = run(t, "ask", "what is the best banana bread recipe?", "--project", "platform", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var chat map[string]any
	if err := json.Unmarshal([]byte(out), &chat); err != nil || chat["refusal_reason"] != "no_relevant_context" {
		t.Errorf("ask --json refusal: %v\n%s", err, out)
	}
	out, err = run(t, "ask", "how do deployment rollbacks work?", "--project", "platform")
	if err != nil || !strings.Contains(out, "Citations:") || !strings.Contains(out, "rb-deploy-rollback") {
		t.Errorf("ask: %v\n%s", err, out)
	}
	// Chat retrieves like search: a question naming a person runs in two passes
	// and cites her documents; --no-hierarchy retrieves flat.
	out, err = run(t, "ask", "What has Dana been working on?", "--project", "platform")
	if err != nil || !strings.Contains(out, "two_pass (dana)") || !strings.Contains(out, "Citations:") ||
		strings.Contains(out, "note-working-on-this-quarter") {
		t.Errorf("ask (two-pass): %v\n%s", err, out)
	}
	out, err = run(t, "ask", "What has Dana been working on?", "--project", "platform", "--no-hierarchy", "--json")
	compact = strings.Join(strings.Fields(out), "")
	if err != nil || !strings.Contains(compact, `"search_mode":"flat"`) || !strings.Contains(compact, `"hierarchy_reason":"disabled"`) {
		t.Errorf("ask --no-hierarchy --json: %v\n%s", err, out)
	}
	if out, err := run(t, "projects"); err != nil || !strings.Contains(out, "platform") || !strings.Contains(out, "payments") {
		t.Errorf("projects: %v\n%s", err, out)
	}
}

func TestBrokenPromptTemplateFailsAtStartup(t *testing.T) {
	t.Setenv("DATABASE_URL", dbtest.FreshURL(t))
	path := filepath.Join(t.TempDir(), "prompt.tmpl")
	if err := os.WriteFile(path, []byte("{{.Nope"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KB_PROMPT_TEMPLATE", path)
	if _, err := run(t, "ask", "anything", "--project", "platform"); err == nil || !strings.Contains(err.Error(), "prompt template") {
		t.Errorf("want a prompt template error, got %v", err)
	}
}

// The KB_HIERARCHY_* defaults are hierarchy.DefaultConfig: the values the
// hierarchy tests and the entity benchmarks were measured with.
func TestHierarchyDefaultsAreThePackages(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hierarchyConfig(cfg), hierarchy.DefaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("KB_HIERARCHY_* defaults give\n%+v\nhierarchy.DefaultConfig is\n%+v", got, want)
	}
}
