package postgres_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine started by a test (the connection pool's background goroutines) must have ended when the tests do.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
