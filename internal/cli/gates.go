package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/report"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/units"
)

// failOnKinds are what --fail-on accepts.
var failOnKinds = []string{"slower", "inconclusive", "faster", "frames", "verify"}

// Gates are what makes a finished experiment exit 1 for a CI pipeline:
// verdicts of primary comparisons, a frame test's FAIL, verify
// mismatches (--fail-on), and limits on a metric's median (--gate).
type Gates struct {
	FailOn []string
	Limits []Limit
	failOn string
	limits []string
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

func (g *Gates) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&g.failOn, "fail-on", "", "exit 1 when any of these hold, comma-separated: slower, inconclusive, faster (a primary comparison's verdict), frames (a frame test's FAIL), verify (objects that did not verify)")
	fs.StringArrayVar(&g.limits, "gate", nil, "exit 1 when a cell's median breaks a limit: METRIC<VALUE or METRIC>VALUE, such as 'read.lat_p99_ns<5ms', 'wall_s<2m', 'ops_per_s>10000' (repeatable)")
}

// parse reads the flags.
func (g *Gates) parse() error {
	g.FailOn, g.Limits = nil, nil
	for _, k := range strings.Split(g.failOn, ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if !slices.Contains(failOnKinds, k) {
			return usage("--fail-on %q: %s is not one of %s", g.failOn, k, strings.Join(failOnKinds, ", "))
		}
		g.FailOn = append(g.FailOn, k)
	}
	for _, text := range g.limits {
		i := strings.IndexAny(text, "<>")
		if i <= 0 {
			return usage("--gate %q: want METRIC<VALUE or METRIC>VALUE, such as 'read.lat_p99_ns<5ms'", text)
		}
		l := Limit{Metric: strings.TrimSpace(text[:i]), Below: text[i] == '<', Text: text}
		if _, known := stats.Describe(l.Metric); !known {
			return usage("--gate %q: unknown metric %q (the metrics are those of --json's summaries: ops_per_s, read.lat_p99_ns, wall_s ...)", text, l.Metric)
		}
		v, err := limitValue(l.Metric, strings.TrimSpace(text[i+1:]))
		if err != nil {
			return usage("--gate %q: %v", text, err)
		}
		l.Value = v
		g.Limits = append(g.Limits, l)
	}
	return nil
}

// limitValue reads a limit in its metric's unit: durations for times
// (_ns in nanoseconds, _s in seconds), sizes for bytes, else (rates,
// counts) a number.
func limitValue(metric, text string) (float64, error) {
	switch {
	case strings.HasSuffix(metric, "_per_s"): // a rate
	case strings.HasSuffix(metric, "_ns"):
		d, err := units.ParseDuration(text)
		return float64(d.Nanoseconds()), err
	case strings.HasSuffix(metric, "_s"):
		d, err := units.ParseDuration(text)
		return d.Seconds(), err
	case strings.HasSuffix(metric, "_bytes"):
		b, err := units.ParseSize(text)
		return float64(b), err
	}
	return units.ParseFloat(text, -1e300, 1e300)
}

// Check lists every gate the report breaks, each saying which and why.
func (g Gates) Check(r *report.Report) []string {
	var out []string
	for _, c := range r.Comparisons {
		if !c.Primary || !slices.Contains(g.FailOn, c.Verdict) {
			continue
		}
		what := fmt.Sprintf("%s is %s than %s", c.Variant, c.Verdict, c.Baseline)
		if c.Verdict == stats.Inconclusive {
			what = fmt.Sprintf("%s against %s is inconclusive", c.Variant, c.Baseline)
		}
		out = append(out, fmt.Sprintf("--fail-on %s: %s %s: %s (ratio %.3f [%.3f, %.3f])",
			c.Verdict, c.Cell, c.Metric, what, c.Ratio, c.CI95[0], c.CI95[1]))
	}
	for _, c := range r.Cells {
		name := c.Name
		if c.Variant != "" {
			name = c.Variant + "/" + c.Name
		}
		if slices.Contains(g.FailOn, "frames") && c.Deadline != nil && !c.Deadline.Pass {
			out = append(out, fmt.Sprintf("--fail-on frames: %s: %s", name, c.Deadline))
		}
		for _, l := range g.Limits {
			s, ok := c.Summary[l.Metric]
			if !ok || s.N == 0 {
				continue
			}
			if (l.Below && s.Median >= l.Value) || (!l.Below && s.Median <= l.Value) {
				out = append(out, fmt.Sprintf("--gate %s: %s: the median is %s", l.Text, name, report.FormatMetric(l.Metric, s.Median)))
			}
		}
	}
	if slices.Contains(g.FailOn, "verify") {
		for _, run := range r.Runs {
			if run.Verify != nil && (run.Verify.Mismatched > 0 || run.Verify.Missing > 0) {
				out = append(out, fmt.Sprintf("--fail-on verify: %s round %d: %d objects did not match what was written, %d were missing",
					run.Cell, run.Round, run.Verify.Mismatched, run.Verify.Missing))
			}
		}
	}
	return out
}
