package analysis

import (
	"strings"
	"testing"

	"github.com/iolab/iolab/internal/badinput"
	"github.com/iolab/iolab/internal/stats"
)

// Gates make a finished experiment exit 1 and say which gate and why: a
// primary verdict, a frame test's FAIL, objects that did not verify, a
// limit on a median.
func TestGatesCheck(t *testing.T) {
	t.Parallel()
	r := &Report{
		Comparisons: []ComparisonView{
			{Cell: "up", Variant: "b", Baseline: "a", Metric: "bytes_per_s", Primary: true, Comparison: stats.Comparison{Verdict: stats.Slower, Ratio: 0.8, CI95: [2]float64{0.7, 0.9}}},
			{Cell: "up", Variant: "b", Baseline: "a", Metric: "upload.lat_p99_ns", Comparison: stats.Comparison{Verdict: stats.Slower}},
			{Cell: "down", Variant: "b", Baseline: "a", Metric: "bytes_per_s", Primary: true, Comparison: stats.Comparison{Verdict: stats.Inconclusive}},
		},
		Cells: []CellView{
			{Name: "frames", Variant: "b", Workload: "frames", Deadline: &DeadlineView{TargetFPS: 24, Runs: 3, Passed: 1}},
			{Name: "disk", Workload: "fs", Summary: map[string]stats.Summary{"read.lat_p99_ns": {N: 6, Median: 7e6}, "ops_per_s": {N: 6, Median: 900}}},
		},
		Runs: []RunView{{Cell: "s3", Round: 2, Verify: &VerifyView{Checked: 10, Mismatched: 1}}},
	}
	g, err := ParseGates("slower,frames,verify", []string{"read.lat_p99_ns<5ms", "ops_per_s>1000", "ops_per_s<1e6"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := g.Check(r)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(v.Failed, "\n")
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
	if kept := strings.Join(v.Passed, "\n"); kept != "--gate ops_per_s<1e6: kept by all 1 cells" {
		t.Errorf("gates kept:\n%s", kept)
	}
	for _, bad := range []struct {
		failOn string
		limits []string
	}{{"worse", nil}, {"", []string{"p99<5ms"}}, {"", []string{"read.lat_p99_ns<soon"}}, {"", []string{"ops_per_s=5"}}} {
		if _, err := ParseGates(bad.failOn, bad.limits); !badinput.Is(err) {
			t.Errorf("%+v: %v, want refused as bad input", bad, err)
		}
	}
}

// A gate that no cell can judge is an error (exit 2) naming what the
// experiment has, never a pass; a cell that measured nothing of a gated
// metric its workload's other cells measured breaks the gate.
func TestGatesThatCannotBeJudged(t *testing.T) {
	t.Parallel()
	fsCell := CellView{Name: "disk", Variant: "a", Workload: "fs", Measured: 3,
		Summary: map[string]stats.Summary{"ops_per_s": {N: 3, Median: 900}, "read.lat_p99_ns": {N: 3, Median: 1e6}}}
	one := &Report{Cells: []CellView{fsCell}}
	for _, tc := range []struct {
		failOn string
		limits []string
		want   string
	}{
		{"", []string{"wall_s<2m"}, `--gate "wall_s<2m": no cell of this experiment measured wall_s; it has: ops_per_s, read.lat_p99_ns`},
		{"", []string{"frames_fps>1000"}, "no cell of this experiment measured frames_fps"},
		{"slower", nil, "--fail-on slower: nothing to compare"},
		{"frames", nil, "--fail-on frames: no frame test"},
		{"verify", nil, "--fail-on verify: no run of this experiment verified"},
	} {
		g, err := ParseGates(tc.failOn, tc.limits)
		if err != nil {
			t.Fatal(err)
		}
		_, err = g.Check(one)
		if !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want refused as bad input (exit 2) with %q", tc, err, tc.want)
		}
	}
	failedB := CellView{Name: "disk", Variant: "b", Workload: "fs", Summary: map[string]stats.Summary{}}
	g, err := ParseGates("", []string{"ops_per_s>100"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := g.Check(&Report{Cells: []CellView{fsCell, failedB}})
	if err != nil || len(v.Failed) != 1 || v.Failed[0] != "--gate ops_per_s>100: b/disk: no measured run of it (0 ok runs)" {
		t.Fatalf("%v: %q", err, v.Failed)
	}
}
