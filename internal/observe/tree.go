// Package observe watches the processes iolab starts, from /proc: a
// command's or a server's whole process tree — its peak memory, the CPU it
// used, what it read and wrote, its threads and open files.
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

	"github.com/iolab/iolab/internal/metrics"
)

// The figures a watch adds to a run of a server it watched (what cli's
// server watch makes of a TreePeak).
func init() {
	metrics.Declare(
		metrics.Def{Name: "server_cpu_s", Label: "server CPU", Unit: "s", Better: metrics.LowerIsBetter, Zeroable: true},
		metrics.Def{Name: "server_rss_peak_bytes", Label: "server peak RSS MiB", Unit: "B", Better: metrics.LowerIsBetter, Merge: metrics.MergeMax},
		metrics.Def{Name: "server_read_bytes", Label: "server read MiB", Unit: "B", Better: metrics.LowerIsBetter, Zeroable: true},
		metrics.Def{Name: "server_write_bytes", Label: "server write MiB", Unit: "B", Better: metrics.LowerIsBetter, Zeroable: true},
		metrics.Def{Name: "server_threads_max", Label: "server threads", Unit: "threads", Better: metrics.LowerIsBetter, Merge: metrics.MergeMax},
		metrics.Def{Name: "server_fds_max", Label: "server open files", Unit: "files", Better: metrics.LowerIsBetter, Merge: metrics.MergeMax},
	)
}

// Observation is what was seen of a process during a run: figures to add
// to the run's, profiles, and why it could not be seen as asked.
type Observation struct {
	// Extra are figures to add to the run's (server_cpu_s,
	// server_rss_peak_bytes ...).
	Extra map[string]float64
	// Profiles are profiles taken during the run, by kind.
	Profiles map[string][]byte
	// Err fails the run: what was asked for could not be observed (a
	// profile endpoint that answers 404).
	Err error
}

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
	// CPUSeconds is the user and system CPU the tree used between the
	// first and the last sample (its processes' own, and that of the
	// children they waited for).
	CPUSeconds float64
	// ReadBytes and WriteBytes are what the tree read from and wrote to
	// storage between the first and the last sample (/proc/PID/io).
	ReadBytes, WriteBytes int64
	// MaxThreads and MaxFDs are the most threads and open file
	// descriptors the tree had in one sample.
	MaxThreads, MaxFDs int
}

// usage is one sample's totals over a tree.
type usage struct {
	rss, hwm      int64
	cpuTicks      int64
	read, written int64
	threads, fds  int
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux ABI Go supports.
const clockTicks = 100

// Watcher samples a process tree until Stop.
type Watcher struct {
	root  int
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	peak  TreePeak
	first usage // the first sample, from which usage is counted
	every time.Duration
	// each, if set, gets every whole second of the watch.
	each    func(metrics.ServerSecond)
	began   time.Time
	emitted int64 // whole seconds handed to each
	last    usage // the sample each last got
	latest  usage // the latest sample
	// memoryOnly watches read the memory alone (WatchTreeMemory).
	memoryOnly bool
}

// WatchTree starts sampling the tree below (and including) pid: at once,
// then after 1, 2, 4, 8 ms ... (doubling) until that reaches `every`, then
// every `every`: a short-lived tree is still seen, at a few samples (each
// reads six /proc files a process, on the CPUs the tree runs on; every
// millisecond for 20 ms was most of iolab cmd's own CPU a run). each, if
// not nil, is called with every second of the watch as it ends (and the
// last, partial one at Stop): what the tree held and used in it.
func WatchTree(pid int, every time.Duration, each func(metrics.ServerSecond)) *Watcher {
	return watchTree(&Watcher{root: pid, every: every, each: each})
}

// WatchTreeMemory is WatchTree for the peak memory alone (TreePeak's
// RSSBytes and Samples; the rest stays zero): a sample reads a process's
// status (and the tree's children lists), not the six files of a full
// sample: a command's run takes its CPU from its rusage and needs no more.
func WatchTreeMemory(pid int, every time.Duration) *Watcher {
	return watchTree(&Watcher{root: pid, every: every, memoryOnly: true})
}

func watchTree(w *Watcher) *Watcher {
	w.stop, w.done, w.began = make(chan struct{}), make(chan struct{}), time.Now()
	w.sample()
	go w.loop()
	return w
}

func (w *Watcher) loop() {
	defer close(w.done)
	for d := time.Millisecond; ; d = min(2*d, w.every) {
		select {
		case <-w.stop:
			return
		case <-time.After(d):
			w.sample()
		}
	}
}

// Stop takes a last sample, ends the watch and returns what it saw.
func (w *Watcher) Stop() TreePeak {
	close(w.stop)
	<-w.done
	w.sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	// The last, partial second, when it lasted or held any work: its CPU
	// and bytes belong to the run.
	if l, u := w.last, w.latest; w.each != nil && w.peak.Samples > 0 && (time.Since(w.began) > time.Duration(w.emitted)*time.Second+200*time.Millisecond ||
		u.cpuTicks != l.cpuTicks || u.read != l.read || u.written != l.written) {
		w.emit(w.latest)
	}
	return w.peak
}

// emit hands the second that ends now to each: u against the last one.
func (w *Watcher) emit(u usage) {
	w.each(metrics.ServerSecond{T: w.emitted, RSSBytes: u.rss, CPUS: float64(u.cpuTicks-w.last.cpuTicks) / clockTicks,
		ReadBytes: u.read - w.last.read, WriteBytes: u.written - w.last.written, Threads: u.threads, FDs: u.fds})
	w.emitted++
	w.last = u
}

func (w *Watcher) sample() {
	var u usage
	seen := 0
	for _, pid := range Tree(w.root) {
		rss, peak, ok := memory(pid)
		if !ok {
			continue
		}
		seen++
		u.rss += rss
		u.hwm = max(u.hwm, peak)
		if w.memoryOnly {
			continue
		}
		ticks, threads := cpu(pid)
		u.cpuTicks += ticks
		u.threads += threads
		r, wr := io(pid)
		u.read += r
		u.written += wr
		if fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd"); err == nil {
			u.fds += len(fds)
		}
	}
	if seen == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.peak.Samples == 0 {
		w.first = u
	}
	w.peak.Samples++
	if w.peak.Samples == 1 {
		w.last = u
	}
	w.latest = u
	// A second is handed on once it is over (a sample may come a little
	// early: time.After is not exact).
	if w.each != nil && time.Since(w.began) >= time.Duration(w.emitted+1)*time.Second-50*time.Millisecond {
		w.emit(u)
	}
	p := &w.peak
	p.RSSBytes = max(p.RSSBytes, u.rss, u.hwm)
	p.CPUSeconds = float64(u.cpuTicks-w.first.cpuTicks) / clockTicks
	p.ReadBytes, p.WriteBytes = u.read-w.first.read, u.written-w.first.written
	p.MaxThreads, p.MaxFDs = max(p.MaxThreads, u.threads), max(p.MaxFDs, u.fds)
}

// cpu reads a process's CPU time in clock ticks — its own and that of the
// children it waited for — and its thread count, from /proc/PID/stat.
func cpu(pid int) (ticks int64, threads int) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 18 {
		return 0, 0
	}
	for _, i := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime (fields 14-17)
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	threads, _ = strconv.Atoi(f[17]) // num_threads, field 20
	return ticks, threads
}

// io reads the bytes a process read from and wrote to storage; 0 where
// /proc/PID/io cannot be read (another user's process).
func io(pid int) (read, written int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "read_bytes":
			read = n
		case "write_bytes":
			written = n
		}
	}
	return read, written
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
