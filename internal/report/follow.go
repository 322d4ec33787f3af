package report

import (
	"bytes"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
)

// Follow is one drawing of a load run in segments (grp), from each
// segment's latest stored state (show --follow), and whether a segment
// still runs.
func Follow(grp string, all []store.LiveSegment, now time.Time) (string, bool) {
	// The latest experiment of each segment (one run again supersedes).
	latest := map[string]store.LiveSegment{}
	for _, s := range all {
		latest[s.Segment] = s
	}
	segs := make([]store.LiveSegment, 0, len(latest))
	for _, s := range latest {
		segs = append(segs, s)
	}
	slices.SortFunc(segs, func(a, b store.LiveSegment) int { return segment.Index(a.Segment) - segment.Index(b.Segment) })
	n := 0
	if len(segs) > 0 {
		if s, err := segment.Parse(segs[0].Segment); err == nil {
			n = s.N
		}
	}
	var ops, bytesPS float64
	var p99 int64
	var errs int64
	running, live, inRun := false, 0, 0
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  segment\tstate\truns done\tops/s\tMiB/s\tp99\terrors\t")
	for _, s := range segs {
		state, alive := s.Status, false
		if s.Status == store.StatusRunning {
			if why := s.Gone(); why != "" {
				state = why
			} else {
				running, alive = true, true
				state = "running"
				if s.RunStatus == store.StatusRunning {
					state = fmt.Sprintf("round %d", s.Round)
					if s.Warmup {
						state = fmt.Sprintf("warm-up %d", s.Round)
					}
				}
			}
		}
		if s.RunStatus == store.StatusRunning && alive {
			inRun++
		}
		fresh := s.RunStatus == store.StatusRunning && s.Second.T > 0 && now.Unix()-s.Second.T <= 5
		o, by, p := "—", "—", "—"
		if fresh {
			live++
			ops, bytesPS, p99 = ops+float64(s.Second.Ops), bytesPS+float64(s.Second.Bytes), max(p99, s.Second.P99Ns)
			o, by, p = stats.FormatValue(float64(s.Second.Ops)), fmt.Sprintf("%.1f", float64(s.Second.Bytes)/(1<<20)), metrics.FormatNs(float64(s.Second.P99Ns))
		}
		errs += s.Errors
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\t%s\t%d\t\n", s.Segment, state, s.Finished, o, by, p, s.Errors)
	}
	tw.Flush()
	head := fmt.Sprintf("load %s (%d of %d segments stored) at %s:", grp, len(segs), n, now.Format("15:04:05"))
	switch {
	case live > 0:
		which := "the latest second of the segment in a run"
		if live > 1 {
			which = fmt.Sprintf("the latest second of the %d segments in a run", live)
		}
		head += fmt.Sprintf(" %s ops/s  %.1f MiB/s  p99 ≤ %s  %d errors (%s)",
			stats.FormatValue(ops), bytesPS/(1<<20), metrics.FormatNs(float64(p99)), errs, which)
	case inRun > 0:
		head += fmt.Sprintf(" in a run, no second of it stored yet; %d errors so far", errs)
	default:
		head += fmt.Sprintf(" between runs; %d errors so far", errs)
	}
	return head + "\n" + b.String(), running
}
