package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
)

// followEvery is how often --follow reads the store and draws the load.
const followEvery = time.Second

// runFollow draws a load run in segments as it runs, from the store alone:
// every second, the load's operations/s, MiB/s, p99 and errors — the sum
// of each segment's latest stored second, the worst segment's p99 — and
// each segment's, until every segment has ended. On a terminal the view
// is redrawn in place; otherwise each second's view is printed after the
// last. arg is a segment group, or an experiment of one (default: the
// newest load in segments).
func runFollow(ctx context.Context, st *store.Store, arg string, stdout io.Writer) error {
	grp, err := followedGroup(ctx, st, arg)
	if err != nil {
		return err
	}
	f, isFile := stdout.(*os.File)
	redraw := isFile && term.IsTerminal(int(f.Fd()))
	drawn := 0
	tick := time.NewTicker(followEvery)
	defer tick.Stop()
	for {
		segs, err := st.LiveLoad(ctx, grp)
		if err != nil {
			return err
		}
		if len(segs) == 0 {
			return fmt.Errorf("show --follow: segment group %s holds no experiment any more (deleted?)", grp)
		}
		view, running := followView(grp, segs, time.Now())
		if redraw && drawn > 0 {
			fmt.Fprintf(stdout, "\x1b[%dA\x1b[J", drawn) // up over the last view, clear to the end
		}
		if _, err := io.WriteString(stdout, view); err != nil {
			return err
		}
		drawn = strings.Count(view, "\n")
		if !redraw {
			fmt.Fprintln(stdout)
		}
		if !running {
			fmt.Fprintf(stdout, "every segment has ended; `%s` prints the merged load\n", showCommand(segs[0].ID, st.Path()))
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil
		}
	}
}

// followedGroup is the group arg names: a group, an experiment of one, or
// (empty) the newest experiment of one.
func followedGroup(ctx context.Context, st *store.Store, arg string) (string, error) {
	if arg != "" {
		if ms, err := st.Members(ctx, arg); err != nil || len(ms) > 0 {
			return arg, err
		}
		e, err := st.Find(ctx, arg)
		switch {
		case errors.Is(err, store.ErrNoExperiment):
			return "", usage("show --follow %s: no segment group or experiment of that name in %s; `iolab ls` lists them", arg, st.Path())
		case err != nil:
			return "", &UsageError{Err: err}
		case e.SegmentGroup == "":
			return "", usage("show --follow %s: experiment %s is no segment of a load; --follow follows a load run in segments (--segment I/N)", arg, e.ID)
		}
		return e.SegmentGroup, nil
	}
	list, err := st.ListExperiments(ctx)
	if err != nil {
		return "", err
	}
	for _, e := range list { // newest first
		if e.SegmentGroup != "" {
			return e.SegmentGroup, nil
		}
	}
	return "", usage("show --follow: %s holds no load run in segments yet; start one (--segment I/N --segment-group NAME), then follow it", st.Path())
}

// followView is one drawing of the load, and whether a segment still runs.
func followView(grp string, all []store.LiveSegment, now time.Time) (string, bool) {
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
