package doctor_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a test starts (servers, pools, caches, streams) must have ended when the tests do.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
