package analysis

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/iolab/iolab/internal/badinput"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/stats"
)

// failOnKinds are what --fail-on accepts.
var failOnKinds = []string{"slower", "inconclusive", "faster", "frames", "verify"}

// Gates are what makes a finished experiment exit 1 for a CI pipeline:
// verdicts of primary comparisons, a frame test's FAIL, verify
// mismatches (--fail-on), and limits on a metric's median (--gate).
type Gates struct {
	FailOn []string
	Limits []Limit
}

// Limit is one --gate: every cell's median of Metric must be below (or
// above) Value.
type Limit struct {
	Metric string
	Below  bool
	Value  float64
	Text   string
}

// ErrGate is the error of an experiment that failed a gate.
var ErrGate = errors.New("a gate failed")

// ParseGates reads --fail-on's comma-separated kinds and each --gate's
// METRIC<VALUE or METRIC>VALUE.
func ParseGates(failOn string, limits []string) (Gates, error) {
	var g Gates
	for _, k := range strings.Split(failOn, ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if !slices.Contains(failOnKinds, k) {
			return Gates{}, badinput.Errorf("--fail-on %q: %s is not one of %s", failOn, k, strings.Join(failOnKinds, ", "))
		}
		g.FailOn = append(g.FailOn, k)
	}
	for _, text := range limits {
		i := strings.IndexAny(text, "<>")
		if i <= 0 {
			return Gates{}, badinput.Errorf("--gate %q: want METRIC<VALUE or METRIC>VALUE, such as 'read.lat_p99_ns<5ms'", text)
		}
		l := Limit{Metric: strings.TrimSpace(text[:i]), Below: text[i] == '<', Text: text}
		def, known := metrics.Describe(l.Metric)
		if !known {
			return Gates{}, badinput.Errorf("--gate %q: unknown metric %q (the metrics are those of --json's summaries: ops_per_s, read.lat_p99_ns, wall_s ...)", text, l.Metric)
		}
		v, err := def.ParseLimit(strings.TrimSpace(text[i+1:]))
		if err != nil {
			return Gates{}, badinput.Errorf("--gate %q: %v", text, err)
		}
		l.Value = v
		g.Limits = append(g.Limits, l)
	}
	return g, nil
}

// ForKinds refuses, before anything runs, a gate that only kinds the plan
// does not run could judge: a limit on a metric that another kind alone
// measures (wall_s on an fs plan), --fail-on frames without a frame test.
// After the run it would be refused all the same, the experiment spent.
func (g Gates) ForKinds(kinds []string) error {
	runs := strings.Join(slices.Compact(slices.Sorted(slices.Values(kinds))), ", ")
	for _, l := range g.Limits {
		if def, _ := metrics.Describe(l.Metric); def.Kind != "" && !slices.Contains(kinds, def.Kind) {
			return badinput.Errorf("--gate %q: %s is measured by %s workloads alone, and this plan runs %s", l.Text, l.Metric, def.Kind, runs)
		}
	}
	// A frame test's verdict is what its runs' frames_pass says
	// (deadlineOf): the kind that measures that metric.
	if pass, _ := metrics.Describe("frames_pass"); slices.Contains(g.FailOn, "frames") && pass.Kind != "" && !slices.Contains(kinds, pass.Kind) {
		return badinput.Errorf("--fail-on frames: a frame test's PASS or FAIL, and this plan runs %s, no %s workload", runs, pass.Kind)
	}
	return nil
}

// Verdict is what the gates made of a report: each gate it broke and each
// it kept, one line each saying which gate and why.
type GateVerdict struct {
	Failed, Passed []string
}

// Check judges the report by every gate. A gate no cell can judge — a
// limit on a metric nothing measured, --fail-on slower with nothing to
// compare, frames without a frame test, verify without a verified run —
// is an error naming what the experiment does have: a gate that cannot
// fail must not pass. A cell that lacks a gated metric other cells of its
// workload measured (every run of it failed) breaks the gate.
func (g Gates) Check(r *Report) (GateVerdict, error) {
	var v GateVerdict
	if err := g.judgeable(r); err != nil {
		return v, err
	}
	for _, kind := range []string{stats.Slower, stats.Faster, stats.Inconclusive} {
		if !slices.Contains(g.FailOn, kind) {
			continue
		}
		broke := 0
		for _, c := range r.Comparisons {
			if !c.Primary || c.Verdict != kind {
				continue
			}
			broke++
			what := fmt.Sprintf("%s is %s than %s", c.Variant, c.Verdict, c.Baseline)
			if c.Verdict == stats.Inconclusive {
				what = fmt.Sprintf("%s against %s is inconclusive", c.Variant, c.Baseline)
			}
			v.Failed = append(v.Failed, fmt.Sprintf("--fail-on %s: %s %s: %s (ratio %.3f [%.3f, %.3f])",
				c.Verdict, c.Cell, c.Metric, what, c.Ratio, c.CI95[0], c.CI95[1]))
		}
		if broke == 0 {
			v.Passed = append(v.Passed, fmt.Sprintf("--fail-on %s: no primary comparison of %d is %s", kind, primaryCount(r), kind))
		}
	}
	if slices.Contains(g.FailOn, "frames") {
		v.add(g.framesGate(r))
	}
	for _, l := range g.Limits {
		v.add(l.judge(r))
	}
	if slices.Contains(g.FailOn, "verify") {
		v.add(verifyGate(r))
	}
	return v, nil
}

// add takes one gate's failures, or its pass.
func (v *GateVerdict) add(failed []string, passed string) {
	if len(failed) > 0 {
		v.Failed = append(v.Failed, failed...)
	} else {
		v.Passed = append(v.Passed, passed)
	}
}

// judgeable refuses a gate no cell of the report can judge.
func (g Gates) judgeable(r *Report) error {
	if slices.ContainsFunc(g.FailOn, func(k string) bool { return k == stats.Slower || k == stats.Faster || k == stats.Inconclusive }) && primaryCount(r) == 0 {
		variants := map[string]bool{}
		for _, c := range r.Cells {
			variants[c.Variant] = true
		}
		return badinput.Errorf("--fail-on %s: nothing to compare: a verdict needs a variant beside the baseline with measured runs of a cell in common (this experiment has %d variant(s) and no comparison)",
			strings.Join(g.FailOn, ","), len(variants))
	}
	if slices.Contains(g.FailOn, "frames") && !slices.ContainsFunc(r.Cells, func(c CellView) bool { return c.Deadline != nil }) {
		return badinput.Errorf("--fail-on frames: no frame test with a target frame rate (--fps) in this experiment")
	}
	if slices.Contains(g.FailOn, "verify") && len(r.Verified) == 0 && !slices.ContainsFunc(r.Runs, func(run RunView) bool { return run.Verify != nil }) {
		return badinput.Errorf("--fail-on verify: no run of this experiment verified objects (s3 --verify, http --verify), nor did a later check (s3 verify)")
	}
	have := measuredMetrics(r)
	for _, l := range g.Limits {
		if !have[l.Metric] {
			return badinput.Errorf("--gate %q: no cell of this experiment measured %s; it has: %s", l.Text, l.Metric, strings.Join(slices.Sorted(maps.Keys(have)), ", "))
		}
	}
	return nil
}

// measured are the metrics some cell of the report has a median of.
func measuredMetrics(r *Report) map[string]bool {
	have := map[string]bool{}
	for _, c := range r.Cells {
		for m, s := range c.Summary {
			if s.N > 0 {
				have[m] = true
			}
		}
	}
	return have
}

// primaries counts the report's primary comparisons.
func primaryCount(r *Report) int {
	n := 0
	for _, c := range r.Comparisons {
		if c.Primary {
			n++
		}
	}
	return n
}

func cellLabel(c CellView) string {
	if c.Variant != "" {
		return c.Variant + "/" + c.Name
	}
	return c.Name
}

func (g Gates) framesGate(r *Report) ([]string, string) {
	var failed []string
	n := 0
	for _, c := range r.Cells {
		if c.Deadline == nil {
			continue
		}
		n++
		if !c.Deadline.Pass {
			failed = append(failed, fmt.Sprintf("--fail-on frames: %s: %s", cellLabel(c), c.Deadline))
		}
	}
	return failed, fmt.Sprintf("--fail-on frames: %d frame tests kept their frame rate", n)
}

// judge checks the limit on every cell of a workload that measures its
// metric: a cell that did not (every run failed) breaks it.
func (l Limit) judge(r *Report) ([]string, string) {
	kinds := map[string]bool{}
	for _, c := range r.Cells {
		if s, ok := c.Summary[l.Metric]; ok && s.N > 0 {
			kinds[c.Workload] = true
		}
	}
	var failed []string
	n := 0
	for _, c := range r.Cells {
		if !kinds[c.Workload] {
			continue
		}
		n++
		s, ok := c.Summary[l.Metric]
		switch {
		case !ok || s.N == 0:
			failed = append(failed, fmt.Sprintf("--gate %s: %s: no measured run of it (%d ok runs)", l.Text, cellLabel(c), c.Measured))
		case (l.Below && s.Median >= l.Value) || (!l.Below && s.Median <= l.Value):
			failed = append(failed, fmt.Sprintf("--gate %s: %s: the median is %s", l.Text, cellLabel(c), FormatMetric(l.Metric, s.Median)))
		}
	}
	return failed, fmt.Sprintf("--gate %s: kept by all %d cells", l.Text, n)
}

func verifyGate(r *Report) ([]string, string) {
	var failed []string
	n := 0
	for _, run := range r.Runs {
		if run.Verify == nil {
			continue
		}
		n++
		if run.Verify.Failed() > 0 {
			failed = append(failed, fmt.Sprintf("--fail-on verify: %s round %d: %d objects did not match what was written, %d were missing, %d could not be read",
				run.Cell, run.Round, run.Verify.Mismatched, run.Verify.Missing, run.Verify.Unreadable))
		}
	}
	later := 0
	for _, v := range r.Verified {
		if v.At == nil {
			continue
		}
		later++
		if !v.OK() {
			failed = append(failed, fmt.Sprintf("--fail-on verify: %s, %s at %s: %d objects did not match what was written, %d were missing, %d could not be read",
				v.Cell, v.By, v.At.UTC().Format(time.RFC3339), v.Mismatched, v.Missing, v.Unreadable))
		}
	}
	return failed, fmt.Sprintf("--fail-on verify: all %d verified runs and %d later checks matched", n, later)
}
