package observe

import (
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/metrics"
)

// A tree of a shell and its children is found whole, and a watch of it
// hands on every second as it ends.
func TestWatchTree(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 3 & sleep 3 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	deadline := time.Now().Add(5 * time.Second)
	for len(Tree(cmd.Process.Pid)) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if tree := Tree(cmd.Process.Pid); len(tree) != 3 || tree[0] != cmd.Process.Pid {
		t.Fatalf("tree %v, want the shell and its two sleeps", tree)
	}
	var mu sync.Mutex
	var secs []metrics.ServerSecond
	w := WatchTree(cmd.Process.Pid, 100*time.Millisecond, func(s metrics.ServerSecond) {
		mu.Lock()
		defer mu.Unlock()
		secs = append(secs, s)
	})
	time.Sleep(2300 * time.Millisecond)
	p := w.Stop()
	if p.Samples < 10 || p.RSSBytes <= 0 || p.MaxThreads < 3 || p.MaxFDs < 3 {
		t.Errorf("peak %+v", p)
	}
	mu.Lock()
	defer mu.Unlock()
	// Seconds 0 and 1, and the last 0.3 s as a third.
	if len(secs) != 3 || !slices.IsSortedFunc(secs, func(a, b metrics.ServerSecond) int { return int(a.T - b.T) }) || secs[2].T != 2 {
		t.Errorf("seconds %+v", secs)
	}
	for _, s := range secs {
		if s.RSSBytes <= 0 || s.Threads < 3 {
			t.Errorf("second %+v", s)
		}
	}
}

// BenchmarkSample is the cost of one look at a process tree (this test
// process, its threads and files): the watcher's CPU per second of
// observation, at one sample a second.
func BenchmarkSample(b *testing.B) {
	w := &Watcher{root: os.Getpid()}
	for b.Loop() {
		w.sample()
	}
	b.ReportMetric(float64(w.peak.MaxThreads), "threads")
	b.ReportMetric(float64(w.peak.MaxFDs), "fds")
}
