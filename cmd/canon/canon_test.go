package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/internal/dbtest"
)

// A slug or project key the database cannot hold as text is the caller's
// mistake, said in words, not PostgreSQL's encoding error.
func TestLifecycleCommandsRefuseBadText(t *testing.T) {
	t.Setenv("DATABASE_URL", dbtest.FreshURL(t))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte("# A\n\ntext\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "ingest", dir, "--project", "platform"); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"graph", "show", "\xff", "--project", "platform"}, `slug "\xff" is not valid UTF-8 text`},
		{[]string{"canon", "deprecate", "\xff", "--project", "platform", "--actor", "t"}, `slug "\xff" is not valid UTF-8 text`},
		{[]string{"canon", "archive", "a", "--project", "plat\x00form", "--actor", "t"}, `project key "plat\x00form" contains a NUL`},
	}
	for _, c := range cases {
		_, err := run(t, c.args...)
		if !domain.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("canon %q: %v, want an invalid-input error containing %q", c.args, err, c.want)
		}
	}
}
