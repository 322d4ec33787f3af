package stats

import "strings"

// Metric says how to read one metric: which way is better, and whether
// zero is an ordinary value of it (a count of late frames, bytes a server
// wrote), which a ratio cannot carry: such metrics are compared by their
// difference.
type Metric struct {
	LowerIsBetter bool
	// Zeroable metrics are compared by paired differences, keeping every
	// round; the others by paired log ratios.
	Zeroable bool
}

var (
	higher   = Metric{}
	lower    = Metric{LowerIsBetter: true}
	fewer    = Metric{LowerIsBetter: true, Zeroable: true}
	moreOrNo = Metric{Zeroable: true}
)

// metricTable is every metric iolab compares, by its name without an
// operation's prefix ("read.", "put."). A metric not listed is not
// compared: guessing its direction from its name once made twice the late
// frames "faster".
var metricTable = map[string]Metric{
	// Rates.
	"ops_per_s": higher, "bytes_per_s": higher, "items_per_s": higher, "frames_fps": higher,
	// Latencies and times.
	"lat_p50_ns": lower, "lat_p99_ns": lower, "ttfb_p50_ns": lower, "ttfb_p99_ns": lower,
	"frames_worst_late_ns": fewer, "wall_s": lower, "user_s": lower, "sys_s": lower, "cpu_s": lower,
	"cpu_us_per_op": lower,
	// Memory.
	"max_rss_bytes": lower, "server_rss_peak_bytes": lower, "cgroup_memory_peak_bytes": lower,
	// The server's use, which may be nothing.
	"server_cpu_s": fewer, "server_read_bytes": fewer, "server_write_bytes": fewer,
	"server_cpu_us_per_op": fewer, "server_cpu_ns_per_byte": fewer,
	"server_threads_max": lower, "server_fds_max": lower,
	"cgroup_cpu_s": fewer, "cgroup_throttled_s": fewer, "cgroup_oom_kills": fewer,
	// Counts of things that went wrong.
	"frames_late": fewer, "frames_dropped": fewer, "late_starts": fewer,
	"verify_mismatched": fewer, "verify_missing": fewer, "connections_opened": fewer,
	// Counts of things done.
	"frames_done": moreOrNo, "verify_checked": moreOrNo,
}

// Describe says how to read metric, and whether it is one iolab knows.
func Describe(metric string) (Metric, bool) {
	if m, ok := metricTable[metric]; ok {
		return m, true
	}
	if _, name, ok := strings.Cut(metric, "."); ok {
		m, ok := metricTable[name]
		return m, ok
	}
	return Metric{}, false
}

// LowerIsBetter says a known metric's direction (false for one not known).
func LowerIsBetter(metric string) bool {
	m, _ := Describe(metric)
	return m.LowerIsBetter
}
