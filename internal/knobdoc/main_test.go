package main

import (
	"os"
	"strings"
	"testing"

	"github.com/canonkb/canon/domain"
)

// TestReadmeMatchesKnobTable is the drift check: the README's knob rows are the
// table's. Run `make generate` (or `go run ./internal/knobdoc`) to fix it.
func TestReadmeMatchesKnobTable(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := rewrite(readme)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(readme) {
		t.Error("README.md's ranking knob table differs from domain.Knobs; run `make generate` and commit")
	}
}

func TestTableHasEveryKnob(t *testing.T) {
	t.Parallel()
	got := table()
	for _, k := range domain.Knobs() {
		if !strings.Contains(got, "| `"+k.Env+"` | `"+k.Name+"` |") {
			t.Errorf("no row for %s", k.Env)
		}
	}
	for in, want := range map[float64]string{0.1: "0.10", 0.55: "0.55", 0.001: "0.001", 60: "60", 0: "0", 1.2: "1.2"} {
		if got := spell(domain.Knobs()[0], in); got != want {
			t.Errorf("spell(%g) = %s, want %s", in, got, want)
		}
	}
}

func TestRewrite(t *testing.T) {
	t.Parallel()
	out, err := rewrite([]byte("a\n" + begin + "\nold\n" + end + "\nb\n"))
	if err != nil || !strings.HasPrefix(string(out), "a\n"+begin+"\n| variable |") || !strings.HasSuffix(string(out), "|\n"+end+"\nb\n") {
		t.Errorf("%q %v", out, err)
	}
	if _, err := rewrite([]byte("no markers")); err == nil {
		t.Error("a README without markers must be an error")
	}
}
