// Command knobdoc writes the README's table of ranking knobs from domain.Knobs,
// between the lines <!-- knobs:begin --> and <!-- knobs:end -->. `make generate`
// runs it; its test fails when the README differs from the table.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/canonkb/canon/domain"
)

const (
	begin = "<!-- knobs:begin -->"
	end   = "<!-- knobs:end -->"
)

func main() {
	path := "README.md"
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	readme, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	out, err := rewrite(readme)
	if err != nil {
		log.Fatalf("%s: %v", path, err)
	}
	if !bytes.Equal(out, readme) {
		if err := os.WriteFile(path, out, 0o644); err != nil { //nolint:gosec // G306: the README is world-readable like the rest of the checkout
			log.Fatal(err)
		}
	}
}

// rewrite replaces what lies between the markers with the generated table.
func rewrite(readme []byte) ([]byte, error) {
	s := string(readme)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return nil, errors.New("no " + begin + " … " + end + " section")
	}
	return []byte(s[:i+len(begin)] + "\n" + table() + s[j:]), nil
}

// table is the Markdown table of the knobs, in the table's order.
func table() string {
	var b strings.Builder
	b.WriteString("| variable | request name | default | range | meaning |\n|---|---|---|---|---|\n")
	for _, k := range domain.Knobs() {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s |\n", k.Env, k.Name, defaults(k), valueRange(k), k.Help)
	}
	return b.String()
}

// defaults spells the default, per embedder when the weight profiles differ.
func defaults(k domain.Knob) string {
	hash, openai := k.DefaultFor(domain.ProfileFor("hash")), k.DefaultFor(domain.ProfileFor("openai"))
	if hash == openai {
		return "`" + spell(k, hash) + "`"
	}
	return fmt.Sprintf("profile (%s hash / %s openai)", spell(k, hash), spell(k, openai))
}

func valueRange(k domain.Knob) string {
	if k.Kind == domain.KnobSwitch {
		return "true, false"
	}
	low := "["
	if k.MinExclusive {
		low = "("
	}
	return low + spell(k, k.Min) + ", " + spell(k, k.Max) + "]"
}

// spell writes a fraction with at least two decimals (0.10, 0.55, 0.001), as
// weights are written elsewhere in the README.
func spell(k domain.Knob, v float64) string {
	s := k.Format(v)
	if k.Kind == domain.KnobNumber && v != 0 && v > -1 && v < 1 && len(s)-strings.Index(s, ".") == 2 {
		s += "0"
	}
	return s
}
