package plan

import "testing"

// A run judged by a percentile must hold 10/(1−q) operations for it to be
// more than its largest few; a metric of no percentile needs none.
func TestSLOMinOps(t *testing.T) {
	t.Parallel()
	for metric, want := range map[string]int64{"get.response_p99_ns": 1000, "download.response_p50_ns": 20, "read.lat_p99.9_ns": 10000,
		"put.lat_p90_ns": 100, "ops_per_s": 0, "cpu_per_op": 0, "x.lat_p100_ns": 0} {
		if got := (SLO{Metric: metric}).MinOps(); got != want {
			t.Errorf("%s: %d, want %d", metric, got, want)
		}
	}
}
