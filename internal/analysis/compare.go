package analysis

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/workload"
)

// ComparisonView is one variant against the baseline on one metric of one
// cell.
type ComparisonView struct {
	Cell     string `json:"cell"`
	Variant  string `json:"variant"`
	Baseline string `json:"baseline"`
	Metric   string `json:"metric"`
	// Primary is the cell's first metric, whose verdicts Holm's
	// correction covers across the report; the others stand alone.
	Primary bool `json:"primary"`
	// Failed, for a Failed verdict, says which side has no measured run
	// that succeeded, and why.
	Failed string `json:"failed,omitempty"`
	stats.Comparison
}

// PrimaryMetric is the metric a workload kind is judged by first, as its
// package registered it; "" for a kind this iolab does not know (a store
// written by another version), whose cells are listed and never compared.
func PrimaryMetric(kind string) string {
	k, _ := workload.Lookup(kind)
	return k.Primary
}

// serverMetrics are compared for every workload whose variants run a
// server iolab watched.
var serverMetrics = []string{"server_cpu_s", "server_cpu_us_per_op", "server_cpu_ns_per_byte", "server_rss_peak_bytes", "server_read_bytes", "server_write_bytes", "cgroup_memory_peak_bytes"}

// comparedMetrics are the metrics compared for a workload kind, when
// measured: its own, as registered, and the server's.
func comparedMetrics(kind string) []string {
	k, ok := workload.Lookup(kind)
	if !ok {
		return nil
	}
	return append(slices.Clone(k.Metrics), serverMetrics...)
}

// compare fills r.Comparisons and the experiment-wide diagnosis.
func (r *Report) compare(d *store.Data, perCell [][]store.Run, opts Options) {
	variants := map[string]bool{}
	for _, c := range d.Cells {
		variants[c.Variant] = true
	}
	if len(variants) < 2 {
		return
	}
	r.Baseline, r.Threshold = opts.Baseline, opts.Threshold
	if r.Baseline == "" {
		r.Baseline = d.Cells[0].Variant
	}
	if r.Threshold <= 0 {
		r.Threshold = DefaultThreshold
	}
	var cmp comparing
	for _, group := range groups(d.Cells) {
		base := -1
		for _, i := range group {
			if d.Cells[i].Variant == r.Baseline {
				base = i
			}
		}
		if base < 0 {
			continue
		}
		wl := d.Cells[base].Workload
		if PrimaryMetric(wl) == "" {
			continue // unknownKinds says so
		}
		r.Warnings = append(r.Warnings, driftWarnings(r.derived, d.Cells[base], perCell[base], opts.Order)...)
		r.Warnings = append(r.Warnings, machineWarmup(r.derived, d.Cells, group, perCell, opts.primaryOf(wl))...)
		for _, i := range group {
			if i != base {
				r.comparePair(&cmp, d.Cells[base], d.Cells[i], perCell[base], perCell[i], opts)
			}
		}
	}
	r.judgeFamily(cmp.primaries, opts)
	for _, s := range cmp.settling {
		r.applyWarmup(s, opts)
	}
	if sr := opts.Sequential; sr != nil {
		r.Rounds = r.roundsView(d, *sr)
	}
	if opts.Order == "sequential" {
		// Nothing protects these intervals from drift: each variant ran
		// in a stretch of its own, so a change of the machine between
		// stretches is a difference between variants.
		for i := range r.Comparisons {
			r.Comparisons[i].Withhold(stats.WithheldSequential)
		}
		r.Warnings = append(r.Warnings, stats.Warning{Code: "sequential-order", Message: "runs were scheduled in sequential order " +
			"(each variant's rounds back to back), as legacy benchmarks do: any drift of the target during the experiment " +
			"shows up as a difference between variants, so no verdict is drawn (the intervals are shown, unprotected by randomisation); use the default random order for decisions"})
	}
	// Said once every verdict is final, so that none says otherwise.
	for _, s := range cmp.settling {
		for j := s.first; j < s.end; j++ {
			if c := r.Comparisons[j]; c.Primary && s.w.Unsettled {
				r.Warnings = append(r.Warnings, unsettledWarning(c, s.w))
			}
		}
	}
}

// comparing is what compare gathers from the pairs before it judges them
// together.
type comparing struct {
	primaries []pairObs  // of each primary comparison, in order
	settling  []warmupOf // what the warm-up check found, per pair
}

// pairObs are the observations of one primary comparison.
type pairObs struct{ base, variant []stats.Obs }

// warmupOf is what the warm-up check found for the comparisons [first, end)
// of one pair of cells.
type warmupOf struct {
	first, end int
	w          stats.Warmup
}

// comparePair adds the comparisons of one variant's cell against the
// baseline's, every metric the kind compares, each verdict not yet
// adjusted for the family (judgeFamily) nor for the warm-up (applyWarmup).
func (r *Report) comparePair(cmp *comparing, base, c store.Cell, baseRuns, runs []store.Run, opts Options) {
	wl := base.Workload
	primary := opts.primaryOf(wl)
	// Rounds still warming up, found on the primary metric, leave every
	// metric of the comparison; a side that has not settled withholds all
	// its verdicts.
	w := r.checkWarmup(base, c, baseRuns, runs, primary, opts.Sequential != nil)
	first := len(r.Comparisons)
	if why := failedSide(base, baseRuns, c, runs); why != "" {
		// Kept, not dropped: a cell whose variant failed every run is
		// what the study is about.
		def, _ := metrics.Describe(primary)
		desc := def.Stat()
		if lower, custom := opts.Custom[primary]; custom { // a bisected metric the command printed
			desc = stats.Metric{LowerIsBetter: lower}
		}
		r.Comparisons = append(r.Comparisons, ComparisonView{Cell: c.Name, Variant: c.Variant, Baseline: r.Baseline,
			Metric: primary, Primary: true, Failed: why, Comparison: stats.NoComparison(desc)})
		return
	}
	compared := comparedMetrics(wl)
	if k, _ := workload.Lookup(wl); k.OutputMetrics {
		compared = append(compared, slices.Sorted(maps.Keys(opts.Custom))...)
	}
	for _, m := range compared {
		def, declared := metrics.Describe(m)
		desc, known := def.Stat(), declared && def.Judged()
		if lower, custom := opts.Custom[m]; custom {
			desc, known = stats.Metric{LowerIsBetter: lower}, true
		}
		bo, vo := observations(r.derived, baseRuns, m, w.From), observations(r.derived, runs, m, w.From)
		if !known || len(bo) == 0 || len(vo) == 0 || (allZero(bo) && allZero(vo)) {
			continue // not measured, or nothing on either side (a server that wrote no bytes)
		}
		view := ComparisonView{Cell: c.Name, Variant: c.Variant, Baseline: r.Baseline,
			Metric: m, Primary: m == primary, Comparison: stats.Compare(bo, vo, desc, r.Threshold)}
		view.Kept(w)
		if view.Primary {
			cmp.primaries = append(cmp.primaries, pairObs{bo, vo})
		}
		r.Comparisons = append(r.Comparisons, view)
	}
	cmp.settling = append(cmp.settling, warmupOf{first, len(r.Comparisons), w})
}

// judgeFamily decides the primary comparisons as one family. Rates and
// times derived from the same runs (bytes/s beside ops/s, p99 beside
// both) would count one effect several times; they keep their own,
// unadjusted verdicts.
func (r *Report) judgeFamily(primaries []pairObs, opts Options) {
	var family []*stats.Comparison
	for i := range r.Comparisons {
		if r.Comparisons[i].Primary && r.Comparisons[i].Verdict != stats.Failed {
			family = append(family, &r.Comparisons[i].Comparison)
		}
	}
	if sr := opts.Sequential; sr != nil {
		// Looked at after every round: the primaries are judged by the
		// confidence sequence, which holds at every look.
		s := stats.NewSequential(r.Threshold, sr.Min, sr.Max, len(family))
		for i, c := range family {
			*c = s.Compare(primaries[i].base, primaries[i].variant, stats.Metric{LowerIsBetter: c.LowerIsBetter})
		}
		return
	}
	stats.Finish(family, r.Threshold)
}

// applyWarmup applies what the warm-up check found to one pair's
// comparisons. It was found on the primary metric, and its direction is
// on the primary's scale: whether it withholds is decided there, for
// every metric of the comparison (a latency's estimate runs the other way
// from a throughput's).
func (r *Report) applyWarmup(s warmupOf, opts Options) {
	var primary *stats.Comparison
	for j := s.first; j < s.end; j++ {
		if c := &r.Comparisons[j]; c.Primary {
			c.ApplyWarmup(s.w, opts.Sequential != nil)
			primary = &c.Comparison
		}
	}
	decided := ""
	for j := s.first; j < s.end; j++ {
		c := &r.Comparisons[j]
		if !c.Primary && primary != nil {
			c.FollowWarmup(primary, s.w)
		}
		if s.w.Unchecked && decided == "" && (c.Verdict == stats.Faster || c.Verdict == stats.Slower) {
			decided = fmt.Sprintf("%s/%s %s: %s on %d rounds, too few to tell a variant still warming up, or drift within rounds, from a difference (%d or more rounds check both); treat it as provisional",
				c.Variant, c.Cell, c.Metric, c.Verdict, c.N, stats.MinWarmupPairs)
		}
	}
	if decided != "" {
		r.Warnings = append(r.Warnings, stats.Warning{Code: CodeFewRounds, Message: decided})
	}
}

// failedSide says which of a comparison's two cells has measured runs
// that failed and none that succeeded ("b: 3 of 3 measured runs failed;
// the first error: ..."), or "". A side whose runs were only cut short
// (interrupted, never finished) has nothing to compare yet, and fails
// nothing.
func failedSide(base store.Cell, baseRuns []store.Run, c store.Cell, runs []store.Run) string {
	var why []string
	for _, side := range []struct {
		cell store.Cell
		runs []store.Run
	}{{base, baseRuns}, {c, runs}} {
		measured, ok, failed, firstErr := 0, 0, 0, ""
		for _, run := range side.runs {
			if run.Warmup {
				continue
			}
			measured++
			switch run.Status {
			case store.StatusOK:
				ok++
			case store.StatusFailed:
				if failed++; firstErr == "" {
					firstErr = run.Error
				}
			}
		}
		if ok > 0 || failed == 0 {
			continue
		}
		w := fmt.Sprintf("%s: %d of %d measured runs failed", side.cell.Variant, failed, measured)
		if firstErr != "" {
			w += "; the first error: " + firstErr
		}
		why = append(why, w)
	}
	return strings.Join(why, "; ")
}

func allZero(obs []stats.Obs) bool {
	for _, o := range obs {
		if o.Value != 0 {
			return false
		}
	}
	return true
}

// groups lists, per cell name, the indexes of its cells (one per variant),
// in the order the names first appear.
func groups(cells []store.Cell) [][]int {
	var order []string
	byName := map[string][]int{}
	for i, c := range cells {
		if Searched(c) {
			continue // its variants' runs are at loads of their own
		}
		if _, ok := byName[c.Name]; !ok {
			order = append(order, c.Name)
		}
		byName[c.Name] = append(byName[c.Name], i)
	}
	out := make([][]int, 0, len(order))
	for _, n := range order {
		out = append(out, byName[n])
	}
	return out
}

// observations are a metric's values over the measured, successful runs
// of rounds from on.
func observations(dm derivedMetrics, runs []store.Run, metric string, from int) []stats.Obs {
	var out []stats.Obs
	for _, run := range runs {
		if run.Warmup || run.Status != store.StatusOK || run.Round < from {
			continue
		}
		if v, ok := dm.of(run.Result)[metric]; ok {
			out = append(out, stats.Obs{Round: run.Round, Slot: run.Slot, Value: v})
		}
	}
	return out
}

// driftWarnings says how much the baseline drifted over the experiment, and
// whether the comparisons survive it.
func driftWarnings(dm derivedMetrics, c store.Cell, runs []store.Run, order string) []stats.Warning {
	metric := PrimaryMetric(c.Workload)
	type point struct {
		at    int64
		value float64
	}
	var pts []point
	for _, run := range runs {
		if run.Warmup || run.Status != store.StatusOK {
			continue
		}
		pts = append(pts, point{run.Result.Start.UnixNano(), dm.of(run.Result)[metric]})
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].at < pts[j].at })
	values := make([]float64, len(pts))
	for i, p := range pts {
		values[i] = p.value
	}
	t := stats.Kendall(values)
	if len(values) < 6 || t.P >= 0.05 {
		return nil
	}
	k := max(len(values)/5, 1)
	first, last := mean(values[:k]), mean(values[len(values)-k:])
	change := fmt.Sprintf("rose %.2gx", last/first)
	if last < first {
		change = fmt.Sprintf("fell %.2gx", first/last)
	}
	valid := "order was randomized and comparisons are paired per round, so they remain valid"
	if order == "sequential" {
		valid = "order was sequential, so this drift is mixed into every comparison: rerun with the random order"
	}
	return []stats.Warning{{Code: "baseline-trend", Message: fmt.Sprintf(
		"%s %s of baseline %s %s from the first runs to the last (Kendall tau %.2f, p=%.3f); %s",
		c.Name, metric, c.Variant, change, t.Tau, t.P, valid)}}
}

// stallWarnings names a resource whose waiting moved the cell's primary
// metric run by run: when throughput falls as the share of time tasks
// waited for a CPU (or memory, or — for a workload that does not use the
// disk under test — I/O) rises, the benchmark was starved by other work,
// whatever else the numbers suggest.
func stallWarnings(dm derivedMetrics, c store.Cell, runs []store.Run) []stats.Warning {
	metric := PrimaryMetric(c.Workload)
	def, _ := metrics.Describe(metric)
	lower := def.Better == metrics.LowerIsBetter
	var ws []stats.Warning
	for _, res := range []struct{ key, what string }{{"env_cpu_stall", "a CPU"}, {"env_memory_stall", "memory"}, {"env_io_stall", "I/O"}} {
		if res.key == "env_io_stall" && ownsIO(c, runs) {
			continue // its own I/O makes I/O stall
		}
		type point struct {
			stall, value float64
			at           time.Time
		}
		var pts []point
		for _, run := range runs {
			if run.Warmup || run.Status != store.StatusOK || run.Result == nil {
				continue
			}
			m := dm.of(run.Result)
			st, ok1 := m[res.key]
			v, ok2 := m[metric]
			if ok1 && ok2 {
				pts = append(pts, point{st, v, run.Result.Start})
			}
		}
		if len(pts) < 6 {
			continue
		}
		sort.SliceStable(pts, func(i, j int) bool { return pts[i].stall < pts[j].stall })
		worst := pts[len(pts)-1]
		if worst.stall < 0.10 {
			continue
		}
		values := make([]float64, len(pts))
		for i, p := range pts {
			values[i] = p.value
		}
		t := stats.Kendall(values) // the metric's values in order of rising stall
		if t.P >= 0.05 || (t.Tau > -0.4 && !lower) || (t.Tau < 0.4 && lower) {
			continue
		}
		name := c.Name
		if c.Variant != "" {
			name = c.Variant + "/" + c.Name
		}
		second := ""
		if at, share := worstSecond(runs, res.key); share > 0 {
			second = fmt.Sprintf(" (its worst second, at %s: %.0f%%)", at.Local().Format("15:04:05"), 100*share)
		}
		ws = append(ws, stats.Warning{Code: "starved", Message: fmt.Sprintf(
			"%s %s got worse as tasks waited longer for %s (Kendall tau %.2f, p=%.3f over %d runs); in the worst run, at %s, some task waited for %s %.0f%% of the time%s: other work starved the benchmark — rerun on a quiet machine, or with fewer threads than CPUs",
			name, metric, res.what, t.Tau, t.P, len(pts), worst.at.Local().Format("15:04:05"), res.what, 100*worst.stall, second)})
	}
	return ws
}

// worstSecond is the second of the measured runs' machine series in which
// tasks waited longest for the resource of key (env_cpu_stall ...).
func worstSecond(runs []store.Run, key string) (time.Time, float64) {
	var at time.Time
	worst := 0.0
	for _, run := range runs {
		if run.Warmup || run.Result == nil {
			continue
		}
		for _, sec := range run.Result.EnvSeries {
			v := map[string]float64{"env_cpu_stall": sec.CPUStall, "env_memory_stall": sec.MemoryStall, "env_io_stall": sec.IOStall}[key]
			if v > worst {
				worst, at = v, time.Unix(sec.T, 0)
			}
		}
	}
	return at, worst
}

// checkWarmup runs stats.CheckWarmup on a comparison's primary metric
// and says what it found: the rounds left out and which side was still
// warming up over them, or that a side has not settled at all (its
// verdicts withheld), naming the variant.
func (r *Report) checkWarmup(base, c store.Cell, baseRuns, runs []store.Run, metric string, looks bool) stats.Warmup {
	_, _, w := stats.CheckWarmup(observations(r.derived, baseRuns, metric, 0), observations(r.derived, runs, metric, 0), looks)
	who := c.Variant
	if w.Side == 0 {
		who = base.Variant + " (the baseline)"
	}
	if w.Cut > 0 && !w.Unsettled {
		r.Warnings = append(r.Warnings, stats.Warning{Code: CodeWarmupLeftOut, Message: fmt.Sprintf(
			"%s/%s: its first %d measured rounds were left out of its comparisons: %s was still warming up (the per-round ratio of %s %s trended until then)",
			c.Variant, c.Name, w.Cut, who, metric, c.Variant+" to "+base.Variant)})
	}
	return w
}

// unsettledWarning says that a side of the comparison c (the primary
// metric's) still warmed up when the rounds ended, and what that did to
// its verdicts: withheld, kept as larger than the trend could make, or
// kept as the trend runs against it — as c's verdict says.
func unsettledWarning(c ComparisonView, w stats.Warmup) stats.Warning {
	trend := fmt.Sprintf("the per-round ratio of %s to %s still trends after leaving out the first %d of its rounds", c.Variant, c.Baseline, w.Cut)
	switch {
	case c.OutgrewWarmup:
		return stats.Warning{Code: stats.CodeVariantWarmup, Message: fmt.Sprintf(
			"%s/%s %s: still warming up — %s; the verdict stands (%s), as the difference is larger than that trend could make, but the size is not settled; give the plan more warm-up rounds (warmup: or warmup_per_variant:)",
			c.Variant, c.Cell, c.Metric, trend, c.Verdict)}
	case c.Withheld == "" && (c.Verdict == stats.Faster || c.Verdict == stats.Slower):
		return stats.Warning{Code: stats.CodeVariantWarmup, Message: fmt.Sprintf(
			"%s/%s %s: still warming up — %s, the other way from the difference; the verdict stands (%s), as the settled level would only widen it, but the size is not settled; give the plan more warm-up rounds (warmup: or warmup_per_variant:)",
			c.Variant, c.Cell, c.Metric, trend, c.Verdict)}
	}
	return stats.Warning{Code: stats.CodeVariantWarmup, Message: fmt.Sprintf(
		"%s/%s %s: still warming up — %s, so its verdicts are withheld; give the plan more warm-up rounds (warmup: or warmup_per_variant:)",
		c.Variant, c.Cell, c.Metric, trend)}
}

// CodeWarmupLeftOut marks rounds left out of a comparison as still
// warming up; CodeMachineWarmup a start every variant of a cell shared.
const (
	CodeWarmupLeftOut = "warmup-left-out"
	// CodeFewRounds marks a verdict drawn from fewer rounds than a
	// warm-up can be checked in.
	CodeFewRounds     = "few-rounds"
	CodeMachineWarmup = "machine-warmup"
)

// machineWarmup names a start that every variant of a cell shared — each
// one's first measured runs unlike its later ones (stats.EarlyRuns) —
// as the machine's or the target's, not a variant's: the paired rounds
// cancel it, and no variant is to blame.
func machineWarmup(dm derivedMetrics, cells []store.Cell, group []int, perCell [][]store.Run, metric string) []stats.Warning {
	if len(group) < 2 {
		return nil
	}
	most := 0
	for _, i := range group {
		obs := observations(dm, perCell[i], metric, 0)
		values := make([]float64, len(obs))
		for j, o := range obs {
			values[j] = o.Value
		}
		k := stats.EarlyRuns(values)
		if k == 0 {
			return nil
		}
		most = max(most, k)
	}
	first := "first run was"
	if most > 1 {
		first = fmt.Sprintf("first runs (up to %d) were", most)
	}
	return []stats.Warning{{Code: CodeMachineWarmup, Message: fmt.Sprintf(
		"%s %s: every variant's %s unlike its later ones: the machine or the target changed (a warm-up, a step), not one variant; the paired rounds cancel it",
		cells[group[0]].Name, metric, first)}}
}

// roundsView says how an experiment that stops when decided ended.
func (r *Report) roundsView(d *store.Data, sr store.SequentialRounds) *RoundsView {
	v := &RoundsView{Min: sr.Min, Max: sr.Max, Decided: true}
	for _, run := range d.Runs {
		if !run.Warmup {
			v.Ran = max(v.Ran, run.Round+1)
		}
	}
	for _, c := range r.Comparisons {
		if c.Primary && c.Verdict == stats.Inconclusive {
			v.Decided = false
		}
	}
	return v
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	if len(v) == 0 {
		return math.NaN()
	}
	return s / float64(len(v))
}

// MarshalJSON writes the comparison flat, its cell beside its figures.
func (c ComparisonView) MarshalJSON() ([]byte, error) {
	m := c.Comparison.Fields()
	m["cell"], m["variant"], m["baseline"], m["metric"], m["primary"] = c.Cell, c.Variant, c.Baseline, c.Metric, c.Primary
	if c.Failed != "" {
		m["failed"] = c.Failed
	}
	return json.Marshal(m)
}

// ownIOFloor is the block I/O a run of a workload that does not touch a
// disk by kind (a command) must do, at the median, for the I/O others
// waited for to count as possibly its own.
const ownIOFloor = 1 << 20

// ownsIO says whether the cell's I/O stall may be its own: a kind whose
// target is storage, or one whose runs read and wrote at least ownIOFloor
// of block I/O each at the median (a command that writes an index).
func ownsIO(c store.Cell, runs []store.Run) bool {
	if k, _ := workload.Lookup(c.Workload); k.TouchesDisk {
		return true
	}
	var bytes []float64
	for _, run := range runs {
		if !run.Warmup && run.Result != nil {
			bytes = append(bytes, metrics.BlockIOBytes(run.Result.Extra))
		}
	}
	return len(bytes) > 0 && stats.Summarize(bytes).Median >= ownIOFloor
}
