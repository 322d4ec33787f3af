package analysis

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/analysis/analysistest"
	"github.com/iolab/iolab/internal/envinfo"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"

	_ "github.com/iolab/iolab/internal/cgroup"  // declares the cgroup_ metrics
	_ "github.com/iolab/iolab/internal/observe" // declares the server_ metrics
	_ "github.com/iolab/iolab/internal/workload/all"
)

func TestBuildLeavesWarmupAndFailedRunsOut(t *testing.T) {
	r := Build(analysistest.Experiment(), Options{})
	s := r.Summary["ops_per_s"]
	if s.N != 6 || s.Median != 9975 {
		t.Fatalf("summary %+v: want the 6 ok measured runs, median 9975", s)
	}
	codes := map[string]bool{}
	for _, w := range r.Warnings {
		codes[w.Code] = true
	}
	for _, want := range []string{"first-run-outlier", "high-cv", "errors", "failed-runs", "rotational-disk"} {
		if !codes[want] {
			t.Errorf("no %s warning in %+v", want, r.Warnings)
		}
	}
	if codes["too-few-runs"] {
		t.Error("too-few-runs with 6 runs")
	}
}

// The server's figures are compared between variants like the client's;
// a figure that is zero on both sides (a server that wrote nothing) is
// not a comparison.
func TestServerMetricsCompared(t *testing.T) {
	d := &store.Data{Experiment: store.Experiment{ID: "x"},
		Cells: []store.Cell{{ID: 1, Name: "up", Variant: "a", Workload: "http"}, {ID: 2, Name: "up", Variant: "b", Workload: "http"}}}
	for round := 0; round < 6; round++ {
		for cell, rss := range map[int64]float64{1: 100 << 20, 2: 200 << 20} {
			res := &metrics.Result{Duration: time.Second, Extra: map[string]float64{
				"server_cpu_s": 1 + 0.01*float64(round), "server_rss_peak_bytes": rss + float64(round<<10),
				"server_write_bytes": 0, "server_read_bytes": float64(cell) * 4096 * float64(round+1)}}
			res.ByOp[metrics.Upload] = metrics.OpStats{Ops: 10, Bytes: 10 << 20}
			d.Runs = append(d.Runs, store.Run{ID: int64(len(d.Runs) + 1), CellID: cell, Round: round, Slot: int(cell - 1), Status: store.StatusOK, Result: res})
		}
	}
	r := Build(d, Options{Baseline: "a"})
	got := map[string]string{}
	for _, c := range r.Comparisons {
		got[c.Metric] = c.Verdict
	}
	if got["server_rss_peak_bytes"] != "slower" || got["server_cpu_s"] == "" || got["server_read_bytes"] == "" {
		t.Errorf("comparisons %v: want the server's figures compared, twice the RSS slower", got)
	}
	if _, ok := got["server_write_bytes"]; ok {
		t.Errorf("server_write_bytes compared though zero on both sides: %v", got)
	}
}

// warmupData is an experiment of two variants over rounds whose ops/s
// is 1000 times factor(variant, round), with ±1% of noise.
func warmupData(rounds int, factor func(variant string, round int) float64) *store.Data {
	d := &store.Data{Experiment: store.Experiment{ID: "x"},
		Cells: []store.Cell{{ID: 1, Name: "c", Variant: "a", Workload: "fs"}, {ID: 2, Name: "c", Variant: "fresh", Workload: "fs"}}}
	for round := 0; round < rounds; round++ {
		for cell := int64(1); cell <= 2; cell++ {
			iops := 1000 * (1 + 0.01*float64((round*7+int(cell))%3-1)) * factor(d.Cells[cell-1].Variant, round)
			res := &metrics.Result{Duration: time.Second}
			res.ByOp[metrics.Read] = metrics.OpStats{Ops: int64(iops), Bytes: int64(iops) * 4096}
			d.Runs = append(d.Runs, store.Run{ID: int64(len(d.Runs) + 1), CellID: cell, Round: round, Slot: int(cell - 1), Status: store.StatusOK, Result: res})
		}
	}
	return d
}

func warningsOf(r *Report, code string) []string {
	var out []string
	for _, w := range r.Warnings {
		if w.Code == code {
			out = append(out, w.Message)
		}
	}
	return out
}

// A variant warming up over its first measured rounds has them left out
// of its comparisons, named; one still warming up when the rounds end
// has its verdicts withheld; a start every variant shares is the
// machine's, and nobody's rounds are cut for it.
func TestVariantWarmup(t *testing.T) {
	quick := warmupData(12, func(v string, round int) float64 {
		if v == "fresh" {
			return 1 / (1 + math.Exp(-float64(round))) // 1+e^-k slower at first
		}
		return 1
	})
	r := Build(quick, Options{Baseline: "a"})
	left := warningsOf(r, CodeWarmupLeftOut)
	if len(left) != 1 || !strings.Contains(left[0], "fresh/c: its first ") || !strings.Contains(left[0], "fresh was still warming up") {
		t.Errorf("left out: %q", left)
	}
	for _, c := range r.Comparisons {
		if c.WarmupCut < 3 || c.Verdict == stats.Faster || c.Verdict == stats.Slower || c.Withheld != "" {
			t.Errorf("%s: %d rounds cut, %s %q", c.Metric, c.WarmupCut, c.Verdict, c.Withheld)
		}
	}
	slow := warmupData(12, func(v string, round int) float64 {
		if v == "fresh" {
			return 1 / (1 + math.Exp(-float64(round+1)/4))
		}
		return 1
	})
	r = Build(slow, Options{Baseline: "a"})
	if still := warningsOf(r, stats.CodeVariantWarmup); len(still) != 1 || !strings.HasPrefix(still[0], "fresh/c ops_per_s: still warming up") {
		t.Errorf("still warming up: %q", still)
	}
	for _, c := range r.Comparisons {
		if c.Verdict != stats.Inconclusive || c.Withheld != stats.WithheldWarmingUp || c.OutgrewWarmup {
			t.Errorf("%s: %s %q, want withheld: the variant never settled", c.Metric, c.Verdict, c.Withheld)
		}
		// Undecided, so rounds are needed: not the 0 of a decided one.
		if c.RoundsNeeded <= c.N+c.WarmupCut {
			t.Errorf("%s withheld: %d rounds needed after %d", c.Metric, c.RoundsNeeded, c.N+c.WarmupCut)
		}
	}
	// The same warm-up in a variant ten times slower: no trend of that
	// size makes 10x, so the verdict stands, said so.
	tenfold := warmupData(12, func(v string, round int) float64 {
		if v == "fresh" {
			return 0.1 / (1 + math.Exp(-float64(round+1)/4))
		}
		return 1
	})
	r = Build(tenfold, Options{Baseline: "a"})
	if still := warningsOf(r, stats.CodeVariantWarmup); len(still) != 1 || !strings.Contains(still[0], "the verdict stands (slower)") {
		t.Errorf("still warming up, 10x slower: %q", still)
	}
	for _, c := range r.Comparisons {
		if c.Metric == "ops_per_s" && (c.Verdict != stats.Slower || c.Withheld != "" || !c.OutgrewWarmup || c.Ratio > 0.1) {
			t.Errorf("%s, 10x slower and still warming up: %s %q ratio %.3f", c.Metric, c.Verdict, c.Withheld, c.Ratio)
		}
	}
	// Faster, and still warming up from below: the settled level would
	// only widen the difference, so the verdict stands — and the warning
	// says so, not that the verdicts are withheld (an audit saw both).
	against := warmupData(12, func(v string, round int) float64 {
		if v == "fresh" {
			return 2 / (1 + math.Exp(-float64(round+1)/4))
		}
		return 1
	})
	r = Build(against, Options{Baseline: "a"})
	still := warningsOf(r, stats.CodeVariantWarmup)
	if len(still) != 1 || !strings.Contains(still[0], "the other way from the difference; the verdict stands (faster)") || strings.Contains(still[0], "withheld") {
		t.Errorf("still warming up against a faster verdict: %q", still)
	}
	for _, c := range r.Comparisons {
		if c.Metric == "ops_per_s" && (c.Verdict != stats.Faster || c.Withheld != "") {
			t.Errorf("%s, faster and warming up towards more: %s %q", c.Metric, c.Verdict, c.Withheld)
		}
	}
	machine := warmupData(12, func(_ string, round int) float64 { return 1 / (1 + 2*math.Exp(-float64(round))) })
	r = Build(machine, Options{Baseline: "a"})
	if m := warningsOf(r, CodeMachineWarmup); len(m) != 1 || len(warningsOf(r, CodeWarmupLeftOut)) > 0 || len(warningsOf(r, stats.CodeVariantWarmup)) > 0 {
		t.Errorf("a warm-up both variants shared: %q", r.Warnings)
	}
}

// Throughput that swings while the CPU per operation holds, under CPU
// pressure, is named CPU starvation, and the trend it makes is not blamed
// on the target.
func TestCPUStarvationIsNamed(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	d := &store.Data{Experiment: store.Experiment{ID: "x"}, Cells: []store.Cell{{ID: 1, Name: "frames-4k", Workload: "fs"}}}
	for i, pressure := range []float64{5, 83, 68, 20} {
		snap, _ := json.Marshal(envinfo.Snapshot{TakenAt: t0.Add(time.Duration(i) * time.Minute), CPUs: 2, Load1: 1 + pressure/20,
			PressureCPU: pressure, PressureMemory: -1, PressureIO: -1, MemTotalBytes: 8 << 30, MemAvailableBytes: 6 << 30})
		d.Env = append(d.Env, store.EnvSnapshot{Round: i, Phase: "before", TakenAt: t0, Snapshot: snap})
	}
	for round := 0; round < 8; round++ {
		ops := 1000 * (1 + 0.12*float64(round)) // doubling as the load fell
		res := &metrics.Result{Duration: time.Second, CPUUserS: ops * 50e-6, CPUSysS: 0}
		res.ByOp[metrics.Read] = metrics.OpStats{Ops: int64(ops), Bytes: int64(ops) * 4096}
		d.Runs = append(d.Runs, store.Run{ID: int64(round + 1), CellID: 1, Round: round, Status: store.StatusOK, Result: res})
	}
	r := Build(d, Options{})
	var pressure, trend string
	for _, w := range r.Warnings {
		switch w.Code {
		case "cpu-pressure":
			pressure = w.Message
		case stats.CodeTrend:
			trend = w.Message
		}
	}
	if !strings.Contains(pressure, "at worst PSI cpu some avg10 83%") || !strings.Contains(pressure, "frames-4k's throughput varied by") || !strings.Contains(pressure, "starved of CPU") {
		t.Errorf("cpu-pressure: %q", pressure)
	}
	if !strings.Contains(trend, "likelier cause is the benchmark starved of CPU") {
		t.Errorf("trend: %q", trend)
	}
}

// Run by run, throughput that falls as tasks wait longer for a CPU is
// named starvation, with the worst run; the same stall without that
// pattern is not.
func TestStallPerRunNamesStarvation(t *testing.T) {
	build := func(opsOf func(stall float64) float64) *Report {
		t0 := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
		d := &store.Data{Experiment: store.Experiment{ID: "x"}, Cells: []store.Cell{{ID: 1, Name: "up", Workload: "http"}}}
		for round, stall := range []float64{0.05, 0.6, 0.2, 0.8, 0.1, 0.4, 0.3, 0.7} {
			res := &metrics.Result{Start: t0.Add(time.Duration(round) * time.Minute), Duration: time.Second,
				Extra: map[string]float64{"env_cpu_stall": stall, "env_memory_stall": 0, "env_io_stall": 0}}
			// Its seconds: the worst one is a little worse than the run.
			res.EnvSeries = []metrics.EnvSecond{{T: res.Start.Unix() + 1, CPUStall: stall * 0.9}, {T: res.Start.Unix() + 2, CPUStall: stall * 1.1}}
			ops := opsOf(stall)
			res.ByOp[metrics.Upload] = metrics.OpStats{Ops: int64(ops), Bytes: int64(ops) << 20}
			d.Runs = append(d.Runs, store.Run{ID: int64(round + 1), CellID: 1, Round: round, Status: store.StatusOK, Result: res})
		}
		return Build(d, Options{})
	}
	find := func(r *Report) string {
		for _, w := range r.Warnings {
			if w.Code == "starved" {
				return w.Message
			}
		}
		return ""
	}
	starved := find(build(func(stall float64) float64 { return 1000 * (1 - stall/1.2) }))
	if !strings.HasPrefix(starved, "up bytes_per_s got worse as tasks waited longer for a CPU (Kendall tau -1.00") || !strings.Contains(starved, "waited for a CPU 80% of the time (its worst second, at "+time.Date(2026, 11, 22, 8, 3, 2, 0, time.UTC).Local().Format("15:04:05")+": 88%)") {
		t.Errorf("starved: %q", starved)
	}
	if w := find(build(func(stall float64) float64 { return 1000 + 10*math.Sin(7*stall) })); w != "" {
		t.Errorf("no pattern, yet: %q", w)
	}
}

// A variant whose measured runs all failed is compared as failed; one
// whose runs were only cut short (an interrupted experiment) has nothing
// to compare yet, and is not called failed.
func TestFailedVariantAgainstInterruptedOne(t *testing.T) {
	for status, want := range map[string]bool{store.StatusFailed: true, store.StatusInterrupted: false} {
		d := analysistest.TwoVariants()
		for i := range d.Runs {
			if d.Runs[i].CellID == 2 && !d.Runs[i].Warmup {
				d.Runs[i].Status = status
			}
		}
		r := Build(d, OptionsFor(store.PlanRecord{Baseline: "a"}))
		failed := false
		for _, c := range r.Comparisons {
			failed = failed || (c.Variant == "b" && c.Primary && c.Verdict == stats.Failed)
		}
		if failed != want {
			t.Errorf("b's runs all %s: compared as failed %v, want %v (%+v)", status, failed, want, r.Comparisons)
		}
	}
}

// Under a load above the CPUs, a duration the program printed waited for
// a CPU as wall time did: both fits say so, CPU time's does not; a figure
// of unknown unit gets the caveat as a condition, and a byte size or a
// count none (an audit saw it on both).
func TestLoadCaveatCoversPrintedDurations(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	d := &store.Data{Experiment: store.Experiment{ID: "x"}}
	for i, n := range []string{"1000", "10000", "100000"} {
		d.Cells = append(d.Cells, store.Cell{ID: int64(i + 1), Name: "sort lines=" + n, Workload: "cmd",
			Params: map[string]string{"scale_axis": "lines", "lines": n}})
	}
	for round := 0; round < 4; round++ {
		snap, _ := json.Marshal(envinfo.Snapshot{TakenAt: t0.Add(time.Duration(round) * time.Minute), CPUs: 2, Load1: 7,
			PressureCPU: -1, PressureMemory: -1, PressureIO: -1, MemTotalBytes: 8 << 30, MemAvailableBytes: 6 << 30})
		d.Env = append(d.Env, store.EnvSnapshot{Round: round, Phase: "before", TakenAt: t0, Snapshot: snap})
		for i := range d.Cells {
			n := math.Pow(10, float64(i+3))
			s := 0.01 + 1e-6*n*(1+0.02*float64(round%2))
			res := &metrics.Result{Duration: time.Duration(s * 1e9), CPUUserS: s, Extra: map[string]float64{"sort_s": s, "wall_s": s,
				"index_size": 4096 * n * (1 + 0.01*float64(round%2)), "merged": n * (1 + 0.01*float64(round%2)), "phase": s}}
			d.Runs = append(d.Runs, store.Run{ID: int64(len(d.Runs) + 1), CellID: int64(i + 1), Round: round, Status: store.StatusOK, Result: res})
		}
	}
	r := Build(d, Options{Custom: map[string]bool{"sort_s": true, "index_size": true, "merged": true, "phase": true},
		CustomUnits: map[string]string{"sort_s": "s", "index_size": "B", "merged": "count"}})
	caveat := map[string]string{}
	for _, v := range r.Scales {
		if v.Fit == nil {
			t.Fatalf("%s: %s", v.Metric, v.Error)
		}
		caveat[v.Metric] = ""
		for _, w := range v.Fit.Warnings {
			if strings.HasPrefix(w, "the load exceeded the CPUs") {
				caveat[v.Metric] = w
			}
		}
	}
	if !strings.Contains(caveat["wall_s"], "wall time includes waiting") || !strings.Contains(caveat["sort_s"], "sort_s, a duration read from the program's output, includes waiting for a CPU") ||
		!strings.Contains(caveat["phase"], "if phase, read from the program's output, is a duration") {
		t.Errorf("load caveats: %q", caveat)
	}
	for _, m := range []string{"index_size", "merged"} {
		if c, ok := caveat[m]; !ok || c != "" {
			t.Errorf("%s: fitted %v, caveat %q", m, ok, c)
		}
	}
	if c, ok := caveat["cpu_s"]; !ok || c != "" {
		t.Errorf("cpu_s: fitted %v, caveat %q", ok, c)
	}
}

// A drift over a cell's runs gets advice that fits how its rounds ran:
// interleaved variants drifted alike (their ratios cancel it), sequential
// ones did not (interleave them), and one variant alone has nothing to
// compare it with (the audit saw "compare only in interleaved rounds" on
// rounds that were).
func TestTrendAdviceFitsTheRounds(t *testing.T) {
	t.Parallel()
	build := func(variants []string, order string) string {
		d := &store.Data{Experiment: store.Experiment{ID: "x"}}
		for i, v := range variants {
			d.Cells = append(d.Cells, store.Cell{ID: int64(i + 1), Name: "read", Variant: v, Workload: "fs"})
		}
		for round := 0; round < 8; round++ {
			for i := range d.Cells {
				ops := 1000 * (1 + 0.05*float64(round))
				res := &metrics.Result{Duration: time.Second}
				res.ByOp[metrics.Read] = metrics.OpStats{Ops: int64(ops), Bytes: int64(ops) * 4096}
				d.Runs = append(d.Runs, store.Run{ID: int64(len(d.Runs) + 1), CellID: int64(i + 1), Round: round, Slot: i, Status: store.StatusOK, Result: res})
			}
		}
		var trend []string
		for _, w := range Build(d, Options{Order: order}).Warnings {
			if w.Code == stats.CodeTrend {
				trend = append(trend, w.Message)
			}
		}
		if len(trend) != len(variants) {
			t.Fatalf("%v %s: trend warnings %q", variants, order, trend)
		}
		return trend[0]
	}
	for _, c := range []struct {
		variants []string
		order    string
		want     string
	}{
		{[]string{""}, "", "compared with another variant in interleaved rounds"},
		{[]string{"a", "b"}, "random", "the rounds were interleaved, so the variants drifted alike"},
		{[]string{"a", "b"}, "sequential", "sequential order), so the drift is in the comparison: interleave them"},
	} {
		if got := build(c.variants, c.order); !strings.Contains(got, c.want) {
			t.Errorf("%v %s: %q, want %q", c.variants, c.order, got, c.want)
		}
	}
}

// The report's target is the one the runs saw: read once the variant's
// server was ready (a mount it made), not the round's, read with no
// server up — and without such a read, the round's.
func TestReportTargetAsTheRunsSawIt(t *testing.T) {
	t.Parallel()
	snap := func(mount, fs string) json.RawMessage {
		b, _ := json.Marshal(envinfo.Snapshot{CPUs: 2, Target: &envinfo.Target{Path: "/srv/mnt", MountPoint: mount, FSType: fs}})
		return b
	}
	d := analysistest.TwoVariants()
	d.Env = []store.EnvSnapshot{{Round: 0, Phase: "before", Snapshot: snap("/", "ext4")}, {Round: 0, Phase: store.PhaseReady, Snapshot: snap("/srv/mnt", "fuse")}}
	if r := Build(d, Options{}); r.Env == nil || r.Env.Target.FSType != "fuse" || r.Env.Target.MountPoint != "/srv/mnt" {
		t.Errorf("with a read when ready: %+v", r.Env)
	}
	d.Env = d.Env[:1]
	if r := Build(d, Options{}); r.Env == nil || r.Env.Target.FSType != "ext4" {
		t.Errorf("without: %+v", r.Env)
	}
}

// I/O pressure beside a command that writes an index of its own (149 MiB
// a run, from its rusage) is not called storage the workload does not use,
// nor is its I/O stall starvation by others; beside a command that does
// no I/O, it is.
func TestIOPressureAgainstTheCommandsOwnIO(t *testing.T) {
	build := func(written float64) (pressure, starved string) {
		t0 := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
		d := &store.Data{Experiment: store.Experiment{ID: "x"}, Cells: []store.Cell{{ID: 1, Name: "index", Workload: "cmd"}}}
		for round, stall := range []float64{0.3, 0.6, 0.4, 0.8, 0.35, 0.5, 0.45, 0.7} {
			res := &metrics.Result{Start: t0.Add(time.Duration(round) * time.Minute), Duration: time.Second,
				Extra: map[string]float64{"wall_s": 1 + stall, "env_cpu_stall": 0, "env_memory_stall": 0, "env_io_stall": stall,
					"disk_read_bytes": 0, "disk_write_bytes": written}}
			res.EnvSeries = []metrics.EnvSecond{{T: res.Start.Unix() + 1, IOStall: stall}, {T: res.Start.Unix() + 2, IOStall: stall}}
			d.Runs = append(d.Runs, store.Run{ID: int64(round + 1), CellID: 1, Round: round, Status: store.StatusOK, Result: res})
			snap, _ := json.Marshal(envinfo.Snapshot{TakenAt: res.Start, CPUs: 2, Load1: 0.5, PressureCPU: 1, PressureMemory: 0, PressureIO: 100 * stall,
				MemTotalBytes: 8 << 30, MemAvailableBytes: 6 << 30})
			d.Env = append(d.Env, store.EnvSnapshot{Round: round, Phase: "before", TakenAt: res.Start, Snapshot: snap})
		}
		for _, w := range Build(d, Options{}).Warnings {
			switch w.Code {
			case "io-pressure":
				pressure = w.Message
			case "starved":
				starved = w.Message
			}
		}
		return pressure, starved
	}
	if pressure, starved := build(149 << 20); pressure != "" || starved != "" {
		t.Errorf("a command writing 149 MiB a run: io-pressure %q, starved %q", pressure, starved)
	}
	if pressure, starved := build(0); !strings.Contains(pressure, "storage the workload does not use") || !strings.Contains(starved, "waited longer for I/O") {
		t.Errorf("a command doing no I/O: io-pressure %q, starved %q", pressure, starved)
	}
}
