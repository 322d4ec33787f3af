package envinfo

import (
	"fmt"
	"strings"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/stats"
)

// The machine's stall during a run, which the lab adds to each run from
// this package's per-second watch: the mean share of the run's seconds in
// which some task waited (for a CPU, memory, I/O), and the worst second's.
func init() {
	for _, what := range []string{"cpu", "memory", "io"} {
		metrics.Declare(
			metrics.Def{Name: "env_" + what + "_stall", Unit: "share", Merge: metrics.MergeMax},
			metrics.Def{Name: "env_" + what + "_stall_peak", Unit: "share", Merge: metrics.MergeMax},
		)
	}
}

// Evidence is what the runs measured that helps judge the environment.
type Evidence struct {
	// Starved names cells whose throughput varied much more than their
	// CPU per operation (the signature of a benchmark starved of CPU, not
	// of a target that drifted), with the two variations.
	Starved []Starved
	// TouchesDisk is set when a workload did I/O on the target's
	// filesystem (fs, frames), or a command did block I/O of its own
	// (analysis.ownsIO): only then do the target's device and filesystem
	// matter, and I/O pressure may be the workload's own. An http or s3
	// workload's target is a working directory, and its disk says nothing
	// about the results.
	TouchesDisk bool
	// UncachedRandomReadP50Ns is the median latency of random reads that
	// bypassed the page cache (direct I/O), or 0 if none ran.
	UncachedRandomReadP50Ns int64
	// Seconds are the machine's seconds during the measured runs
	// (WatchStall), in any order.
	Seconds []metrics.EnvSecond
}

// Starved is one cell's evidence of CPU starvation.
type Starved struct {
	Cell               string
	RateCV, CPUPerOpCV float64
}

// A spinning disk needs several milliseconds for a random read (seek plus
// half a rotation: about 8 ms at 7200 rpm, 3.5 ms at 15k rpm).
const spinningReadFloorNs = 2e6

// Warnings lists what in the snapshots (taken before and after rounds, in
// time order) can make results noisy or unrepresentative.
func Warnings(snaps []Snapshot, ev Evidence) []stats.Warning {
	if len(snaps) == 0 {
		return nil
	}
	var ws []stats.Warning
	add := func(code, format string, args ...any) {
		ws = append(ws, stats.Warning{Code: code, Message: fmt.Sprintf(format, args...)})
	}
	first, last := snaps[0], snaps[len(snaps)-1]
	if t := first.Target; t != nil && ev.TouchesDisk {
		if t.Rotational != nil && *t.Rotational {
			msg := fmt.Sprintf("the target's device %s reports rotational=1 (a spinning disk, slow at random I/O and slower on inner tracks)", t.Device)
			if p := ev.UncachedRandomReadP50Ns; p > 0 && p < spinningReadFloorNs {
				msg += fmt.Sprintf("; but direct random reads took %.0f µs at the median, less than the milliseconds one random read takes on a spinning disk, so the flag is probably wrong, as it often is in VMs", float64(p)/1e3)
			} else if p >= spinningReadFloorNs {
				msg += fmt.Sprintf("; direct random reads took %.1f ms at the median, which agrees", float64(p)/1e6)
			} else {
				msg += "; VM disks often report 1 wrongly: run a direct random read (--rw randread --direct 1) to tell"
			}
			add("rotational-disk", "%s", msg)
		}
		if t.FSType == "tmpfs" || t.FSType == "ramfs" {
			add("tmpfs-target", "the target %s is on %s: results measure memory and the page cache, not storage, and swing with memory pressure", t.Path, t.FSType)
		}
		if kind := networkFS(t.FSType); kind != "" {
			add("network-target", "the target %s is on %s (%s at %s): the network and the server are in every number; O_DIRECT may be ignored "+
				"or emulated, and close() may wait for the server (close-to-open consistency)", t.Path, t.FSType, kind, t.Source)
		}
	}
	for _, s := range snaps {
		if s.Governor != "" && s.Governor != "performance" {
			add("cpu-governor", "CPU frequency governor is %q, not \"performance\": clock speed changes with load and adds noise", s.Governor)
			break
		}
	}
	// Each names the worst moment and how often it happened, not the
	// first.
	if w, n := worst(snaps, func(s Snapshot) float64 { return s.Load1 / float64(max(s.CPUs, 1)) }, func(s Snapshot) bool { return s.CPUs > 0 && s.Load1 > float64(s.CPUs) }); n > 0 {
		add("load-above-cores", "load average exceeded the CPUs in %d of %d snapshots, at worst %.1f on %d CPUs at %s: other work competed with the benchmark",
			n, len(snaps), w.Load1, w.CPUs, w.TakenAt.Format("15:04:05"))
	}
	if w, n := worst(snaps, func(s Snapshot) float64 { return s.PressureCPU }, func(s Snapshot) bool { return s.PressureCPU > cpuPressure }); n > 0 {
		msg := fmt.Sprintf("CPU pressure in %d of %d snapshots, at worst PSI cpu some avg10 %.0f%% at %s (load %.1f on %d CPUs): runnable work, the benchmark's own threads included, waited for a CPU",
			n, len(snaps), w.PressureCPU, w.TakenAt.Format("15:04:05"), w.Load1, w.CPUs)
		for _, st := range ev.Starved {
			msg += fmt.Sprintf("; %s's throughput varied by %.0f%% while its CPU per operation varied by %.0f%%: the benchmark was starved of CPU, the target did not drift",
				st.Cell, 100*st.RateCV, 100*st.CPUPerOpCV)
		}
		add("cpu-pressure", "%s%s; rerun on a quiet machine", msg, alsoDuringRuns(ev.Seconds, cpuSecond, "a CPU", cpuPressure))
	} else if n, _ := stalledSeconds(ev.Seconds, cpuSecond, cpuPressure); n > 0 && n*10 >= len(ev.Seconds) {
		add("cpu-pressure", "CPU pressure: %s; runnable work, the benchmark's own threads included, waited for a CPU; rerun on a quiet machine",
			duringRuns(ev.Seconds, cpuSecond, "a CPU", cpuPressure))
	}
	lowMem := func(s Snapshot) bool { return s.MemTotalBytes > 0 && s.MemAvailableBytes < s.MemTotalBytes/10 }
	if w, n := worst(snaps, func(s Snapshot) float64 {
		return s.PressureMemory - float64(s.MemAvailableBytes)/float64(max(s.MemTotalBytes, 1))
	}, func(s Snapshot) bool { return s.PressureMemory > 1 || lowMem(s) }); n > 0 {
		add("memory-pressure", "memory pressure in %d of %d snapshots, at worst at %s: PSI memory some avg10 %.1f%%, %d MiB available of %d MiB%s; the page cache is being squeezed",
			n, len(snaps), w.TakenAt.Format("15:04:05"), w.PressureMemory, w.MemAvailableBytes>>20, w.MemTotalBytes>>20,
			alsoDuringRuns(ev.Seconds, memorySecond, "memory", memoryPressure))
	} else if n, _ := stalledSeconds(ev.Seconds, memorySecond, memoryPressure); n > 0 && n*10 >= len(ev.Seconds) {
		add("memory-pressure", "memory pressure: %s; the page cache is being squeezed", duringRuns(ev.Seconds, memorySecond, "memory", memoryPressure))
	}
	// A disk workload makes its own I/O pressure; for any other, pressure
	// is other work's I/O.
	if w, n := worst(snaps, func(s Snapshot) float64 { return s.PressureIO }, func(s Snapshot) bool { return s.PressureIO > ioPressure }); n > 0 && !ev.TouchesDisk {
		add("io-pressure", "I/O pressure in %d of %d snapshots, at worst PSI io some avg10 %.0f%% at %s%s: tasks waited for storage the workload does not use; other I/O competed",
			n, len(snaps), w.PressureIO, w.TakenAt.Format("15:04:05"), alsoDuringRuns(ev.Seconds, ioSecond, "I/O", ioPressure))
	} else if n, _ := stalledSeconds(ev.Seconds, ioSecond, ioPressure); n > 0 && n*10 >= len(ev.Seconds) && !ev.TouchesDisk {
		add("io-pressure", "I/O pressure: %s; tasks waited for storage the workload does not use: other I/O competed", duringRuns(ev.Seconds, ioSecond, "I/O", ioPressure))
	}
	if d := (last.SwapIns + last.SwapOuts) - (first.SwapIns + first.SwapOuts); d > 0 {
		add("swap-activity", "%d pages were swapped in or out during the experiment", d)
	}
	if d := last.ThrottleCount - first.ThrottleCount; d > 0 {
		add("thermal-throttle", "CPU thermal throttle counters rose by %d during the experiment: the CPU slowed itself down", d)
	}
	return ws
}

// PSI "some" avg10 percentages above which a snapshot counts as under
// pressure: a tenth of the time with a task waiting for the CPU, a
// quarter waiting for I/O.
const (
	cpuPressure    = 10
	ioPressure     = 25
	memoryPressure = 1
)

// The share of a second, in percent, in which something waited.
func cpuSecond(s metrics.EnvSecond) float64    { return 100 * s.CPUStall }
func memorySecond(s metrics.EnvSecond) float64 { return 100 * s.MemoryStall }
func ioSecond(s metrics.EnvSecond) float64     { return 100 * s.IOStall }

// stalledSeconds counts the seconds whose share (percent) is above
// limit, and returns the worst second.
func stalledSeconds(secs []metrics.EnvSecond, share func(metrics.EnvSecond) float64, limit float64) (int, metrics.EnvSecond) {
	var w metrics.EnvSecond
	n := 0
	for _, s := range secs {
		if share(s) > limit {
			n++
		}
		if share(s) > share(w) {
			w = s
		}
	}
	return n, w
}

// duringRuns says what the runs' seconds saw of a resource: how many
// seconds were above limit, and the worst one and when.
func duringRuns(secs []metrics.EnvSecond, share func(metrics.EnvSecond) float64, what string, limit float64) string {
	n, w := stalledSeconds(secs, share, limit)
	if len(secs) == 0 || w.T == 0 {
		return ""
	}
	return fmt.Sprintf("some task waited for %s over %.0f%% of the time in %d of the runs' %d seconds, at worst %.0f%% in the second at %s",
		what, limit, n, len(secs), share(w), time.Unix(w.T, 0).Format("15:04:05"))
}

// alsoDuringRuns is duringRuns added to what the snapshots saw.
func alsoDuringRuns(secs []metrics.EnvSecond, share func(metrics.EnvSecond) float64, what string, limit float64) string {
	if d := duringRuns(secs, share, what, limit); d != "" {
		return "; " + d
	}
	return ""
}

// worst returns the snapshot where bad is highest among those where hit
// holds, and how many those are.
func worst(snaps []Snapshot, bad func(Snapshot) float64, hit func(Snapshot) bool) (Snapshot, int) {
	var w Snapshot
	n := 0
	for _, s := range snaps {
		if !hit(s) {
			continue
		}
		if n == 0 || bad(s) > bad(w) {
			w = s
		}
		n++
	}
	return w, n
}

// networkFS says what kind of remote filesystem fstype is ("" for a local
// one): NFS, SMB, a cluster filesystem, or FUSE (often remote).
func networkFS(fstype string) string {
	switch {
	case fstype == "nfs" || fstype == "nfs4":
		return "NFS"
	case fstype == "cifs" || fstype == "smb3" || fstype == "smbfs":
		return "SMB"
	case fstype == "ceph" || fstype == "glusterfs" || fstype == "lustre" || fstype == "gpfs" || fstype == "beegfs" || fstype == "9p":
		return "a network filesystem"
	case strings.HasPrefix(fstype, "fuse"):
		return "FUSE, often remote"
	}
	return ""
}
