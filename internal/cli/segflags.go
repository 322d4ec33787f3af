package cli

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/segment"
)

// addSegmentFlags registers how a process runs its segment of a load.
func (o *RepeatOptions) addSegmentFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.segment, "segment", "", "run segment I of N of the load (I/N: its share of concurrency, jobs and rate, names of its own); default from the launcher: JOB_COMPLETION_INDEX and IOLAB_SEGMENTS (iolab k8s job), mpirun's and mpiexec's ranks, srun's tasks")
	fs.StringVar(&o.SegmentGroup, "segment-group", "", "the name of the load the segments share, unique to it (default: from the command and --start-at)")
	fs.Var(flagval.Duration{P: &o.Every}, "run-every", "with --start-at: start run i at the start + i x this (every run, warm-up included), meeting no barrier: "+
		"segments with SQLite files of their own run in step by the clock, and iolab import merges them afterwards")
	fs.StringVar(&o.startAt, "start-at", "", "start the first run at this instant (2026-11-23T18:00:00Z, or +30s); segments without it meet at a barrier in the store, and all meet again before every run")
	o.BarrierTimeout = 5 * time.Minute
	fs.Var(flagval.Duration{P: &o.BarrierTimeout}, "barrier-timeout", "how long a segment waits at a barrier for the others")
	o.StoreGrace = 3 * time.Minute
	fs.Var(flagval.Duration{P: &o.StoreGrace}, "store-grace", "how long a store that went away (a PostgreSQL restarting) is waited for while the load runs — the runs go on as measured, their seconds kept until it returns — before it stops saying so")
	o.RejoinTimeout = time.Minute
	fs.Var(flagval.Duration{P: &o.RejoinTimeout}, "rejoin-timeout", "how long segments wait for one whose runner died to be started again (the same command, or --resume), before they stop too; 0 stops them at once")
}

// validateSegment resolves --segment (or the Job's environment) and
// --start-at.
func (o *RepeatOptions) validateSegment() error {
	var err error
	if o.segment != "" {
		if o.Segment, err = segment.Parse(o.segment); err != nil {
			return usage("--segment %v", err)
		}
	} else {
		var grp string
		if o.Segment, grp, err = segment.FromEnv(); err != nil {
			return usage("%v", err)
		}
		if o.SegmentGroup == "" {
			o.SegmentGroup = grp // the launcher's job
		}
	}
	if o.startAt != "" {
		if o.StartAt, err = segment.ParseStart(o.startAt, time.Now()); err != nil {
			return usage("--start-at %v", err)
		}
	}
	if o.Segment.Split() && o.SegmentGroup == "" && o.StartAt.IsZero() {
		return usage("--segment %s: give --segment-group NAME (unique to this load) or --start-at TIME, so the segments find each other", o.Segment)
	}
	switch {
	case o.Every > 0 && o.StartAt.IsZero():
		return usage("--run-every %v: give --start-at too: run i starts at the start + i x %v", o.Every, o.Every)
	case o.Every > 0 && o.Segment.Split() && (len(o.Gates.FailOn) > 0 || len(o.Gates.Limits) > 0):
		return usage("--run-every: the segments share no store, so no segment can judge a gate on the whole load; " +
			"merge them (iolab import A.db B.db --db all.db) and judge it there: iolab show --db all.db --gate ... (or --fail-on)")
	}
	return nil
}

// segmentPlan puts the segment into the plan: its group (from the command
// without --segment and the start time, when not named) and, unless
// --seed was given, a seed from the group, so every segment runs the cells
// in the same order.
func (o *RepeatOptions) segmentPlan(plan *lab.Plan) {
	if !o.Segment.Split() {
		return
	}
	grp := o.SegmentGroup
	if grp == "" {
		h := fnv.New64a()
		for _, part := range strings.Fields(plan.Command) {
			if !strings.HasPrefix(part, "--segment=") && !strings.HasPrefix(part, "--db=") && !strings.HasPrefix(part, "--lat-log=") {
				h.Write([]byte(part + " "))
			}
		}
		grp = fmt.Sprintf("%s-%x", o.StartAt.UTC().Format("20060102T150405.000"), h.Sum64())
	}
	if o.seedFromClock {
		o.Seed = segment.GroupSeed(grp)
	}
	plan.Segment, plan.SegmentGroup, plan.StartAt, plan.BarrierTimeout, plan.RejoinTimeout = o.Segment, grp, o.StartAt, o.BarrierTimeout, o.RejoinTimeout
	plan.Every = o.Every
}
