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

// A search replays through the search its cell was stored with: today's,
// which widens its range, or — for a cell stored before it (no slo_walk) —
// the bisection under a fixed top in at most 8 loads.
func TestSearchOfAStoredCell(t *testing.T) {
	t.Parallel()
	o := SLO{Metric: "get.response_p99_ns", Below: 2e7, BelowText: "20ms", Precision: 0.05}
	params := o.Params(3)
	back, runs, ok := SLOOf(params)
	if s := back.NewSearch(runs); !ok || back.Fixed || !s.Widens || s.MaxSteps != SLOMaxSteps || runs != 3 {
		t.Errorf("today's: %+v, %d runs, widens %v, %d steps", back, runs, s.Widens, s.MaxSteps)
	}
	delete(params, "slo_walk")
	back, runs, ok = SLOOf(params)
	if s := back.NewSearch(runs); !ok || !back.Fixed || s.Widens || s.MaxSteps != 8 {
		t.Errorf("stored before: %+v, widens %v, %d steps", back, s.Widens, s.MaxSteps)
	}
}
