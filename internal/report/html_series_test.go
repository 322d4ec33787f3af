package report

import (
	"math"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/observe"
	"github.com/iolab/iolab/internal/stats"
)

// The server CPU plot draws what the observer measured: each second's CPU
// as observe hands it over (that second's, not a running total), so the
// seconds are never negative and add up to the run's server CPU.
func TestServerCPUSecondsAreDrawnAsObserved(t *testing.T) {
	t.Parallel()
	spin := exec.Command("sh", "-c", "while :; do :; done")
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = spin.Process.Kill(); _ = spin.Wait() }()
	var mu sync.Mutex
	var seconds []metrics.ServerSecond
	w := observe.WatchTree(spin.Process.Pid, time.Second, func(s metrics.ServerSecond) {
		mu.Lock()
		seconds = append(seconds, s)
		mu.Unlock()
	})
	time.Sleep(3500 * time.Millisecond)
	peak := w.Stop()
	mu.Lock()
	defer mu.Unlock()
	_, cpu := serverSeconds(seconds)
	if len(cpu) < 3 {
		t.Fatalf("%d seconds observed", len(cpu))
	}
	sum := 0.0
	for i, c := range cpu {
		if c < 0 || c > 1.2 {
			t.Fatalf("second %d: %.2f CPU seconds in one second of one spinning thread: %v", i, c, cpu)
		}
		sum += c
	}
	if peak.CPUSeconds <= 0 || math.Abs(sum-peak.CPUSeconds) > 0.05+0.2*peak.CPUSeconds {
		t.Fatalf("seconds add up to %.2f CPU seconds, the run's server CPU is %.2f", sum, peak.CPUSeconds)
	}
}

// A cell's table in the HTML report gives each direction its own share
// of the cell's metric, and the whole its own row: never the whole's
// IOPS on both the read and the write row.
func TestSummaryRowsPerDirection(t *testing.T) {
	t.Parallel()
	sum := func(v float64) stats.Summary { return stats.Summary{N: 6, Median: v, CV: 0.01} }
	cv := analysis.CellView{Variant: "a", Measured: 6,
		Summary: map[string]stats.Summary{"ops_per_s": sum(1000), "read.ops_per_s": sum(700), "write.ops_per_s": sum(300)},
		Latency: map[string]metrics.Percentiles{"read": {P99: 2e6}, "write": {P99: 5e6}},
		Hist:    map[string]*hdrhistogram.Histogram{"read": nil, "write": nil}}
	rows := summaryRows(cv, "ops_per_s")
	if len(rows) != 3 {
		t.Fatalf("%d rows: %+v", len(rows), rows)
	}
	for i, want := range [][2]string{{"a", "1k"}, {"a read", "700"}, {"a write", "300"}} {
		if rows[i].Variant != want[0] || rows[i].Median[:len(want[1])] != want[1] {
			t.Errorf("row %d: %s %s, want %s %s", i, rows[i].Variant, rows[i].Median, want[0], want[1])
		}
	}
	if rows[2].P99 != "5ms" || rows[1].P99 != "2ms" {
		t.Errorf("p99 read %s write %s", rows[1].P99, rows[2].P99)
	}
}

// Each measured run's own generator delay is drawn where the runs fell,
// so the runs a burst of other work hit stand out; a cell whose runs
// measured none has no such figure.
func TestGeneratorDelayPerRunIsDrawn(t *testing.T) {
	t.Parallel()
	cell := analysis.CellView{Name: "c", Workload: "http", Summary: map[string]stats.Summary{}}
	base := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, delays := range [][]float64{{2, 40, 3}, nil} {
		r := &analysis.Report{Cells: []analysis.CellView{cell}}
		for i := range 3 {
			m := map[string]float64{analysis.PrimaryMetric("http"): 100}
			if delays != nil {
				m["gen_delay_pct"] = delays[i]
			}
			r.Runs = append(r.Runs, analysis.RunView{Cell: "c", Status: "ok", Round: i, Start: base.Add(time.Duration(i) * time.Minute), Metrics: m})
		}
		hc, err := htmlCellOf(r, "c", []string{""})
		if err != nil {
			t.Fatal(err)
		}
		drawn := false
		for _, f := range hc.Plots {
			drawn = drawn || f.Kind == "generator"
		}
		if drawn != (delays != nil) {
			t.Errorf("delays %v: generator figure drawn %v", delays, drawn)
		}
	}
}
