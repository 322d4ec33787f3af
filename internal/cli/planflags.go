package cli

import (
	"slices"

	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/plan"
)

// applyFlags puts the command line's rounds (--until-decided,
// --max-rounds), ports, segment and order into the plan, refusing what
// cannot run.
func applyFlags(p *plan.Plan, path string, o *ExperimentOptions) error {
	var err error
	if err := untilDecided(p, *o); err != nil {
		return err
	}
	if o.Ports != "" {
		if p.Ports, err = plan.ParsePortRange(o.Ports); err != nil {
			return usage("--ports %v", err)
		}
	}
	if err := checkPlanSegment(p, o); err != nil {
		return err
	}
	if err := lab.CheckRuns(p.Cells(), p.Warmup, p.Rounds); err != nil {
		return usage("%s: %v", path, err)
	}
	switch o.Order {
	case "":
	case lab.OrderRandom, lab.OrderSequential:
		p.Order = o.Order
	default:
		return usage("--order %q: want random or sequential", o.Order)
	}
	if p.MinRounds > 0 && p.Order == lab.OrderSequential {
		return usage("%s: stopping when decided (--until-decided, rounds: {min, max}) needs the random order: in sequential order a round is not every cell once", path)
	}
	if a := o.Output.along; a != "" {
		if why := p.AlongError(a); why != "" {
			return usage("--along %s: %s", a, why)
		}
		p.Along = a
	}
	return nil
}

// checkPlanSegment resolves --segment for a plan and refuses a plan whose
// load does not split (Plan.SplitError), and calibration, which is of one
// host.
func checkPlanSegment(p *plan.Plan, o *ExperimentOptions) error {
	if err := o.Output.validateSegment(); err != nil {
		return err
	}
	seg := o.Output.Segment
	if !seg.Split() {
		return nil
	}
	if why := p.SplitError(); why != "" {
		return usage("--segment %s: %s", seg, why)
	}
	if o.Output.Every > 0 && (p.Precondition != nil || slices.ContainsFunc(p.Workloads, func(w plan.Workload) bool { return len(w.Curve) > 0 || w.SLO != nil })) {
		// (Stopping when decided is refused in segments whatever the clock: Plan.SplitError.)
		return usage("--run-every: a curve, a search, a precondition and stopping when decided judge the whole load as it runs, which segments meeting no barrier in a shared store cannot; leave --run-every out")
	}
	if o.Calibrate {
		return usage("--segment %s: --calibrate measures one host's noise; run it without --segment", seg)
	}
	return nil
}

// untilDecided applies --until-decided and --max-rounds to the plan.
func untilDecided(p *plan.Plan, o ExperimentOptions) error {
	if !o.UntilDecided {
		if o.MaxRounds > 0 {
			return usage("--max-rounds bounds --until-decided; give both (or the plan's rounds: {min, max})")
		}
		return nil
	}
	if p.MinRounds == 0 { // the plan's rounds are the fewest
		p.MinRounds = max(p.Rounds, plan.MinSequentialRounds)
		p.Rounds = max(60, 10*p.MinRounds)
	}
	if o.MaxRounds > 0 {
		p.Rounds = o.MaxRounds
	}
	if p.Rounds < p.MinRounds {
		return usage("--max-rounds %d is below the %d rounds the plan runs first", p.Rounds, p.MinRounds)
	}
	return nil
}
