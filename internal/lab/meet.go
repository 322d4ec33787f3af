package lab

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/workload"
)

// joinLoad refuses, before anything is prepared or stored, a segment
// (whose load's fingerprint is mine) that is not of the load its group
// holds: one whose segments run another load
// or split it another number of ways, or a group that already holds this
// segment finished or running (its barriers would open at once on that
// load's arrivals, and show would merge the two). A segment the group
// holds unfinished, whose runner is gone, is this one started again: its
// experiment's ID is returned, to continue.
func (r *Runner) joinLoad(ctx context.Context, plan Plan, mine string) (again string, err error) {
	n, held, err := r.Store.JoinLoad(ctx, plan.SegmentGroup, plan.Segment.N, mine)
	if err != nil {
		return "", err
	}
	if n != plan.Segment.N {
		return "", &workload.InputError{Err: fmt.Errorf("--segment %s: the load of --segment-group %s is split %d ways, not %d; give the segment as I/%d, or the load a group of its own",
			plan.Segment, plan.SegmentGroup, n, plan.Segment.N, n)}
	}
	if diff := fingerprintDiff(held, mine); diff != "" {
		return "", &workload.InputError{Err: fmt.Errorf("--segment %s: --segment-group %s runs another load: %s; run the same command (or plan) in every segment, or give this load a group of its own",
			plan.Segment, plan.SegmentGroup, diff)}
	}
	members, err := r.Store.Members(ctx, plan.SegmentGroup)
	if err != nil {
		return "", err
	}
	for _, m := range members {
		if m.Segment != plan.Segment.String() {
			continue
		}
		if m.Status != "done" && m.Gone() != "" {
			again = m.ID // the latest, if it was started again before
			continue
		}
		return "", &workload.InputError{Err: fmt.Errorf("--segment-group %s already holds segment %s (experiment %s, %s): give each load a group of its own",
			plan.SegmentGroup, m.Segment, m.ID, m.Status)}
	}
	return again, nil
}

// barrier meets the load's other segments before its first run: all
// start a second after the last arrived.
func (r *Runner) barrier(ctx context.Context, plan Plan) (time.Time, error) {
	return r.meet(ctx, plan, plan.SegmentGroup, time.Second)
}

// meetBeforeRun meets the other segments again before the schedule's
// entry i, so run i of every segment measures the same seconds (runs of
// a fixed count end at different times on different hosts).
func (r *Runner) meetBeforeRun(ctx context.Context, plan Plan, i int) error {
	at, err := r.meet(ctx, plan, fmt.Sprintf("%s run %d", plan.SegmentGroup, i), 4*pollEvery(plan.Segment.N))
	if err != nil {
		return err
	}
	select {
	case <-time.After(time.Until(at)): // at once when the start passed while this segment looked
		return nil
	case <-ctx.Done():
		return ErrInterrupted
	}
}

// pollEvery is how often a segment at a barrier reads the store: 10
// times a second, 4 in a load of over 10 segments (100 segments then
// read 400 times a second, not 1,000). A run's barrier opens 4 polls after
// the last arrival, so every segment has read it by then.
func pollEvery(segments int) time.Duration {
	if segments > 10 {
		return 250 * time.Millisecond
	}
	return 100 * time.Millisecond
}

// meet records this segment's arrival at a barrier of its load (point
// names it) and waits for the others; all start delay after the last
// arrived, a time every segment reads from the store. It gives up, naming
// them, when segments that have not arrived ended or died, or after the
// barrier timeout.
func (r *Runner) meet(ctx context.Context, plan Plan, point string, delay time.Duration) (time.Time, error) {
	host, _ := os.Hostname()
	if err := r.Store.ArriveAtBarrier(ctx, point, plan.Segment.I, host); err != nil {
		return time.Time{}, err
	}
	timeout := plan.BarrierTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	deadline := time.Now().Add(timeout)
	poll := pollEvery(plan.Segment.N)
	looked := time.Now()    // for the missing that ended or died, every second
	var stoppedAt time.Time // since when some segment is stopped, waited for
	for {
		arrived, last, err := r.Store.Barrier(ctx, point)
		if err != nil {
			return time.Time{}, err
		}
		if len(arrived) >= plan.Segment.N {
			return last.Add(delay), nil
		}
		var missing []string
		for i := range plan.Segment.N {
			if !slices.Contains(arrived, i) {
				missing = append(missing, segment.Segment{I: i, N: plan.Segment.N}.String())
			}
		}
		if time.Since(looked) >= time.Second {
			looked = time.Now()
			gone, stopped, err := r.gone(ctx, plan, missing, point != plan.SegmentGroup)
			if err != nil {
				return time.Time{}, err
			}
			if len(gone) > 0 {
				return time.Time{}, fmt.Errorf("segment %s of %s: %s, so the load cannot run whole; this segment stops too (what ran is stored)",
					plan.Segment, plan.SegmentGroup, strings.Join(gone, "; "))
			}
			// A segment whose runner died may be started again (a pod
			// restarted, a --resume): it is waited for a while.
			switch {
			case len(stopped) == 0:
				stoppedAt = time.Time{}
			case stoppedAt.IsZero():
				stoppedAt = time.Now()
			}
			if len(stopped) > 0 && time.Since(stoppedAt) >= plan.RejoinTimeout {
				return time.Time{}, fmt.Errorf("segment %s of %s: %s, and was not started again within %v (--rejoin-timeout), so the load cannot run whole; this segment stops too (what ran is stored)",
					plan.Segment, plan.SegmentGroup, strings.Join(stopped, "; "), plan.RejoinTimeout)
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("segment %s of %s: segments %s never arrived within %v; start them (or give --barrier-timeout more)",
				plan.Segment, plan.SegmentGroup, strings.Join(missing, ", "), timeout)
		}
		select {
		case <-time.After(poll):
		case <-ctx.Done():
			return time.Time{}, ErrInterrupted
		}
	}
}

// gone says which of the missing segments will not arrive: gone, those
// that never will — their experiment finished, or (after the first run)
// they began none; stopped, those whose runner died or stopped before
// the end, which come back if started again. Before the first run a
// segment that began nothing may still come.
func (r *Runner) gone(ctx context.Context, plan Plan, missing []string, started bool) (gone, stopped []string, err error) {
	members, err := r.Store.Members(ctx, plan.SegmentGroup)
	if err != nil {
		return nil, nil, err
	}
	for _, seg := range missing {
		var why []string
		began, live, done := false, false, false
		for _, m := range members {
			if m.Segment != seg {
				continue
			}
			began = true
			if g := m.Gone(); g == "" {
				live = true // it may still come
			} else {
				why, done = append(why, g), done || m.Status == "done"
			}
		}
		switch {
		case live:
		case began && done:
			gone = append(gone, fmt.Sprintf("segment %s %s", seg, strings.Join(why, ", ")))
		case began:
			stopped = append(stopped, fmt.Sprintf("segment %s %s", seg, strings.Join(why, ", ")))
		case started:
			gone = append(gone, fmt.Sprintf("segment %s never began", seg))
		}
	}
	return gone, stopped, nil
}
