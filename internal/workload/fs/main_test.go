package fs

import (
	"os"
	"testing"
)

// A run's jobs run as processes of this test binary (jobs.go): those
// serve their job and exit.
func TestMain(m *testing.M) {
	ServeJobIfAsked()
	os.Exit(m.Run())
}
