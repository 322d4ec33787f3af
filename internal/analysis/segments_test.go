package analysis

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/store"
)

// Two segments' derived figures merge as what they measure: counts and
// rates add up, peaks and the worst take the larger, a frame test passes
// only if both did, a success rate is recomputed from the counts, and
// percentiles are not made up from percentiles.
func TestMergeResultsExtra(t *testing.T) {
	t.Parallel()
	at := time.Unix(1_800_000_000, 0)
	a := &metrics.Result{Start: at, Duration: time.Second, Extra: map[string]float64{"frames_done": 90, "frames_failed": 10, "frames_pass": 1,
		"frames_target_fps": 24, "frames_worst_late_ns": 5e6, "frames_success_pct": 90, "env_cpu_stall_peak": 0.2, "verify_checked": 5,
		"list_keys_per_s": 100, "get.lat_p99_ns": 7},
		Frames: []metrics.FrameTiming{{Frame: 0, Pos: 0}, {Frame: 2, Pos: 2}}}
	b := &metrics.Result{Start: at, Duration: time.Second, Extra: map[string]float64{"frames_done": 100, "frames_failed": 0, "frames_pass": 0,
		"frames_target_fps": 24, "frames_worst_late_ns": 9e6, "frames_success_pct": 100, "env_cpu_stall_peak": 0.1, "verify_checked": 7,
		"list_keys_per_s": 50, "get.lat_p99_ns": 3},
		Frames: []metrics.FrameTiming{{Frame: 1, Pos: 1}, {Frame: 3, Pos: 3}}}
	m := metrics.MergeTogether([]*metrics.Result{a, b})
	want := map[string]float64{"frames_done": 190, "frames_failed": 10, "frames_pass": 0, "frames_target_fps": 24, "frames_worst_late_ns": 9e6,
		"frames_success_pct": 100 * 190.0 / 200, "env_cpu_stall_peak": 0.2, "verify_checked": 12, "list_keys_per_s": 150}
	for k, v := range want {
		if m.Extra[k] != v {
			t.Errorf("%s: %g, want %g", k, m.Extra[k], v)
		}
	}
	if _, ok := m.Extra["get.lat_p99_ns"]; ok {
		t.Errorf("a percentile made of percentiles: %g", m.Extra["get.lat_p99_ns"])
	}
	for i, f := range m.Frames {
		if f.Pos != i || f.Frame != i {
			t.Fatalf("frames in play order: %+v", m.Frames)
		}
	}
}

// A run's p99 (a segment's figures read thousands) is the p99 over all its
// operations, whether one kind ran or several.
func TestRunP99(t *testing.T) {
	t.Parallel()
	get, put := metrics.NewHistogram(), metrics.NewHistogram()
	for i := range 1000 {
		metrics.RecordLatencyN(get, int64(1000+i), 1)
		metrics.RecordLatencyN(put, int64(1_000_000+1000*i), 1)
	}
	var one, two metrics.Result
	one.ByOp[metrics.Get].Lat = get
	two.ByOp[metrics.Get].Lat, two.ByOp[metrics.Put].Lat = get, put
	both := metrics.NewHistogram()
	both.Merge(get)
	both.Merge(put)
	runP99 := func(res *metrics.Result) (float64, bool) {
		lat, _ := mergedLatency(res)
		if lat == nil {
			return 0, false
		}
		return float64(lat.P99), true
	}
	if v, ok := runP99(&one); !ok || v != float64(get.ValueAtQuantile(99)) {
		t.Errorf("one kind: %g", v)
	}
	if v, ok := runP99(&two); !ok || v != float64(both.ValueAtQuantile(99)) || v < 1_900_000 {
		t.Errorf("two kinds: %g, want %d", v, both.ValueAtQuantile(99))
	}
	if _, ok := runP99(&metrics.Result{}); ok {
		t.Error("a p99 of nothing")
	}
}

// A merged run whose segments started apart (one redone alone after its
// runner died) is partial, naming them; one started together (within the
// barrier's slack) is the load's.
func TestMergeMisalignedRun(t *testing.T) {
	t.Parallel()
	at := time.Unix(1_800_000_000, 0)
	seg := func(i int, start time.Time) *store.Data {
		d := &store.Data{Experiment: store.Experiment{ID: fmt.Sprint("e", i), SegmentGroup: "g", Segment: fmt.Sprintf("%d/2", i), Status: "done"},
			Cells: []store.Cell{{ID: int64(10 + i), Index: 0, Name: "c"}}}
		for round, off := range []time.Duration{0, 20 * time.Second} {
			res := &metrics.Result{Start: start.Add(off), Duration: 10 * time.Second}
			res.ByOp[metrics.Read] = metrics.OpStats{Ops: 100}
			d.Runs = append(d.Runs, store.Run{ID: int64(100*i + round), CellID: int64(10 + i), Round: round, Status: store.StatusOK, Result: res})
		}
		return d
	}
	// Round 0 together (0.3 s apart); round 1 of segment 1 redone 4.5 s late.
	a, b := seg(0, at), seg(1, at.Add(300*time.Millisecond))
	b.Runs[1].Result.Start = b.Runs[1].Result.Start.Add(4200 * time.Millisecond)
	m, _, err := MergeSegments([]*store.Data{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if m.Runs[0].Status != store.StatusOK || m.Runs[0].Result.Ops() != 200 {
		t.Errorf("together: %s %q", m.Runs[0].Status, m.Runs[0].Error)
	}
	if m.Runs[1].Status != StatusPartial || !strings.Contains(m.Runs[1].Error, "started 4.5s apart (segment 0/2, segment 1/2)") {
		t.Errorf("apart: %s %q", m.Runs[1].Status, m.Runs[1].Error)
	}
}
