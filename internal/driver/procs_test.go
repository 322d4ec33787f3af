package driver

import (
	"runtime"
	"testing"
)

// Holds of runs side by side add up, and GOMAXPROCS comes back to what it
// was only when the last is released, whatever the order.
func TestHoldProcsAddUp(t *testing.T) {
	base := runtime.GOMAXPROCS(0)
	a := HoldProcs(base + 2)
	if got := runtime.GOMAXPROCS(0); got != base+3 {
		t.Fatalf("one hold of %d: GOMAXPROCS %d, want %d", base+2, got, base+3)
	}
	b := HoldProcs(3)
	if got := runtime.GOMAXPROCS(0); got != base+6 || CPUs() != base {
		t.Fatalf("two holds: GOMAXPROCS %d, CPUs %d; want %d, %d", got, CPUs(), base+6, base)
	}
	a()
	a() // a second release is none
	if got := runtime.GOMAXPROCS(0); got != max(base, 4) {
		t.Fatalf("the first released: GOMAXPROCS %d, want %d (the other's 3 and one)", got, max(base, 4))
	}
	b()
	if got := runtime.GOMAXPROCS(0); got != base {
		t.Fatalf("both released: GOMAXPROCS %d, want %d", got, base)
	}
}
