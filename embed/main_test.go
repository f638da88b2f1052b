package embed

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine started by a test (the query cache and the HTTP clients of the embedders) must have ended when the tests do.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
