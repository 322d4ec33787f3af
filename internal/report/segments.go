package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/segment"
)

// WriteSegments prints each segment's figures beside the merge.
func WriteSegments(w io.Writer, v *analysis.SegmentsView) error {
	if v.Malformed != "" {
		_, err := fmt.Fprintf(w, "\nMALFORMED: the experiments of segment group %s are not one load (%s); this segment is shown alone, nothing merged\n", v.Group, v.Malformed)
		return err
	}
	fmt.Fprintf(w, "\nsegments of %s (%d):", v.Group, v.N)
	// In the segments' order: 0/12, 1/12, 2/12 ... 10/12, not as text sorts.
	for _, s := range slices.SortedFunc(maps.Keys(v.Experiments), func(a, b string) int {
		return cmp.Or(cmp.Compare(segment.Index(a), segment.Index(b)), strings.Compare(a, b))
	}) {
		fmt.Fprintf(w, " %s=%s", s, v.Experiments[s])
	}
	fmt.Fprintln(w)
	if len(v.Missing) > 0 {
		fmt.Fprintf(w, "  MISSING: segment %s stored nothing; every run is partial\n", strings.Join(v.Missing, ", "))
	}
	for _, d := range v.Died {
		fmt.Fprintf(w, "  DIED: %s; the runs it had not finished are partial\n", d)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  cell\tsegment\truns\tops/s (median)\tp99 (median)\t")
	for _, c := range v.Cells {
		for i, s := range c.Segments {
			name := c.Cell
			if i > 0 {
				name = ""
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\t\n", name, s.Segment, s.Runs, count(s.OpsPerS), latency(s.P99Ns))
		}
	}
	return tw.Flush()
}
