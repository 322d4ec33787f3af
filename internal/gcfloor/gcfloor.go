// Package gcfloor keeps an iolab process from collecting garbage while
// its heap is small. Most iolab processes live seconds and hold a few
// MiB: Go's default (a collection each time the heap doubles, from 4 MiB)
// collected over and over while the store opened and the report was
// built — 12–14 ms of a 35 ms process's CPU (a one-byte download), more
// than curl's whole process, beside the target it measures. Below Floor
// nothing is collected; once what is live after a collection (the heap's
// live objects and the goroutines' stacks) passes half of it, the process
// collects as Go's default does, so memory stays bounded by the larger of
// Floor and twice what is live.
package gcfloor

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// Floor is the heap under which no collection runs.
const Floor = 32 << 20

// Set sets the floor for this process, unless GOGC or GOMEMLIMIT is set
// in its environment: then the runtime does as those say.
func Set() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(Floor)
	arm()
}

// sentinel is an object whose cleanup runs after the collection that
// finds it unreachable: the next one after arm.
type sentinel struct{ _ *byte }

// arm checks the live heap after the next collection.
func arm() {
	runtime.AddCleanup(&sentinel{}, func(struct{}) {
		if !Grown() {
			arm()
		}
	}, struct{}{})
}

// Grown says whether what was live after the last collection — the
// heap's objects, and stacks, which the memory limit counts too — passed
// half of Floor; when it did, it gives the process Go's default
// collection.
func Grown() bool {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}, {Name: "/memory/classes/os-stacks:bytes"}}
	metrics.Read(s)
	var live uint64
	for _, x := range s {
		if x.Value.Kind() == metrics.KindUint64 {
			live += x.Value.Uint64()
		}
	}
	if live <= Floor/2 {
		return false
	}
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	return true
}
