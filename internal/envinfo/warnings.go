package envinfo

import (
	"fmt"

	"github.com/iolab/iolab/internal/stats"
)

// Evidence is what the runs measured that helps judge the environment.
type Evidence struct {
	// TouchesDisk is set when a workload did I/O on the target's
	// filesystem (fs, frames): only then do the target's device and
	// filesystem matter. A cmd, http or s3 workload's target is a working
	// directory, and its disk says nothing about the results.
	TouchesDisk bool
	// UncachedRandomReadP50Ns is the median latency of random reads that
	// bypassed the page cache (direct I/O), or 0 if none ran.
	UncachedRandomReadP50Ns int64
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
	}
	for _, s := range snaps {
		if s.Governor != "" && s.Governor != "performance" {
			add("cpu-governor", "CPU frequency governor is %q, not \"performance\": clock speed changes with load and adds noise", s.Governor)
			break
		}
	}
	for _, s := range snaps {
		if s.CPUs > 0 && s.Load1 > float64(s.CPUs) {
			add("load-above-cores", "load average %.1f exceeded the %d CPUs at %s: other work competed with the benchmark", s.Load1, s.CPUs, s.TakenAt.Format("15:04:05"))
			break
		}
	}
	for _, s := range snaps {
		lowMem := s.MemTotalBytes > 0 && s.MemAvailableBytes < s.MemTotalBytes/10
		if s.PressureMemory > 1 || lowMem {
			add("memory-pressure", "memory pressure at %s: PSI memory some avg10 %.1f%%, %d MiB available of %d MiB; the page cache is being squeezed",
				s.TakenAt.Format("15:04:05"), s.PressureMemory, s.MemAvailableBytes>>20, s.MemTotalBytes>>20)
			break
		}
	}
	if d := (last.SwapIns + last.SwapOuts) - (first.SwapIns + first.SwapOuts); d > 0 {
		add("swap-activity", "%d pages were swapped in or out during the experiment", d)
	}
	if d := last.ThrottleCount - first.ThrottleCount; d > 0 {
		add("thermal-throttle", "CPU thermal throttle counters rose by %d during the experiment: the CPU slowed itself down", d)
	}
	return ws
}
