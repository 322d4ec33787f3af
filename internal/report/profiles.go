package report

import (
	"fmt"
	"io"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/profiling"
)

// Profiles prints profile views as text: per cell and variant the top
// functions, the neighbours of those a focus named, and the changes
// against the baseline.
func Profiles(w io.Writer, views []analysis.ProfileView, baseline string) {
	for _, v := range views {
		by := map[string]string{profiling.SortFlat: "own CPU", profiling.SortCum: "CPU with what they call"}[v.Sort]
		fmt.Fprintf(w, "\n%s — %s: %s profile of %d measured runs (%d samples), top functions by %s\n", v.Cell, v.Variant, v.Kind, v.Runs, v.Samples, by)
		fmt.Fprintf(w, "  %6s  %6s  %s\n", "flat", "cum", "function")
		for _, f := range v.Top {
			fmt.Fprintf(w, "  %5.1f%%  %5.1f%%  %s\n", 100*f.Flat, 100*f.Cum, f.Name)
		}
		for _, n := range v.Focus {
			profileFocus(w, n)
		}
		if len(v.Changes) == 0 {
			continue
		}
		fmt.Fprintf(w, "  against %s, the largest changes of %s share:\n", baseline, by)
		fmt.Fprintf(w, "  %8s  %8s  %9s  %s\n", "baseline", "this", "change", "function")
		for _, c := range v.Changes {
			base, this := c.BaseFlat, c.Flat
			if v.Sort == profiling.SortCum {
				base, this = c.BaseCum, c.Cum
			}
			fmt.Fprintf(w, "  %7.1f%%  %7.1f%%  %+6.1f pp  %s\n", 100*base, 100*this, 100*(this-base), c.Name)
		}
	}
}

// profileFocus prints a focused function's callers and callees.
func profileFocus(w io.Writer, n profiling.Neighbours) {
	fmt.Fprintf(w, "  %s: flat %.1f%%, cum %.1f%%\n    called by:\n", n.Name, 100*n.Flat, 100*n.Cum)
	for _, c := range n.Callers {
		fmt.Fprintf(w, "      %5.1f%%  %s\n", 100*c.Cum, c.Name)
	}
	fmt.Fprintf(w, "    calls:\n")
	for _, c := range n.Callees {
		fmt.Fprintf(w, "      %5.1f%%  %s\n", 100*c.Cum, c.Name)
	}
	if n.Flat > 0 {
		fmt.Fprintf(w, "      %5.1f%%  (itself)\n", 100*n.Flat)
	}
}
