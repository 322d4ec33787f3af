// Package observe watches the processes iolab starts, from /proc: how much
// memory a command's process tree holds at its peak.
//
// A child's getrusage peak (ru_maxrss) cannot be used for that: a process
// that Go starts is cloned from iolab's own address space, and Linux keeps
// the larger peak across exec, so every command would show iolab's RSS
// (golang/go#32054). /proc/PID/status's VmHWM is the peak of the address
// space the process runs now, after its exec.
package observe

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// TreePeak is what a watch saw of a process tree.
type TreePeak struct {
	// RSSBytes is the tree's peak resident memory: the larger of the
	// highest sum of its processes' RSS in one sample and the highest
	// single process's own peak (VmHWM, which also covers what happened
	// between samples).
	RSSBytes int64
	// Samples is how many times the tree was read; 0 when it was gone
	// before the first look.
	Samples int
}

// Watcher samples a process tree until Stop.
type Watcher struct {
	root  int
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	peak  TreePeak
	every time.Duration
}

// WatchTree starts sampling the tree below (and including) pid: at once,
// then every millisecond for the first 20 ms, then every `every`.
func WatchTree(pid int, every time.Duration) *Watcher {
	w := &Watcher{root: pid, stop: make(chan struct{}), done: make(chan struct{}), every: every}
	w.sample()
	go w.loop()
	return w
}

func (w *Watcher) loop() {
	defer close(w.done)
	for i := 0; ; i++ {
		d := w.every
		if i < 20 {
			d = time.Millisecond
		}
		select {
		case <-w.stop:
			return
		case <-time.After(d):
			w.sample()
		}
	}
}

// Stop ends the watch and returns what it saw.
func (w *Watcher) Stop() TreePeak {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak
}

func (w *Watcher) sample() {
	var sum, hwm int64
	seen := 0
	for _, pid := range Tree(w.root) {
		rss, peak, ok := memory(pid)
		if !ok {
			continue
		}
		seen++
		sum += rss
		hwm = max(hwm, peak)
	}
	if seen == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.peak.Samples++
	w.peak.RSSBytes = max(w.peak.RSSBytes, sum, hwm)
}

// Tree lists pid and its descendants, from /proc/PID/task/TID/children.
func Tree(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out) && i < 100_000; i++ {
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(out[i]) + "/task")
		if err != nil {
			continue
		}
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(out[i]) + "/task/" + t.Name() + "/children")
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// memory reads a process's resident memory and its peak, in bytes; ok is
// false for a process that is gone or a zombie (no memory left).
func memory(pid int) (rss, peak int64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			rss, ok = kib(line), true
		case strings.HasPrefix(line, "VmHWM:"):
			peak = kib(line)
		}
	}
	return rss, peak, ok
}

// kib parses "VmRSS:	    1234 kB".
func kib(line string) int64 {
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(f[1], 10, 64)
	return n << 10
}
