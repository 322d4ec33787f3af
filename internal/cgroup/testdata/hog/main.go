// Command hog uses a known amount of memory or CPU, for the cgroup tests
// (built without the race detector, whose shadow memory would count).
package main

import (
	"flag"
	"os"
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
	for end := time.Now().Add(*burn); time.Now().Before(end); {
	}
	time.Sleep(100 * time.Millisecond)
	if len(b) > 0 && b[len(b)-4096] != 1 {
		os.Exit(1)
	}
}
