package analysis

import (
	"encoding/json"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
)

// A search is replayed from its stored runs, in their order, through the
// search that chose their loads, and its view says only what the runs
// showed: the rate it held at, the lowest it failed at, the lowest left
// undecided above the held one; which loads ran with every worker at the
// cap; how few operations a load's runs held. A run whose operations were
// cut (failed, with errors) fails its load.
func TestSearchReplayedFromStoredRuns(t *testing.T) {
	t.Parallel()
	o := plan.SLO{Metric: "download.response_p50_ns", Below: 100e6, BelowText: "100ms", Precision: 0.05}
	slo := map[string]string{plan.LoadParam: plan.LoadSLO}
	maps.Copy(slo, o.Params(3))
	d := &store.Data{Experiment: store.Experiment{ID: "e", Status: "done"}, Cells: []store.Cell{
		{ID: 1, Name: "get load=slo", Workload: "http", Params: slo},
		{ID: 2, Name: "get load=max", Workload: "http", Params: map[string]string{plan.LoadParam: plan.LoadMax}},
	}}
	run := func(cell int64, round int, m map[string]float64, ops int64, status string) {
		res := &metrics.Result{Start: time.Now(), Duration: time.Second, Derived: m}
		res.ByOp[metrics.Download] = metrics.OpStats{Ops: ops}
		if status == store.StatusFailed {
			res.Errors = 2
		}
		d.Runs = append(d.Runs, store.Run{ID: int64(len(d.Runs) + 1), CellID: cell, Round: round, Status: status, Warmup: round == store.CalibrationRound, Result: res})
	}
	run(2, store.CalibrationRound, map[string]float64{"ops_per_s": 100}, 100, store.StatusOK)
	// (share of 100/s) p50s in ms of its three runs:
	steps := []struct {
		p50    []float64
		capped bool
		cut    bool
	}{
		{p50: []float64{10, 11, 12}},                // 62.5%: holds
		{p50: []float64{300}, cut: true},            // 125%: a run's operations cut at the grace: fails
		{p50: []float64{90, 120, 60}, capped: true}, // 93.75%: undecided, every worker busy
		{p50: []float64{20, 21, 22}},                // 78.1%: holds
		{p50: []float64{30, 31, 32}},                // 85.9%: holds
		{p50: []float64{40, 41, 42}},                // 89.8%: holds, within 5% of 93.75%: done
	}
	round := 0
	for _, st := range steps {
		for _, p := range st.p50 {
			m := map[string]float64{"ops_per_s": 50, o.Metric: p * 1e6, "workers_peak": 2, "workers_cap": 4}
			if st.capped {
				m["workers_peak"] = 4
			}
			status := store.StatusOK
			if st.cut {
				status = store.StatusFailed
			}
			run(1, round, m, 20, status)
			round++
		}
	}
	r := Build(d, Options{})
	if len(r.SLOs) != 1 {
		t.Fatalf("searches %+v", r.SLOs)
	}
	v := r.SLOs[0]
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !v.Done || !v.Bounded || !near(v.Held, 89.84375) || !near(v.Failed, 125) || !near(v.Undecided, 93.75) || v.Runs != 16 || v.MinOps != 20 {
		t.Fatalf("view %+v", v)
	}
	b, err := json.Marshal(v)
	if err != nil || !strings.Contains(string(b), `"ratio":null,"ci95":[null,null],"failed":true,"offered_ops_per_s":125,`) {
		t.Errorf("the failed step in JSON (which has no NaN): %v\n%s", err, b)
	}
	want := []string{stats.Holds, stats.Fails, stats.Undecided, stats.Holds, stats.Holds, stats.Holds}
	for i, st := range v.Steps {
		if st.Verdict != want[i] || st.Capped != (i == 2) || st.FewestOps != 20 || st.Failed != (i == 1) {
			t.Errorf("step %d: %+v, want %s (capped %v)", i, st, want[i], i == 2)
		}
	}
}
