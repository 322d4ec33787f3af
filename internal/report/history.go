package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/history"
	"github.com/iolab/iolab/internal/units"
)

// WriteHistory prints each history as a table, oldest first: the
// experiment, its runs, the median [95% CI], the step from the one
// before; its notes and what changed under it; change points where they
// fall.
func WriteHistory(w io.Writer, hs []analysis.HistoryView, markdown bool) error {
	for i, h := range hs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		label, format := metricFormat(h.Metric)
		name := h.Cell
		if h.Variant != "" {
			name = h.Variant + "/" + name
		}
		better := "higher is better"
		if h.LowerIsBetter {
			better = "lower is better"
		}
		head := fmt.Sprintf("%s (%s %s): %s, %s; %s", name, h.Workload, formatParams(h.Params), label, better, units.Plural(len(h.Steps), "experiment"))
		if markdown {
			fmt.Fprintf(w, "### %s\n\n", head)
		} else {
			fmt.Fprintln(w, head)
		}
		t := &Table{Header: []string{"experiment", "date", "runs", "median [95% CI]", "vs previous (geometric means)"}}
		cps := map[int]history.ChangePoint{}
		for _, cp := range h.ChangePoints {
			cps[cp.Index] = cp
		}
		for j, s := range h.Steps {
			// Lines of their own put their text in the last column,
			// which tabwriter does not align, so it widens nothing.
			if cp, ok := cps[j]; ok {
				t.Add("▶", "", "", "", "change point: "+changePointText(h, cp))
			}
			prev := ""
			if s.Previous != nil {
				prev = estimate(*s.Previous, format) + " " + s.Previous.Verdict
			}
			t.Add(s.Experiment, s.At.Local().Format("2006-01-02 15:04"), fmt.Sprint(s.Summary.N), medianCI(s.Summary, format), prev)
			for _, n := range s.Notes {
				t.Add("", "", "", "", "note: "+oneLine(n))
			}
			if len(s.Changes) > 0 {
				t.Add("", "", "", "", "changed: "+changesText(s.Changes))
			}
		}
		if err := t.Render(w, markdown); err != nil {
			return err
		}
		switch {
		case h.Reason != "":
			fmt.Fprintf(w, "  %s\n", h.Reason)
		case len(h.ChangePoints) == 0:
			fmt.Fprintf(w, "  no change point: %s found none\n", h.Method)
		default:
			fmt.Fprintf(w, "  change points by %s\n", h.Method)
		}
	}
	if len(hs) > 0 {
		fmt.Fprintln(w, "\nvs previous: the ratio of the geometric means of this experiment's runs and the one's before (Welch's interval over the log values; Holm across the steps) — not of the medians beside it, which one slow run can leave where they were; it covers the runs' noise, not what differs between days; change points weigh the experiments' medians against each other, which does")
	}
	return nil
}

func changePointText(h analysis.HistoryView, cp history.ChangePoint) string {
	_, format := metricFormat(h.Metric)
	size := fmt.Sprintf("%.3gx", cp.Ratio)
	if cp.Difference {
		size = signed(cp.Ratio, format)
	}
	where := "; the new level starts here (95%)"
	if a, b := cp.Located[0], cp.Located[1]; a != b && a >= 0 && b < len(h.Steps) {
		where = fmt.Sprintf("; the new level starts between %s and %s (95%%)", h.Steps[a].Experiment, h.Steps[b].Experiment)
	}
	return fmt.Sprintf("%s → %s (%s, %s), p = %s%s", format(cp.Before), format(cp.After), size, cp.Direction, pText(cp.P), where)
}

func pText(p float64) string {
	if p < 0.001 {
		return "0.001"
	}
	return fmt.Sprintf("%.3f", math.Round(p*1000)/1000)
}

func changesText(cs []history.Change) string {
	var parts []string
	for _, c := range cs {
		from, to := c.From, c.To
		if from == "" {
			from = "—"
		}
		if to == "" {
			to = "—"
		}
		parts = append(parts, fmt.Sprintf("%s %s → %s", c.Fact, oneLine(from), oneLine(to)))
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}
