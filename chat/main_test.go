package chat_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// The shared handbook pool is closed once every test has run; then no goroutine
// a test started (pools, provider servers, streams) may be left.
func TestMain(m *testing.M) {
	code := m.Run()
	if pool != nil {
		pool.Close()
	}
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		code = 1
	}
	os.Exit(code)
}
