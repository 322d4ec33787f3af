package driver

import (
	"runtime"
	"sync"
)

// procs is the process's GOMAXPROCS as the runs in it ask for processors:
// raised while any holds some, back to what it was when none does. Runs
// side by side in one process (a test binary's) add up their holds, where
// each saving and restoring GOMAXPROCS itself would undo the other's.
var procs struct {
	sync.Mutex
	held int // processors held by the runs under way
	base int // GOMAXPROCS before the first of them
}

// HoldProcs keeps n processors for goroutines that hold theirs — an event
// loop waiting in a raw system call, a worker that should never wait for
// one — and one more for the rest of the process, until release is called.
func HoldProcs(n int) (release func()) {
	procs.Lock()
	defer procs.Unlock()
	if procs.held == 0 {
		procs.base = runtime.GOMAXPROCS(0)
	}
	procs.held += n
	runtime.GOMAXPROCS(max(procs.base, procs.held+1))
	var once sync.Once
	return func() {
		once.Do(func() {
			procs.Lock()
			defer procs.Unlock()
			procs.held -= n
			runtime.GOMAXPROCS(max(procs.base, procs.held+1))
		})
	}
}

// CPUs is how many processors the process has to itself: GOMAXPROCS
// without the runs' holds.
func CPUs() int {
	procs.Lock()
	defer procs.Unlock()
	if procs.held == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return procs.base
}
