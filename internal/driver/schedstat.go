package driver

import (
	"bytes"
	"os"
	"strconv"
)

// cpuWait is how long the process's threads have waited for a CPU while
// ready to run, in seconds, summed over the threads alive now (the
// second field of /proc/self/task/*/schedstat: run-queue wait, counted
// by every kernel built with CONFIG_SCHED_INFO, which schedstats and
// delay accounting select). It says false where there is no such count
// (no schedstat files, or none that has counted a thread's time run), so
// that nobody reads a zero as "never waited".
func cpuWait() (float64, bool) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, false
	}
	var ranNs, waitNs int64
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited
		}
		f := bytes.Fields(b)
		if len(f) < 2 {
			continue
		}
		ran, _ := strconv.ParseInt(string(f[0]), 10, 64)
		wait, _ := strconv.ParseInt(string(f[1]), 10, 64)
		ranNs, waitNs = ranNs+ran, waitNs+wait
	}
	return float64(waitNs) / 1e9, ranNs > 0
}

// threadWaitNs is the calling thread's wait for a CPU so far (ns).
func threadWaitNs() (int64, bool) {
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	ns, err := strconv.ParseInt(string(f[1]), 10, 64)
	return ns, err == nil
}

// CPUWaitCounted says whether this kernel counts the time threads wait
// for a CPU (what the generator's gen_cpu_wait figures come from).
func CPUWaitCounted() bool {
	_, ok := cpuWait()
	return ok
}
