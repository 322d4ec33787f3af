package harness

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// machineLoad is what the machine did while a bench ran: a bench's
// figures are trusted only from a quiet machine, and this says whether it
// was — the CPU that went to anything but the bench and what it started
// (other processes, kernel threads included), beside the bench's own.
type machineLoad struct {
	start       time.Time
	loadBefore  string  // /proc/loadavg's 1-minute average
	busy0, own0 float64 // CPU seconds: the whole machine's, the bench's tree's
}

func startMachineLoad() *machineLoad {
	m := &machineLoad{start: time.Now(), busy0: machineBusy(), own0: treeCPU()}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.loadBefore = strings.Fields(string(b))[0]
	}
	return m
}

// String is one line for the end of a bench's output.
func (m *machineLoad) String() string {
	wall := time.Since(m.start).Seconds()
	busy, own := machineBusy()-m.busy0, treeCPU()-m.own0
	cpus := float64(runtime.NumCPU())
	others := max(0, busy-own)
	hogs := ""
	if stressing > 0 {
		hogs = fmt.Sprintf(" (-stress %d's hogs among them)", stressing)
	}
	return fmt.Sprintf("machine over this bench's %s: load average %s before it; its processes used %.0f%% of %d CPUs%s, everything else %.1f%% (kernel threads included)",
		time.Duration(wall*float64(time.Second)).Round(time.Second), m.loadBefore, 100*own/wall/cpus, runtime.NumCPU(), hogs, 100*others/wall/cpus)
}

// machineBusy is the CPU seconds all CPUs spent not idle (nor waiting for
// I/O) since boot, from /proc/stat.
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	var ticks float64
	for i, v := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is already in user
			continue
		}
		n, _ := strconv.ParseFloat(v, 64)
		ticks += n
	}
	return ticks / clockTicks
}

// treeCPU is the CPU seconds of this process and everything it started:
// the children it waited for (getrusage) and those still alive, with what
// they waited for in turn (/proc).
func treeCPU() float64 {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	sec := func(r *syscall.Rusage) float64 {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano()).Seconds()
	}
	total := sec(&self) + sec(&children)
	stats := map[int]procStat{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if pid, err := strconv.Atoi(d.Name()); err == nil {
			if st, err := readStat(pid); err == nil {
				stats[pid] = st
			}
		}
	}
	me := os.Getpid()
	for _, st := range stats {
		for p := st.ppid; p > 1; p = stats[p].ppid {
			if p == me {
				total += st.self + st.children
				break
			}
		}
	}
	return total
}
