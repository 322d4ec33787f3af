// Package envinfo snapshots the machine and the target a run measures: what
// makes storage numbers differ from one day or host to the next. Experiments
// take a snapshot before and after every round; Warnings turns a pair of
// snapshots into the reasons results may be noisy.
//
// Everything is read from /proc and /sys; a fact the kernel does not expose
// (a VM without cpufreq, a virtio disk without a model) is left empty, never
// guessed.
package envinfo

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/iolab/iolab/internal/metrics"
)

// Version is iolab's version, set at build time with
// -ldflags "-X github.com/iolab/iolab/internal/envinfo.Version=v1.2.3".
var Version = "dev"

// Snapshot is the environment at one instant.
type Snapshot struct {
	TakenAt  time.Time `json:"taken_at"`
	Hostname string    `json:"hostname"`
	Kernel   string    `json:"kernel"`
	CPUModel string    `json:"cpu_model"`
	CPUs     int       `json:"cpus"`
	// Governor is the cpufreq scaling governor of cpu0; empty when the
	// kernel exposes none (common in VMs).
	Governor string  `json:"governor,omitempty"`
	FreqMHz  float64 `json:"freq_mhz,omitempty"` // mean current frequency
	// ThrottleCount sums the thermal throttle counters of all CPUs.
	ThrottleCount int64 `json:"throttle_count"`
	// SchedAutogroup is kernel.sched_autogroup_enabled ("1", "0"; empty
	// where the kernel has none): with it on, the CPU is shared between
	// sessions first, so a load of many processes in sessions of their
	// own (fio's jobs, iolab's) takes more of a busy machine than threads.
	SchedAutogroup string `json:"sched_autogroup,omitempty"`

	MemTotalBytes     int64 `json:"mem_total_bytes"`
	MemAvailableBytes int64 `json:"mem_available_bytes"`
	SwapTotalBytes    int64 `json:"swap_total_bytes"`
	SwapFreeBytes     int64 `json:"swap_free_bytes"`
	// SwapIns and SwapOuts are pages swapped since boot (/proc/vmstat).
	SwapIns  int64 `json:"swap_ins"`
	SwapOuts int64 `json:"swap_outs"`

	// PSI "some" avg10 percentages from /proc/pressure; -1 when absent.
	PressureCPU    float64 `json:"psi_cpu_some_avg10"`
	PressureMemory float64 `json:"psi_memory_some_avg10"`
	PressureIO     float64 `json:"psi_io_some_avg10"`

	Load1  float64 `json:"load1"`
	Load5  float64 `json:"load5"`
	Load15 float64 `json:"load15"`

	Target *Target `json:"target,omitempty"`

	IolabVersion string `json:"iolab_version"`
	IolabCommit  string `json:"iolab_commit,omitempty"`
	GoVersion    string `json:"go_version"`
}

// Capture takes a snapshot; target, if not empty, is the path under test.
func Capture(target string) Snapshot {
	s := Snapshot{TakenAt: time.Now().UTC(), CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	s.Hostname, _ = os.Hostname()
	s.Kernel = strings.TrimSpace(readFile("/proc/sys/kernel/osrelease"))
	s.CPUModel = cpuModel()
	s.Governor = strings.TrimSpace(readFile("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"))
	s.FreqMHz = meanFreqMHz()
	s.ThrottleCount = throttleCount()
	s.SchedAutogroup = strings.TrimSpace(readFile("/proc/sys/kernel/sched_autogroup_enabled"))
	mem := keyValues("/proc/meminfo", ":")
	s.MemTotalBytes = mem["MemTotal"] * 1024
	s.MemAvailableBytes = mem["MemAvailable"] * 1024
	s.SwapTotalBytes = mem["SwapTotal"] * 1024
	s.SwapFreeBytes = mem["SwapFree"] * 1024
	vm := keyValues("/proc/vmstat", " ")
	s.SwapIns, s.SwapOuts = vm["pswpin"], vm["pswpout"]
	s.PressureCPU = pressure("cpu")
	s.PressureMemory = pressure("memory")
	s.PressureIO = pressure("io")
	if f := strings.Fields(readFile("/proc/loadavg")); len(f) >= 3 {
		s.Load1, _ = strconv.ParseFloat(f[0], 64)
		s.Load5, _ = strconv.ParseFloat(f[1], 64)
		s.Load15, _ = strconv.ParseFloat(f[2], 64)
	}
	if target != "" {
		s.Target = inspectTarget(target)
	}
	s.IolabVersion, s.IolabCommit = Version, buildCommit()
	return s
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

func cpuModel() string {
	for _, line := range strings.Split(readFile("/proc/cpuinfo"), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func meanFreqMHz() float64 {
	var sum float64
	n := 0
	for _, line := range strings.Split(readFile("/proc/cpuinfo"), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "cpu MHz" {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				sum += f
				n++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func throttleCount() int64 {
	paths, _ := filepath.Glob("/sys/devices/system/cpu/cpu*/thermal_throttle/*_throttle_count")
	var n int64
	for _, p := range paths {
		v, _ := strconv.ParseInt(strings.TrimSpace(readFile(p)), 10, 64)
		n += v
	}
	return n
}

// keyValues reads "key<sep> value [unit]" lines into numbers.
func keyValues(path, sep string) map[string]int64 {
	out := map[string]int64{}
	for _, line := range strings.Split(readFile(path), "\n") {
		k, v, ok := strings.Cut(line, sep)
		if !ok {
			continue
		}
		if f := strings.Fields(v); len(f) > 0 {
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err == nil {
				out[strings.TrimSpace(k)] = n
			}
		}
	}
	return out
}

// pressure returns the "some avg10" of /proc/pressure/<res>, or -1.
func pressure(res string) float64 {
	line, _, _ := strings.Cut(readFile("/proc/pressure/"+res), "\n")
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "avg10="); ok {
			p, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return p
			}
		}
	}
	return -1
}

func buildCommit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}

// Stall is the time tasks have waited for a CPU, for memory and for I/O
// since boot (PSI "some" totals from /proc/pressure, in microseconds),
// read at a moment: two readings give the share of time between them in
// which something waited — during one run, not the 10-second average a
// snapshot between rounds shows.
type Stall struct {
	CPU, Memory, IO int64
	At              time.Time
	OK              bool
}

// pressureFiles are the PSI files, opened once and read in place (pread):
// they are read twice a run, and opening them is most of reading them.
var pressureFiles = sync.OnceValue(func() (files [3]*os.File) {
	for i, name := range []string{"cpu", "memory", "io"} {
		f, err := os.Open("/proc/pressure/" + name)
		if err != nil {
			return [3]*os.File{}
		}
		files[i] = f
	}
	return files
})

// ReadStall reads the PSI totals; OK is false where the kernel has none.
func ReadStall() Stall {
	s := Stall{At: time.Now(), OK: true}
	files := pressureFiles()
	var buf [256]byte
	for i, dst := range []*int64{&s.CPU, &s.Memory, &s.IO} {
		if files[i] == nil {
			return Stall{}
		}
		size, err := files[i].ReadAt(buf[:], 0)
		if size == 0 && err != nil {
			return Stall{}
		}
		line, _, _ := strings.Cut(string(buf[:size]), "\n") // "some avg10=... total=N"
		_, total, ok := strings.Cut(line, "total=")
		n, err := strconv.ParseInt(strings.TrimSpace(total), 10, 64)
		if !ok || err != nil {
			return Stall{}
		}
		*dst = n
	}
	return s
}

// Since gives, per resource, the share of the wall time from prev to s
// in which some task waited for it (0..1).
func (s Stall) Since(prev Stall) (cpu, memory, io float64, ok bool) {
	wall := float64(s.At.Sub(prev.At).Microseconds())
	if !s.OK || !prev.OK || wall <= 0 {
		return 0, 0, 0, false
	}
	share := func(a, b int64) float64 { return math.Min(1, math.Max(0, float64(a-b)/wall)) }
	return share(s.CPU, prev.CPU), share(s.Memory, prev.Memory), share(s.IO, prev.IO), true
}

// WatchStall samples the machine every interval until stop is called,
// handing each interval to each as it ends — at most one per second of
// the clock, which names it (the share of it in which some
// task waited for a CPU, memory, I/O; the load average at its end): what
// the run lived through second by second, where snapshots between rounds
// see only their moment. Nothing is sampled where the kernel has no PSI.
// stop waits for the last call of each.
func WatchStall(every time.Duration, each func(metrics.EnvSecond)) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		prev := ReadStall()
		if !prev.OK {
			return
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		last := prev.At.Unix() - 1 // the second of the last sample handed over
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			now := ReadStall()
			if now.At.Unix() <= last {
				// A late tick put two samples in one second: this one
				// waits, and the next covers both intervals.
				continue
			}
			cpu, mem, io, ok := now.Since(prev)
			if !ok {
				continue
			}
			last = now.At.Unix()
			sec := metrics.EnvSecond{T: last, CPUStall: cpu, MemoryStall: mem, IOStall: io}
			if f := strings.Fields(readFile("/proc/loadavg")); len(f) >= 1 {
				sec.Load1, _ = strconv.ParseFloat(f[0], 64)
			}
			each(sec)
			prev = now
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
