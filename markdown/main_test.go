package markdown

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine started by a test (concurrent parsing) must have ended when the tests do.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
