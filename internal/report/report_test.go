package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/envinfo"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"

	_ "github.com/iolab/iolab/internal/cgroup"  // declares the cgroup_ metrics
	_ "github.com/iolab/iolab/internal/observe" // declares the server_ metrics
	_ "github.com/iolab/iolab/internal/workload/all"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// experiment is a stored fs experiment with known numbers: a warm-up run,
// six measured runs whose first is cold, and one failed run.
func experiment() *store.Data {
	t0 := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	rot := true
	snap, _ := json.Marshal(envinfo.Snapshot{TakenAt: t0, Hostname: "lab", Kernel: "6.1.0", CPUs: 2, CPUModel: "Test CPU",
		MemTotalBytes: 8 << 30, MemAvailableBytes: 6 << 30, Load1: 0.5, IolabVersion: "dev",
		Target: &envinfo.Target{Path: "/data", FSType: "ext4", Device: "vda", Rotational: &rot}})
	d := &store.Data{
		Experiment: store.Experiment{ID: "20261122-080000-abcd", Name: "fs", Command: "iolab fs --rw=randread", Status: "done"},
		Cells: []store.Cell{{ID: 1, Name: "randread-4k-direct", Workload: "fs",
			Params: map[string]string{"rw": "randread", "bs": "4k", "direct": "1", "iodepth": "1", "numjobs": "1", "ioengine": "psync"}}},
		Env: []store.EnvSnapshot{{Round: 0, Phase: "before", TakenAt: t0, Snapshot: snap}},
	}
	iops := []float64{9000, 5000, 10000, 10100, 9900, 10050, 9950, 0}
	for i, v := range iops {
		h := metrics.NewHistogram()
		lat := int64(1e9 / max(v, 1))
		for k := int64(0); k < 100; k++ {
			metrics.RecordLatency(h, lat+k*1000)
		}
		res := &metrics.Result{Start: t0.Add(time.Duration(i) * time.Minute), Duration: 10 * time.Second,
			CPUUserS: 0.5, CPUSysS: 1.5, TimingOverheadNs: 40}
		res.ByOp[metrics.Read] = metrics.OpStats{Ops: int64(v * 10), Bytes: int64(v*10) * 4096, Lat: h}
		run := store.Run{ID: int64(i + 1), CellID: 1, Round: i - 1, Slot: 0, Status: store.StatusOK, Result: res}
		switch i {
		case 0:
			run.Warmup, run.Round = true, 0
		case 7:
			run.Status, run.Error, res.Errors, res.FirstError = store.StatusFailed, "read /data/iolab.0.0: input/output error", 1, "read /data/iolab.0.0: input/output error"
		}
		d.Runs = append(d.Runs, run)
	}
	return d
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./internal/report -update to accept):\n%s", name, got)
	}
}

func TestBuildLeavesWarmupAndFailedRunsOut(t *testing.T) {
	r := Build(experiment(), Options{})
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

// A variant still warming up over its first measured runs is named, with
// how many runs; a steady variant is not.
func TestVariantWarmupIsNamed(t *testing.T) {
	d := &store.Data{Experiment: store.Experiment{ID: "x"},
		Cells: []store.Cell{{ID: 1, Name: "c", Variant: "a", Workload: "fs"}, {ID: 2, Name: "c", Variant: "fresh", Workload: "fs"}}}
	for round := 0; round < 12; round++ {
		for cell := int64(1); cell <= 2; cell++ {
			iops := 1000 * (1 + 0.01*float64((round*7+int(cell))%3-1))
			if cell == 2 {
				iops /= 1 + math.Exp(-float64(round)) // 1+e^-k slower at first
			}
			res := &metrics.Result{Duration: time.Second}
			res.ByOp[metrics.Read] = metrics.OpStats{Ops: int64(iops), Bytes: int64(iops) * 4096}
			d.Runs = append(d.Runs, store.Run{ID: int64(len(d.Runs) + 1), CellID: cell, Round: round, Slot: int(cell - 1), Status: store.StatusOK, Result: res})
		}
	}
	r := Build(d, Options{Baseline: "a"})
	var named []string
	for _, w := range r.Warnings {
		if w.Code == stats.CodeVariantWarmup {
			named = append(named, w.Message)
		}
	}
	if len(named) != 1 || !strings.HasPrefix(named[0], "fresh/c ops_per_s: its first 3 measured runs") {
		t.Errorf("warm-up warnings %q", named)
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

// A scale study's memory curve is checked against the variant's memory
// limit: the report says at what scale the curve crosses it.
func TestScaleFitsCheckLimits(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	d := &store.Data{Experiment: store.Experiment{ID: "x"}}
	for i, n := range []float64{1e4, 1e5, 1e6} {
		d.Cells = append(d.Cells, store.Cell{ID: int64(i + 1), Name: fmt.Sprintf("idx n=%g", n), Workload: "cmd",
			Params: map[string]string{plan.ScaleParam: "n", "n": fmt.Sprint(n), "limit_memory": "64m"}})
		for round := range 4 {
			noise := 1 + 0.01*float64(round-2)
			res := &metrics.Result{Start: t0, Duration: time.Second,
				Extra: map[string]float64{"wall_s": (0.1 + 1e-5*n) * noise, "max_rss_bytes": (1e6 + 20*n) * noise}}
			d.Runs = append(d.Runs, store.Run{ID: int64(len(d.Runs) + 1), CellID: int64(i + 1), Round: round, Status: store.StatusOK, Result: res})
		}
	}
	r := Build(d, Options{Extrapolate: store.Extrapolate{At: []float64{1e7}}})
	var rss []FitView
	for _, f := range r.Fits {
		if f.Metric == "max_rss_bytes" && f.Cell == "idx" {
			rss = append(rss, f)
		}
	}
	if len(rss) < 3 || !rss[0].Best {
		t.Fatalf("fits: %+v", r.Fits)
	}
	w := strings.Join(rss[0].Warnings, "\n")
	if !strings.Contains(w, "crosses the variant's memory limit (64 MiB) at about n = 3.") {
		t.Errorf("warnings: %s", w)
	}
	var text strings.Builder
	if err := Terminal(&text, r); err != nil || !strings.Contains(text.String(), "idx — peak RSS MiB by n") {
		t.Errorf("%v\n%s", err, text.String())
	}
}

// Figures read as plain digits: CPU per operation of 4520 µs is not
// 4.52e+03.
func TestPlainDigits(t *testing.T) {
	for v, want := range map[float64]string{4520: "4520", 4520.6: "4521", 12.345: "12.3", 0.5: "0.5", 2e15: "2e+15"} {
		if got := plain(v); got != want {
			t.Errorf("plain(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestVerdictColour(t *testing.T) {
	if got := colour("slower", "slower"); got != "\033[31mslower\033[0m" {
		t.Errorf("%q", got)
	}
	if got := colour("same", "same"); got != "same" {
		t.Errorf("%q", got)
	}
}

// A study of several cells and variants opens with one table of its
// primary metric: a row per cell, a column per variant.
func TestPivotTable(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	d := &store.Data{Experiment: store.Experiment{ID: "x"}}
	for i, cell := range []struct{ name, variant string }{{"nap n=1", "a"}, {"nap n=1", "b"}, {"nap n=2", "a"}, {"nap n=2", "b"}} {
		d.Cells = append(d.Cells, store.Cell{ID: int64(i + 1), Name: cell.name, Variant: cell.variant, Workload: "cmd", Params: map[string]string{}})
		for round := range 6 {
			wall := 1.0 + 0.01*float64(round%3)
			if cell.variant == "b" && cell.name == "nap n=2" {
				wall *= 2
			}
			res := &metrics.Result{Start: t0, Duration: time.Second, Extra: map[string]float64{"wall_s": wall}}
			d.Runs = append(d.Runs, store.Run{ID: int64(len(d.Runs) + 1), CellID: int64(i + 1), Round: round, Status: store.StatusOK, Result: res})
		}
	}
	var out strings.Builder
	if err := Terminal(&out, Build(d, Options{Baseline: "a"})); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"primary metric by cell and variant (ratio to a, verdict)", "cell     a           b", "nap n=2  1.01s wall  2.000 slower"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
}
