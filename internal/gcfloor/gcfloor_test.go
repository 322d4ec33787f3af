package gcfloor

import (
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"
)

func gcPercent() int {
	p := debug.SetGCPercent(0)
	debug.SetGCPercent(p)
	return p
}

// setFloor sets the floor for a test, and the collector back as it was
// after it.
func setFloor(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	percent, limit := gcPercent(), debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
	Set()
}

// Below the floor nothing is collected but at the floor; once more than
// half of it stays live, the process collects as Go's default does. (Not
// parallel: it sets the test process's collector.)
func TestFloorGivesWayToAGrowingHeap(t *testing.T) {
	setFloor(t)
	if p, limit := gcPercent(), debug.SetMemoryLimit(-1); p != -1 || limit != Floor {
		t.Fatalf("after Set: GC percent %d, memory limit %d; want off, %d", p, limit, Floor)
	}
	runtime.GC() // a small heap: the floor stays
	time.Sleep(10 * time.Millisecond)
	if p := gcPercent(); p != -1 {
		t.Fatalf("a small heap gave the floor up: GC percent %d", p)
	}
	live := make([][]byte, 24)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() != 100 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if p, limit := gcPercent(), debug.SetMemoryLimit(-1); p != 100 || limit != math.MaxInt64 {
		t.Errorf("with %d MiB live: GC percent %d, memory limit %d; want Go's default", len(live), p, limit)
	}
	runtime.KeepAlive(live)
}

// Stacks count as what is live: 4,000 goroutines of little heap and
// 8 KiB of stack or more each are past half the floor, which a memory
// limit at the floor would collect over and over.
func TestStacksCount(t *testing.T) {
	setFloor(t)
	stop := make(chan struct{})
	var started sync.WaitGroup
	for range 4000 {
		started.Add(1)
		go func() {
			var pad [4 << 10]byte // grows the stack past its first 8 KiB's half
			started.Done()
			<-stop
			runtime.KeepAlive(pad)
		}()
	}
	started.Wait()
	defer close(stop)
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() != 100 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if p := gcPercent(); p != 100 {
		t.Errorf("4,000 goroutines parked: GC percent %d, want Go's default", p)
	}
}

// GOGC or GOMEMLIMIT in the environment is the user's: left as it says.
func TestEnvironmentWins(t *testing.T) {
	t.Setenv("GOGC", "200")
	before := gcPercent()
	Set()
	if p := gcPercent(); p != before {
		t.Errorf("GOGC=200 set, and Set changed the GC percent from %d to %d", before, p)
	}
}
