package analysis

import (
	"fmt"
	"strings"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
)

// Who fell behind a paced run's schedule. A start is late when it began
// over a millisecond after its place on the schedule, whatever made it
// late; the run's figures say where the lateness arose:
//
//   - generator-saturated: iolab itself used most of the machine's CPUs;
//   - generator-starved: most late starts were iolab's free workers' (they
//     woke late), or in most runs its own delay was past its share and accounts for
//     half the lateness or more (metrics.GeneratorBehind) —
//     other work had the CPUs, and the target is not what was measured. (A
//     starved client's goroutines wait in Go's own run queue too, which no
//     thread count sees: its service times swell with it, so a late start
//     after a long operation is no proof that the target was slow);
//   - concurrency-cap: every worker the run may add (--max-concurrency)
//     was busy: the cap, not the target alone, held the schedule back;
//   - late-starts: the generator kept its schedule and the target did
//     not, at this concurrency.
//
// One judgement, made here for every output (the text report, JSON, the
// HTML, a search's and a bisect's loads read the same warning code).
const (
	BehindSaturated = "generator-saturated"
	BehindStarved   = "generator-starved"
	BehindCap       = "concurrency-cap"
	BehindTarget    = "late-starts"
)

// lateStartShare is the share of a paced run's operations starting late
// past which a report says who fell behind.
const lateStartShare = 5.0 // percent

// Past these, the generator fell behind rather than the target: it used
// this share of the CPUs; this share of the late starts were its own (a
// free worker that started late). Or it was starved of CPU
// (metrics.StarvedReadyShare, metrics.StarvedWaitPct).
const (
	saturatedCPUsPct = 0.75
	starvedOwnShare  = 0.5
	starvedRunShare  = 0.5
)

// behindFigures are the medians of a paced cell's measured runs.
type behindFigures struct {
	latePct, ownLatePct float64 // of operations
	used                float64 // CPUs iolab used
	waitPct, waitUsOp   float64 // iolab's CPU wait; waitOK where the kernel counts it
	waitOK              bool
	delayed             float64 // the share of the runs the generator held back (metrics.GeneratorBehind)
	peak, cap           float64 // workers; cap 0: no reserve
	stall               float64 // the machine's CPU pressure (PSI share)
}

// judgeBehind names who fell behind, and says it: a warning code and its
// message, or "" when the schedule was kept.
func judgeBehind(name string, f behindFigures, cpus int) (code, message string) {
	if f.latePct <= lateStartShare {
		return "", ""
	}
	late := fmt.Sprintf("%s: %.0f%% of operations started late", name, f.latePct)
	wait := "" // its threads' wait for a CPU, where the kernel counts it
	if f.waitOK {
		wait = fmt.Sprintf("its threads waited for a CPU %.0f%% of the time they were ready to run (%s per operation)", f.waitPct, metrics.FormatNs(f.waitUsOp*1e3))
	}
	switch {
	case cpus > 0 && f.used >= saturatedCPUsPct*float64(cpus):
		return BehindSaturated, fmt.Sprintf(
			"%s while iolab itself used %.1f of the %d CPUs: iolab, not the target, fell behind the schedule, and the response times are its own queue; lower the rate, or split the load (--segment) over more client hosts",
			late, f.used, cpus)
	case f.ownLatePct >= starvedOwnShare*f.latePct, f.delayed >= starvedRunShare:
		machine := ""
		if f.stall > 0 {
			machine = fmt.Sprintf("; something waited for a CPU %.0f%% of the time on the machine", 100*f.stall)
		}
		own := ""
		if f.ownLatePct >= 0.5 {
			own = fmt.Sprintf(", %.0f%% by iolab's own delay (a free worker that started late)", f.ownLatePct)
		}
		if wait != "" {
			wait = "; " + wait
		}
		return BehindStarved, fmt.Sprintf(
			"%s%s%s, while it used %.2g of %d CPUs: iolab was starved of CPU by other work%s — the target is not what these response times measure; run iolab where it has CPUs of its own, or at a higher priority",
			late, own, wait, f.used, cpus, machine)
	case f.cap > 0 && f.peak >= f.cap:
		return BehindCap, fmt.Sprintf(
			"%s with all %.0f workers --max-concurrency allows at work: the cap held the schedule back; raise --max-concurrency if the target has room",
			late, f.cap)
	}
	if wait != "" {
		wait = ", " + wait
	}
	return BehindTarget, fmt.Sprintf(
		"%s (iolab used %.1f of %d CPUs%s): the target, at this concurrency, did not keep the schedule; response times count the wait, service times do not — raise --concurrency if the target has room",
		late, f.used, cpus, wait)
}

// lateStartWarnings say, for each paced cell whose operations started
// late in more than lateStartShare percent of its measured runs (their
// median), who fell behind (judgeBehind).
func lateStartWarnings(dm derivedMetrics, cells []store.Cell, perCell [][]store.Run, cpus int) []stats.Warning {
	var out []stats.Warning
	for i, c := range cells {
		if Searched(c) {
			continue // a search fails loads the target could not keep up with
		}
		f, ok := behindOf(dm, perCell[i], cpus)
		if !ok {
			continue
		}
		name := c.Name
		if c.Variant != "" {
			name = c.Variant + "/" + c.Name
		}
		if code, msg := judgeBehind(name, f, cpus); code != "" {
			out = append(out, stats.Warning{Code: code, Message: msg})
		}
	}
	return out
}

// behindOf is the medians of a cell's measured paced runs (false: none).
func behindOf(dm derivedMetrics, runs []store.Run, cpus int) (behindFigures, bool) {
	var late, own, used, wait, waitOp, peak, cap, stall []float64
	hit := 0
	for _, run := range runs {
		if run.Warmup || run.Status != store.StatusOK || run.Result.Duration <= 0 {
			continue
		}
		m := dm.of(run.Result)
		share, ok := m["late_start_pct"]
		if !ok {
			continue
		}
		late, own = append(late, share), append(own, m["gen_late_start_pct"])
		if metrics.GeneratorBehind(m, run.Result.Duration, cpus) {
			hit++
		}
		secs := run.Result.Duration.Seconds()
		used = append(used, m["cpu_s"]/secs)
		if w, ok := m["gen_cpu_wait_pct"]; ok {
			wait, waitOp = append(wait, w), append(waitOp, m["gen_cpu_wait_us_per_op"])
		}
		peak, cap = append(peak, m["workers_peak"]), append(cap, m["workers_cap"])
		if s, ok := m["env_cpu_stall"]; ok {
			stall = append(stall, s)
		}
	}
	if len(late) == 0 {
		return behindFigures{}, false
	}
	med := func(v []float64) float64 {
		if len(v) == 0 {
			return 0
		}
		return stats.Summarize(v).Median
	}
	return behindFigures{latePct: med(late), ownLatePct: med(own), used: med(used), waitPct: med(wait), waitUsOp: med(waitOp),
		waitOK: len(wait) > 0, delayed: float64(hit) / float64(len(late)), peak: med(peak), cap: med(cap), stall: med(stall)}, true
}

// genDelayWarnings flag, per cell, the measured runs whose generator's
// own delay was over metrics.GenDelayShare of the median they measured
// (gen_delay_pct), or whose generator was starved (ready to run on half
// the CPUs or more, and waiting longer than it ran): those runs measured
// iolab as much as the target — a burst of other work on the machine
// shows as the runs it hit.
func genDelayWarnings(dm derivedMetrics, cells []store.Cell, perCell [][]store.Run, cpus int) []stats.Warning {
	var out []stats.Warning
	for i, c := range cells {
		type hit struct {
			run store.Run
			pct float64
		}
		var hits []hit
		measured := 0
		for _, run := range perCell[i] {
			if run.Warmup || run.Status != store.StatusOK || run.Result == nil {
				continue
			}
			measured++
			m := dm.of(run.Result)
			if metrics.GeneratorDelayed(m, run.Result.Duration, cpus) {
				hits = append(hits, hit{run, m["gen_delay_pct"]})
			}
		}
		if len(hits) == 0 {
			continue
		}
		name := c.Name
		if c.Variant != "" {
			name = c.Variant + "/" + c.Name
		}
		var runs []string
		for _, h := range hits {
			runs = append(runs, fmt.Sprintf("round %d slot %d (%.0f%%)", h.run.Round, h.run.Slot, h.pct))
		}
		out = append(out, stats.Warning{Code: "generator-delayed", Message: fmt.Sprintf(
			"%s: in %d of %d runs iolab was starved of CPU, or its own delay per operation (its threads' wait for a CPU, or its free workers' late starts) was over %.0f%% of the median it measured (response time, else service time) — those runs measured the client as much as the target: %s",
			name, len(hits), measured, metrics.GenDelayShare, strings.Join(runs, ", "))})
	}
	return out
}

// genDelayDiffers warns, per cell compared across variants, when iolab's
// own delay (the median of gen_delay_pct) was past its share of what was
// measured in one variant's runs and not in another's: a difference
// between them is then at least in part the client's, not the targets'.
func genDelayDiffers(dm derivedMetrics, cells []store.Cell, perCell [][]store.Run) []stats.Warning {
	type side struct {
		variant string
		pct     float64
	}
	byCell := map[string][]side{}
	var order []string
	for i, c := range cells {
		if c.Variant == "" {
			continue
		}
		var pcts []float64
		for _, run := range perCell[i] {
			if run.Warmup || run.Status != store.StatusOK || run.Result == nil {
				continue
			}
			if pct, ok := dm.of(run.Result)["gen_delay_pct"]; ok {
				pcts = append(pcts, pct)
			}
		}
		if len(pcts) == 0 {
			continue
		}
		if _, seen := byCell[c.Name]; !seen {
			order = append(order, c.Name)
		}
		byCell[c.Name] = append(byCell[c.Name], side{c.Variant, stats.Summarize(pcts).Median})
	}
	var out []stats.Warning
	for _, name := range order {
		sides := byCell[name]
		hi, lo := sides[0], sides[0]
		for _, s := range sides {
			if s.pct > hi.pct {
				hi = s
			}
			if s.pct < lo.pct {
				lo = s
			}
		}
		if hi.pct > metrics.GenDelayShare && lo.pct <= metrics.GenDelayShare/2 {
			out = append(out, stats.Warning{Code: "generator-differs", Message: fmt.Sprintf(
				"%s: iolab's own delay was %.0f%% of the median measured in %s's runs and %.0f%% in %s's: the client, not only the target, differed between them — compare them on a machine where iolab has CPUs of its own",
				name, hi.pct, hi.variant, lo.pct, lo.variant)})
		}
	}
	return out
}
