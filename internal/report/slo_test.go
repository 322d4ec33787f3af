package report

import (
	"strings"
	"testing"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/stats"
)

// A search's answer says only what its loads showed — no bracket, for
// none is a confidence interval — and names the loads held back by the
// worker cap or run too short for the percentile.
func TestSLOAnswerSaysWhatWasShown(t *testing.T) {
	t.Parallel()
	step := func(share float64, verdict string, capped bool, fewest int64) analysis.SLOStep {
		return analysis.SLOStep{SLOStep: stats.SLOStep{Share: share, Verdict: verdict}, Offered: 100 * share, Capped: capped, FewestOps: fewest}
	}
	base := analysis.SLOView{Metric: "get.response_p99_ns", Calibrated: 100, Done: true, Bounded: true, Runs: 12, MinOps: 1000,
		Steps: []analysis.SLOStep{step(0.625, stats.Holds, false, 2000), step(1.25, stats.Fails, true, 2000), step(0.9375, stats.Undecided, false, 400)}}
	for _, c := range []struct {
		name string
		edit func(*analysis.SLOView)
		want string
	}{
		{"held, failed, undecided", func(v *analysis.SLOView) { v.Held, v.Failed, v.Undecided = 62.5, 125, 93.75 },
			"sustains 62.5 ops/s (held there); shown to fail at 125 ops/s; undecided at 93.8 ops/s (its runs straddled the bound"},
		{"none failed", func(v *analysis.SLOView) { v.Held, v.Undecided = 62.5, 93.75 }, "sustains 62.5 ops/s (held there); shown to fail at no load tried; undecided at 93.8"},
		{"held nowhere", func(v *analysis.SLOView) { v.Failed = 62.5 }, "held at none of the loads tried: shown to fail at 62.5 ops/s; 12 runs"},
		{"held everywhere", func(v *analysis.SLOView) { v.Held, v.Bounded, v.Top = 1000, false, 1000 },
			"holds up to 1k ops/s — at every load tried, its range widened to 10x the flat-out rate (100 ops/s); 12 runs"},
		{"cut short", func(v *analysis.SLOView) { v.Held, v.Done = 62.5, false }, "the search was cut short after 12 runs: held up to 62.5 ops/s so far"},
	} {
		v := base
		c.edit(&v)
		if got := sloAnswer(v); !strings.HasPrefix(got, c.want) || strings.Contains(got, "[") {
			t.Errorf("%s: %q, want %q...", c.name, got, c.want)
		}
	}
	if got := cappedSteps(base); !strings.HasPrefix(got, "at 125 ops/s every worker iolab may add was busy (--max-concurrency)") {
		t.Errorf("capped: %q", got)
	}
	if got := shortSteps(base); !strings.HasPrefix(got, "runs too short for get.response_p99_ns: at 93.8 ops/s (400) a run held fewer than the 1000 operations") {
		t.Errorf("short: %q", got)
	}
	base.Steps[1].Verdict = stats.Holds // a load that held at the cap says nothing of it
	if got := cappedSteps(base); got != "" {
		t.Errorf("capped but held: %q", got)
	}
}
