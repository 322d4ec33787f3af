package cli

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iolab/iolab/internal/report"
	"github.com/iolab/iolab/internal/stats"
)

// Gates make a finished experiment exit 1 and say which gate and why: a
// primary verdict, a frame test's FAIL, objects that did not verify, a
// limit on a median.
func TestGatesCheck(t *testing.T) {
	t.Parallel()
	r := &report.Report{
		Comparisons: []report.ComparisonView{
			{Cell: "up", Variant: "b", Baseline: "a", Metric: "bytes_per_s", Primary: true, Comparison: stats.Comparison{Verdict: stats.Slower, Ratio: 0.8, CI95: [2]float64{0.7, 0.9}}},
			{Cell: "up", Variant: "b", Baseline: "a", Metric: "upload.lat_p99_ns", Comparison: stats.Comparison{Verdict: stats.Slower}},
			{Cell: "down", Variant: "b", Baseline: "a", Metric: "bytes_per_s", Primary: true, Comparison: stats.Comparison{Verdict: stats.Inconclusive}},
		},
		Cells: []report.CellView{
			{Name: "frames", Variant: "b", Deadline: &report.DeadlineView{TargetFPS: 24, Runs: 3, Passed: 1}},
			{Name: "disk", Summary: map[string]stats.Summary{"read.lat_p99_ns": {N: 6, Median: 7e6}, "ops_per_s": {N: 6, Median: 900}}},
		},
		Runs: []report.RunView{{Cell: "s3", Round: 2, Verify: &report.VerifyView{Checked: 10, Mismatched: 1}}},
	}
	g := Gates{failOn: "slower,frames,verify", limits: []string{"read.lat_p99_ns<5ms", "ops_per_s>1000", "ops_per_s<1e6"}}
	if err := g.parse(); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(g.Check(r), "\n")
	for _, want := range []string{
		"--fail-on slower: up bytes_per_s: b is slower than a (ratio 0.800 [0.700, 0.900])",
		"--fail-on frames: b/frames: FAIL",
		"--fail-on verify: s3 round 2: 1 objects did not match what was written",
		"--gate read.lat_p99_ns<5ms: disk: the median is 7ms",
		"--gate ops_per_s>1000: disk: the median is 900",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != 5 {
		t.Errorf("%d gates failed, want 5 (the unadjusted p99 and the limit kept are not):\n%s", n, got)
	}
	for _, bad := range []Gates{{failOn: "worse"}, {limits: []string{"p99<5ms"}}, {limits: []string{"read.lat_p99_ns<soon"}}, {limits: []string{"ops_per_s=5"}}} {
		if err := bad.parse(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// Through the CLI: a slower variant under --fail-on slower exits 1 after
// printing the report; a limit the runs keep does not.
func TestFailOnSlowerExits1(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"plan.yaml": `rounds: 6
warmup: 0
variants:
  - {name: a, env: {NAP: "0.01"}}
  - {name: b, env: {NAP: "0.6"}}
workloads:
  - {name: nap, cmd: {run: sleep $NAP}}
`})
	// b sleeps 60 times as long: on a loaded machine starting a command
	// can take a few hundred ms, which blurred a 10x difference.
	db := filepath.Join(dir, "x.db")
	out, _, err := iolab(t, context.Background(), "experiment", filepath.Join(dir, "plan.yaml"), "--db", db, "--fail-on", "slower", "--gate", "wall_s<1m")
	if !errors.Is(err, ErrGate) || ExitCode(err) != 1 || !strings.Contains(err.Error(), "--fail-on slower: nap wall_s: b is slower than a") ||
		strings.Contains(err.Error(), "--gate") || !strings.Contains(out, "verdicts:") {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, _, err := iolab(t, context.Background(), "show", "--db", db, "--gate", "wall_s<1m", "--format", "csv"); err != nil {
		t.Fatalf("a kept limit: %v", err)
	}
}
