package report

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/store"

	_ "github.com/iolab/iolab/internal/cgroup"  // declares the cgroup_ metrics
	_ "github.com/iolab/iolab/internal/observe" // declares the server_ metrics
	_ "github.com/iolab/iolab/internal/workload/all"
)

var update = flag.Bool("update", false, "rewrite the golden files")

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
	if err := Terminal(&out, analysis.Build(d, analysis.Options{Baseline: "a"})); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"primary metric by cell and variant (ratio to a, verdict)", "cell     a           b", "nap n=2  1.01s wall  2.000 slower"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
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
	r := analysis.Build(d, analysis.Options{Extrapolate: store.Extrapolate{At: []float64{1e7}}})
	var rss []analysis.FitView
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
