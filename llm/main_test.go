package llm

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine started by a test (streams, retries and the HTTP clients of the providers) must have ended when the tests do.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
