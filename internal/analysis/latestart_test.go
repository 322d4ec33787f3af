package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/store"
)

// A paced cell whose operations started late is named, and so is what fell
// behind: iolab when it used most of the CPUs (saturated), when its
// threads waited for a CPU or its free workers started late (starved),
// the cap on workers when every one allowed was at work, else the target.
func TestLateStartsNameWhoFellBehind(t *testing.T) {
	t.Parallel()
	run := func(late, ops int64, cpuS float64, extra map[string]float64) store.Run {
		res := &metrics.Result{Duration: time.Second, CPUUserS: cpuS, Extra: map[string]float64{"late_starts": float64(late)}}
		for k, v := range extra {
			res.Extra[k] = v
		}
		lat := metrics.NewHistogram()
		metrics.RecordLatencyN(lat, 5e6, ops) // 5 ms each
		res.ByOp[metrics.Get] = metrics.OpStats{Ops: ops, Lat: lat}
		return store.Run{Status: store.StatusOK, Result: res}
	}
	lagged := func(r store.Run, lagNs int64) store.Run {
		lag := metrics.NewHistogram()
		metrics.RecordLatencyN(lag, lagNs, r.Result.ByOp[metrics.Get].Ops)
		ds := r.Result.ByOp[metrics.Get]
		ds.StartLag = lag
		r.Result.ByOp[metrics.Get] = ds
		return r
	}
	for _, c := range []struct {
		name  string
		runs  []store.Run
		code  string
		start string
	}{
		{"iolab-bound", []store.Run{run(300, 1000, 1.9, nil), run(280, 1000, 1.8, nil)}, BehindSaturated,
			"iolab-bound: 29% of operations started late while iolab itself used 1.9 of the 2 CPUs"},
		{"starved", []store.Run{run(300, 1000, 0.3, map[string]float64{"gen_cpu_wait_s": 0.9, "env_cpu_stall": 0.95}),
			run(280, 1000, 0.3, map[string]float64{"gen_cpu_wait_s": 0.8, "env_cpu_stall": 0.9})}, BehindStarved,
			"starved: 29% of operations started late; its threads waited for a CPU 74% of the time they were ready to run (850µs per operation), while it used 0.3 of 2 CPUs: iolab was starved of CPU by other work; something waited for a CPU 92% of the time on the machine"},
		// A light client (0.1 CPU) waiting for a CPU 0.8 ms an operation,
		// 16% of its 5 ms: ready on under half the CPUs, still its own
		// delay, as the generator-delayed flag says of the same runs.
		{"light-client", []store.Run{run(300, 1000, 0.1, map[string]float64{"gen_cpu_wait_s": 0.8}), run(280, 1000, 0.1, map[string]float64{"gen_cpu_wait_s": 0.8})}, BehindStarved,
			"light-client: 29% of operations started late; its threads waited for a CPU 89% of the time they were ready to run (800µs per operation), while it used 0.1 of 2 CPUs: iolab was starved"},
		// The same client beside a target that stalled: starts 300 ms late
		// on average, far past its 0.8 ms: the target.
		{"stalled-target", []store.Run{lagged(run(300, 1000, 0.1, map[string]float64{"gen_cpu_wait_s": 0.8}), 300e6), lagged(run(280, 1000, 0.1, map[string]float64{"gen_cpu_wait_s": 0.8}), 300e6)}, BehindTarget,
			"stalled-target: 29% of operations started late (iolab used 0.1 of 2 CPUs, its threads waited for a CPU 89% of the time they were ready to run (800µs per operation)): the target"},
		{"woke-late", []store.Run{run(300, 1000, 0.2, map[string]float64{"gen_late_starts": 250}), run(280, 1000, 0.2, map[string]float64{"gen_late_starts": 240})}, BehindStarved,
			"woke-late: 29% of operations started late, 24% by iolab's own delay (a free worker that started late), while it used 0.2 of 2 CPUs: iolab was starved"},
		{"capped", []store.Run{run(300, 1000, 0.1, map[string]float64{"workers_peak": 64, "workers_cap": 64, "gen_cpu_wait_s": 0.001}),
			run(280, 1000, 0.1, map[string]float64{"workers_peak": 64, "workers_cap": 64, "gen_cpu_wait_s": 0.001})}, BehindCap,
			"capped: 29% of operations started late with all 64 workers --max-concurrency allows at work: the cap held the schedule back; raise --max-concurrency"},
		{"target-bound", []store.Run{run(300, 1000, 0.1, map[string]float64{"workers_peak": 30, "workers_cap": 64}), run(280, 1000, 0.1, nil)}, BehindTarget,
			"target-bound: 29% of operations started late (iolab used 0.1 of 2 CPUs): the target, at this concurrency, did not keep the schedule"},
		// Wakes of an idle client wait a little for a CPU (a large share
		// of its little time ready to run): nothing next to 5 ms.
		{"quiet-client", []store.Run{run(300, 1000, 0.03, map[string]float64{"gen_cpu_wait_s": 0.05}), run(280, 1000, 0.03, map[string]float64{"gen_cpu_wait_s": 0.05})}, BehindTarget,
			"quiet-client: 29% of operations started late (iolab used 0.0 of 2 CPUs, its threads waited for a CPU 62% of the time they were ready to run (50µs per operation)): the target"},
		{"on-time", []store.Run{run(10, 1000, 1.9, nil), run(12, 1000, 1.9, nil)}, "", ""},
	} {
		ws := lateStartWarnings(derivedMetrics{}, []store.Cell{{Name: c.name}}, [][]store.Run{c.runs}, 2)
		switch {
		case c.code == "" && len(ws) != 0:
			t.Errorf("%s: %+v, want nothing", c.name, ws)
		case c.code != "" && (len(ws) != 1 || ws[0].Code != c.code || !strings.HasPrefix(ws[0].Message, c.start)):
			t.Errorf("%s: %+v\nwant %s: %s", c.name, ws, c.code, c.start)
		}
	}
}

// Runs whose own delay passed its share of the service time are named,
// round and slot; variants whose runs differ in it are said to differ in
// the client.
func TestGeneratorDelayFlagsRunsAndVariants(t *testing.T) {
	t.Parallel()
	run := func(round int, waitS float64) store.Run {
		res := &metrics.Result{Duration: time.Second, CPUUserS: 0.1, Extra: map[string]float64{"gen_cpu_wait_s": waitS}}
		lat := metrics.NewHistogram()
		metrics.RecordLatencyN(lat, 1e6, 1000) // 1 ms each: 100 µs of wait per operation is 10%
		res.ByOp[metrics.Read] = metrics.OpStats{Ops: 1000, Lat: lat}
		return store.Run{Round: round, Status: store.StatusOK, Result: res}
	}
	cells := []store.Cell{{Name: "c", Variant: "a"}, {Name: "c", Variant: "b"}}
	perCell := [][]store.Run{
		{run(0, 0.01), run(1, 0.5), run(2, 0.02)}, // 10, 500, 20 µs per op (1%, 50%, 2%): round 1 hit
		{run(0, 0.3), run(1, 0.4), run(2, 0.35)},  // 30-40%
	}
	ws := genDelayWarnings(derivedMetrics{}, cells, perCell, 2)
	if len(ws) != 2 || !strings.Contains(ws[0].Message, "a/c: in 1 of 3 runs") || !strings.Contains(ws[0].Message, "round 1 slot 0 (50%)") ||
		!strings.Contains(ws[1].Message, "b/c: in 3 of 3 runs") {
		t.Errorf("%+v", ws)
	}
	ds := genDelayDiffers(derivedMetrics{}, cells, perCell)
	if len(ds) != 1 || ds[0].Code != "generator-differs" || !strings.Contains(ds[0].Message, "35% of the median measured in b's runs and 2% in a's") {
		t.Errorf("%+v", ds)
	}
	if ds := genDelayDiffers(derivedMetrics{}, cells, [][]store.Run{perCell[0][:1], perCell[0][2:]}); len(ds) != 0 {
		t.Errorf("alike variants: %+v", ds)
	}
	// A starved client's own queue swells what it measures (here 2 s a
	// request), so its delay is a small share of it; the run is flagged
	// for the CPUs it was ready to use and did not get.
	starved := run(0, 1.5)
	lat := metrics.NewHistogram()
	metrics.RecordLatencyN(lat, 2e9, 1000)
	starved.Result.ByOp[metrics.Read].Lat = lat
	if ws := genDelayWarnings(derivedMetrics{}, cells[:1], [][]store.Run{{starved}}, 2); len(ws) != 1 || !strings.Contains(ws[0].Message, "in 1 of 1 runs iolab was starved") {
		t.Errorf("a starved run: %+v", ws)
	}
	if ws := genDelayWarnings(derivedMetrics{}, cells[:1], [][]store.Run{{starved}}, 4); len(ws) != 0 {
		t.Errorf("ready on 1.6 of 4 CPUs is not starved: %+v", ws)
	}
}
