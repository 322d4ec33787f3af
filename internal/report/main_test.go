package report

import (
	"os"
	"testing"
	"time"
)

// TestMain shows times in UTC, as the golden files have them, whatever
// the machine's zone.
func TestMain(m *testing.M) {
	time.Local = time.UTC
	os.Exit(m.Run())
}
