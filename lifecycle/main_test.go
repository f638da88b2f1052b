package lifecycle_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine started by a test (concurrent transitions and the connection pool) must have ended when the tests do.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
