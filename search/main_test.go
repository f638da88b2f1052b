package search_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"
)

// The pools shared by the tests (the handbook's and the synthetic corpus's) are
// closed once every test has run; then no goroutine a test started may be left.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, p := range []*pgxpool.Pool{pool, syntheticPool} {
		if p != nil {
			p.Close()
		}
	}
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		code = 1
	}
	os.Exit(code)
}
