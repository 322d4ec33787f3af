// Command hog uses a known amount of memory or CPU, for the cgroup tests
// (built without the race detector, whose shadow memory would count).
package main

import (
	"flag"
	"os"
	"syscall"
	"time"
)

func main() {
	mib := flag.Int("alloc", 0, "MiB to allocate and touch")
	burn := flag.Duration("burn", 0, "CPU time to burn in a busy loop")
	flag.Parse()
	b := make([]byte, *mib<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	// CPU time, not wall time: on a busy machine a loop of 1 s of wall
	// time may get a few dozen milliseconds of CPU, too few to meet a
	// limit at all.
	for cpuTime() < *burn {
	}
	time.Sleep(100 * time.Millisecond)
	if len(b) > 0 && b[len(b)-4096] != 1 {
		os.Exit(1)
	}
}

// cpuTime is the CPU time this process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
