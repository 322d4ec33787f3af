// Package analysis turns stored runs into the report model: per-run
// numbers, per-cell summaries with confidence intervals, comparisons of
// variants with their verdicts, the warnings that say why numbers may be
// noisy, scale fits, the merge of a load's segments, histories across
// experiments. Build assembles a Report from store data only, so `iolab
// show` prints exactly what the live run printed. It renders nothing:
// package report writes the model as text, Markdown, JSON, CSV, NDJSON,
// benchfmt, fio's JSON and HTML, each a func(w io.Writer, ...) error of
// the model alone.
package analysis

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/iolab/iolab/internal/envinfo"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/workload"
)

// Report is one experiment as shown and as printed by --json.
type Report struct {
	Experiment string `json:"experiment"`
	Name       string `json:"name"`
	Command    string `json:"command"`
	Status     string `json:"status"`
	// Notes are what the user said about the experiment.
	Notes []store.Note `json:"notes,omitempty"`
	Runs  []RunView    `json:"runs"`
	// Summary is the summary of the only cell, for single-cell experiments
	// (iolab fs); Cells always has every cell's.
	Summary map[string]stats.Summary `json:"summary,omitempty"`
	Cells   []CellView               `json:"cells"`
	// Comparisons of each variant against the baseline, per cell and metric,
	// when the experiment has variants.
	Comparisons []ComparisonView `json:"comparisons,omitempty"`
	Baseline    string           `json:"baseline,omitempty"`
	// Along is the matrix field the comparisons are along, when they are
	// not variant against variant (Options.Along): each compared cell's
	// "variant" is then its value of the field.
	Along     string  `json:"along,omitempty"`
	Threshold float64 `json:"threshold,omitempty"`
	// Scales are the scale studies' costs by scale and their fits; Fits
	// the same models flat.
	Scales []ScaleView `json:"-"`
	Fits   []FitView   `json:"fits,omitempty"`
	// Curves are the load–latency curves of the workloads with a curve:.
	Curves []CurveView `json:"curves,omitempty"`
	// Preconditioned says how the warm-up rounds of a plan with a
	// precondition: ended.
	Preconditioned *PreconditionView `json:"preconditioned,omitempty"`
	// SLOs are the searches for the highest rate an SLO allows, and
	// SLOComparisons each variant's against the baseline's.
	SLOs           []SLOView       `json:"slos,omitempty"`
	SLOComparisons []SLOComparison `json:"slo_comparisons,omitempty"`
	// Rounds, for an experiment that stops when decided, says when it did.
	Rounds   *RoundsView     `json:"rounds,omitempty"`
	Warnings []stats.Warning `json:"warnings"`
	// Colour marks verdicts with colour in the text report (a terminal
	// that did not ask for NO_COLOR).
	Colour bool              `json:"-"`
	Env    *envinfo.Snapshot `json:"env,omitempty"`
	// Segments, for a load run in segments, is each one's share beside
	// the merge the rest of the report is.
	Segments *SegmentsView `json:"segments,omitempty"`
	// derived caches each run's metrics while the report is built.
	derived derivedMetrics
	// Created is when the experiment began.
	Created time.Time `json:"-"`
	// Commits are the commits the git variants were built from, by variant.
	Commits map[string]string `json:"commits,omitempty"`
	// Verified sums the read-back checks of each cell's measured runs that
	// verified what they wrote (s3 --verify, http --verify).
	Verified []VerifiedCell `json:"verified,omitempty"`
}

// derivedMetrics caches RunMetrics by run: computing them walks every
// histogram of the run, and a report asks for each metric of each run.
type derivedMetrics map[*metrics.Result]map[string]float64

// of is res's metrics; a nil cache computes them every time.
func (dm derivedMetrics) of(res *metrics.Result) map[string]float64 {
	if m, ok := dm[res]; ok {
		return m
	}
	m := metrics.RunMetrics(res)
	if dm != nil {
		dm[res] = m
	}
	return m
}

// RunView is one run.
type RunView struct {
	// ID is the run's number in the store (iolab report --run ID).
	ID      int64  `json:"id"`
	Cell    string `json:"cell"`
	Variant string `json:"variant,omitempty"`
	Round   int    `json:"round"`
	Slot    int    `json:"slot"`
	Warmup  bool   `json:"warmup"`
	Status  string `json:"status"`
	Error   string `json:"error,omitempty"`
	Errors  int64  `json:"errors"`
	// Start is when the measured window began; it lasted DurationS.
	Start            time.Time `json:"start"`
	DurationS        float64   `json:"duration_s"`
	CPUS             float64   `json:"cpu_s"`
	OpsPerS          float64   `json:"ops_per_s"`
	BytesPerS        float64   `json:"bytes_per_s"`
	TimingOverheadNs float64   `json:"timing_overhead_ns"`
	// Lat and TTFB merge every operation of the run.
	Lat   *metrics.Percentiles `json:"lat_ns,omitempty"`
	TTFB  *metrics.Percentiles `json:"ttfb_ns,omitempty"`
	Read  *DirView             `json:"read,omitempty"`
	Write *DirView             `json:"write,omitempty"`
	Sync  *DirView             `json:"sync,omitempty"`
	// Ops holds object operations (put, get, ...) by name.
	Ops    map[string]*DirView `json:"ops,omitempty"`
	Verify *VerifyView         `json:"verify,omitempty"`
	Frames *FramesView         `json:"frames,omitempty"`
	// ErrorCodes counts failed operations by "op:code".
	ErrorCodes map[string]int64 `json:"error_codes,omitempty"`
	// Extra holds a workload's own figures (a command's wall_s, an object
	// store's connections_opened).
	Extra  map[string]float64 `json:"extra,omitempty"`
	Notes  []metrics.Note     `json:"notes,omitempty"`
	Series []metrics.Second   `json:"series,omitempty"`
	// ServerSeries is the watched server's seconds (with --series).
	ServerSeries []metrics.ServerSecond `json:"server_series,omitempty"`
	// EnvSeries is the machine's seconds during the run (with --series).
	EnvSeries []metrics.EnvSecond `json:"env_series,omitempty"`
	// FrameSeries is a frame test's per-frame timings (with --series).
	FrameSeries []metrics.FrameTiming `json:"frame_series,omitempty"`
	// Metrics are the run's metrics by name (metrics.RunMetrics).
	Metrics map[string]float64 `json:"-"`
	// Result is the run as measured and StoredCell the cell it ran, which
	// the exports (CSV, NDJSON, benchfmt, fio's JSON) write out whole.
	Result     *metrics.Result `json:"-"`
	StoredCell store.Cell      `json:"-"`
}

// DirView is one kind of operation of a run.
type DirView struct {
	Ops       int64                `json:"ops"`
	Bytes     int64                `json:"bytes"`
	Errors    int64                `json:"errors"`
	OpsPerS   float64              `json:"ops_per_s"`
	BytesPerS float64              `json:"bytes_per_s"`
	Lat       metrics.Percentiles  `json:"lat_ns"`
	TTFB      *metrics.Percentiles `json:"ttfb_ns,omitempty"`
	// Response, of a paced run, is each operation's time from its intended
	// start; Lat is then its service time.
	Response *metrics.Percentiles `json:"response_ns,omitempty"`
}

// FramesView is a frame test's outcome.
type FramesView struct {
	FPS         float64 `json:"fps"`
	TargetFPS   float64 `json:"target_fps,omitempty"`
	Late        int64   `json:"late"`
	Dropped     int64   `json:"dropped"`
	WorstLateNs int64   `json:"worst_late_ns"`
	// Pass says whether the target frame rate was sustained; nil without one.
	Pass    *bool               `json:"pass"`
	FrameNs metrics.Percentiles `json:"frame_ns"`
}

func framesView(res *metrics.Result) *FramesView {
	fps, ok := res.Extra["frames_fps"]
	if !ok {
		return nil
	}
	v := &FramesView{FPS: fps, TargetFPS: res.Extra["frames_target_fps"], Late: int64(res.Extra["frames_late"]),
		Dropped: int64(res.Extra["frames_dropped"]), WorstLateNs: int64(res.Extra["frames_worst_late_ns"])}
	if p, ok := res.Extra["frames_pass"]; ok {
		pass := p == 1
		v.Pass = &pass
	}
	h := res.ByOp[metrics.Write].Lat
	if res.ByOp[metrics.Read].Ops > 0 {
		h = res.ByOp[metrics.Read].Lat
	}
	v.FrameNs = metrics.PercentilesOf(h)
	return v
}

// CellView is one cell's summary over its measured runs.
type CellView struct {
	Name    string `json:"name"`
	Variant string `json:"variant,omitempty"`
	// Searched says the cell is an SLO search (see Searched): its
	// summary spans the loads it tried.
	Searched bool                     `json:"searched,omitempty"`
	Workload string                   `json:"workload"`
	Params   map[string]string        `json:"params"`
	Summary  map[string]stats.Summary `json:"summary"`
	// Latency merges the histograms of all measured runs per direction.
	Latency  map[string]metrics.Percentiles `json:"latency_ns"`
	Warnings []stats.Warning                `json:"warnings"`
	// Measured is the number of ok, non-warm-up runs; Failed of the
	// failed ones.
	Measured int `json:"measured"`
	Failed   int `json:"failed,omitempty"`
	// TimingOverheadNs is the median cost iolab adds to each operation's
	// latency by timing and recording it.
	TimingOverheadNs float64 `json:"timing_overhead_ns"`
	// Deadline is a frame test's verdict on its target frame rate.
	Deadline *DeadlineView `json:"deadline,omitempty"`
	// Hist merges the measured runs' latency histograms per direction,
	// for plots.
	Hist map[string]*hdrhistogram.Histogram `json:"-"`
}

// DeadlineView says whether a frame test kept its target frame rate in
// every measured run: PASS only when no frame was late or dropped.
type DeadlineView struct {
	TargetFPS float64 `json:"target_fps"`
	Runs      int     `json:"runs"`
	Passed    int     `json:"passed"`
	Late      int64   `json:"late"`
	Dropped   int64   `json:"dropped"`
	Pass      bool    `json:"pass"`
}

// String is the verdict as the text report prints it.
func (d *DeadlineView) String() string {
	if d.Pass {
		return fmt.Sprintf("PASS: %g fps kept in all %d runs", d.TargetFPS, d.Runs)
	}
	return fmt.Sprintf("FAIL: %g fps missed in %d of %d runs (%d frames late, %d dropped)",
		d.TargetFPS, d.Runs-d.Passed, d.Runs, d.Late, d.Dropped)
}

// deadlineOf gathers the frame-rate verdicts of measured runs.
func deadlineOf(runs []store.Run) *DeadlineView {
	var d *DeadlineView
	for _, run := range runs {
		pass, ok := run.Result.Extra["frames_pass"]
		if !ok || run.Warmup || run.Status != store.StatusOK {
			continue
		}
		if d == nil {
			d = &DeadlineView{TargetFPS: run.Result.Extra["frames_target_fps"]}
		}
		d.Runs++
		if pass == 1 {
			d.Passed++
		}
		d.Late += int64(run.Result.Extra["frames_late"])
		d.Dropped += int64(run.Result.Extra["frames_dropped"])
	}
	if d != nil {
		d.Pass = d.Passed == d.Runs
	}
	return d
}

func dirView(res *metrics.Result, d metrics.Op) *DirView {
	ds := res.ByOp[d]
	if ds.Ops == 0 && ds.Errors == 0 {
		return nil
	}
	v := &DirView{Ops: ds.Ops, Bytes: ds.Bytes, Errors: ds.Errors, OpsPerS: res.RateOf(d, ds.Ops), BytesPerS: res.RateOf(d, ds.Bytes),
		Lat: metrics.PercentilesOf(ds.Lat)}
	if ds.TTFB != nil {
		p := metrics.PercentilesOf(ds.TTFB)
		v.TTFB = &p
	}
	if ds.Response != nil && ds.Response.TotalCount() > 0 {
		p := metrics.PercentilesOf(ds.Response)
		v.Response = &p
	}
	return v
}

// objectOps are the object operations of a run, by name.
func objectOps(res *metrics.Result) map[string]*DirView {
	var m map[string]*DirView
	for d := metrics.Put; d < metrics.NumOps; d++ {
		if v := dirView(res, d); v != nil {
			if m == nil {
				m = map[string]*DirView{}
			}
			m[d.String()] = v
		}
	}
	return m
}

// mergedLatency merges the latency and TTFB histograms of every operation
// kind of a run.
func mergedLatency(res *metrics.Result) (lat, ttfb *metrics.Percentiles) {
	return percentilesOf(latencyUnion(res, false)), percentilesOf(latencyUnion(res, true))
}

// latencyUnion is the histogram of all of a run's operations' latencies
// (or times to first byte): the one histogram itself when one kind of
// operation ran (a merged load reads thousands of runs), nil when none.
func latencyUnion(res *metrics.Result, ttfb bool) *hdrhistogram.Histogram {
	var hs []*hdrhistogram.Histogram
	for _, st := range res.ByOp {
		switch {
		case ttfb && st.TTFB != nil:
			hs = append(hs, st.TTFB)
		case !ttfb && st.Lat != nil && st.Lat.TotalCount() > 0:
			hs = append(hs, st.Lat)
		}
	}
	switch len(hs) {
	case 0:
		return nil
	case 1:
		return hs[0]
	}
	var sum metrics.HistogramSum
	for _, x := range hs {
		sum.Add(x)
	}
	return sum.Histogram()
}

func percentilesOf(h *hdrhistogram.Histogram) *metrics.Percentiles {
	if h == nil {
		return nil
	}
	p := metrics.PercentilesOf(h)
	return &p
}

// Options choose what Build includes.
type Options struct {
	// Series includes each run's per-second buckets in RunView.
	Series bool
	// Baseline is the variant others are compared with (default: the
	// first); Threshold the practical difference (default 2%); Order the
	// order the runs were scheduled in.
	Baseline  string
	Threshold float64
	Order     string
	// Along, when set, compares cells along a matrix field (FIELD or
	// FIELD=BASE) instead of variants against variants (Along).
	Along string
	// Sequential, set for an experiment that stopped when decided, judges
	// the primary metrics by a confidence sequence over those rounds.
	Sequential *store.SequentialRounds
	// Extrapolate is where scale fits predict, and the caps they are
	// checked against.
	Extrapolate store.Extrapolate
	// Custom are the metrics cmd workloads read from their commands'
	// output, each with whether lower is better: compared (unadjusted)
	// and fitted against scale like the built-in ones.
	Custom map[string]bool
	// CustomUnits are their units, where known.
	CustomUnits map[string]string
	// Primary, when set, is the metric every comparison leads with in
	// place of its kind's (PrimaryMetric): a bisect step's is the metric
	// bisected.
	Primary string
	// Segments is the segments' view of a merged load (MergeSegments).
	Segments *SegmentsView
	// Precondition is the rule the warm-up rounds ran until, if any.
	Precondition *stats.Precondition
}

// OptionsFor are the options an experiment's plan record asks its report
// to compare with.
func OptionsFor(rec store.PlanRecord) Options {
	o := Options{Baseline: rec.Baseline, Along: rec.Along, Threshold: rec.Threshold, Order: rec.Order,
		Sequential: rec.Sequential, Extrapolate: rec.Extrapolate, Custom: rec.Custom, CustomUnits: rec.CustomUnits, Precondition: rec.Precondition}
	if rec.Bisect != nil {
		o.Primary = rec.Bisect.Metric
	}
	return o
}

// primaryOf is the metric a cell of a kind's comparisons lead with.
func (o Options) primaryOf(kind string) string {
	if o.Primary != "" {
		return o.Primary
	}
	return PrimaryMetric(kind)
}

// RoundsView is how an experiment that stops when decided ended: after
// Ran rounds, every primary comparison Decided or not.
type RoundsView struct {
	Min     int  `json:"min"`
	Max     int  `json:"max"`
	Ran     int  `json:"ran"`
	Decided bool `json:"decided"`
}

// CodeMalformedGroup marks a segment whose group's experiments are not
// one load (stored by an iolab that did not check their fingerprints).
const CodeMalformedGroup = "malformed-segment-group"

// DefaultThreshold is the practical difference verdicts use by default.
const DefaultThreshold = 0.02

// Build assembles the report of a stored experiment.
func Build(d *store.Data, opts Options) *Report {
	var alongField string
	if opts.Along != "" {
		d, opts.Baseline = along(d, opts.Along)
		alongField, _ = plan.AlongField(opts.Along)
	}
	r := &Report{Experiment: d.Experiment.ID, Name: d.Experiment.Name, Command: d.Experiment.Command, Created: d.Experiment.CreatedAt,
		Status: d.Experiment.Status, Notes: d.Experiment.Notes, Runs: []RunView{}, Warnings: []stats.Warning{}, derived: derivedMetrics{},
		Segments: opts.Segments}
	if s := opts.Segments; s != nil && s.Malformed != "" {
		r.Warnings = append(r.Warnings, stats.Warning{Code: CodeMalformedGroup, Message: fmt.Sprintf(
			"segment group %s is not one load (%s): this segment is shown alone, as a share of a load, nothing merged", s.Group, s.Malformed)})
	}
	perCell := r.runViews(d, opts.Series)
	evidence := r.cellViews(d, perCell, trendAdvice(d, opts.Order))
	if len(r.Cells) == 1 {
		r.Summary = r.Cells[0].Summary
	}
	if sp, ok := d.Experiment.PlanRecord(); ok && len(sp.Commits) > 0 {
		r.Commits = sp.Commits
	}
	r.Verified = verified(r.Runs, d)
	r.compare(d, perCell, opts)
	if len(r.Comparisons) > 0 {
		r.Along = alongField
	}
	snaps := decodeEnv(d.Env)
	asRunSaw(d.Env, snaps)
	cpus := 0
	if len(snaps) > 0 {
		r.Env = &snaps[0]
		cpus = r.Env.CPUs
		r.Warnings = append(r.Warnings, lateStartWarnings(r.derived, d.Cells, perCell, cpus)...)
	}
	r.Warnings = append(r.Warnings, genDelayWarnings(r.derived, d.Cells, perCell, cpus)...)
	r.Warnings = append(r.Warnings, genDelayDiffers(r.derived, d.Cells, perCell)...)
	busy := r.envWarnings(snaps, evidence)
	r.Warnings = append(r.Warnings, runStatusWarnings(d)...)
	r.Warnings = append(r.Warnings, unknownKinds(d)...)
	r.scaleFits(d, perCell, opts, busy)
	r.curves(d, perCell)
	r.slos(d, perCell)
	if opts.Precondition != nil {
		r.Preconditioned = Preconditioned(r.derived, d, perCell, *opts.Precondition)
		if pv := r.Preconditioned; !pv.Steady && d.Experiment.Status != "running" {
			r.Warnings = append(r.Warnings, stats.Warning{Code: "not-preconditioned", Message: fmt.Sprintf(
				"the warm-up rounds ended at the precondition's most, %d, before every cell's %s was steady (%s): the measured rounds may still be settling", pv.Rounds, pv.Metric, pv.Rule())})
		}
	}
	return r
}

// runViews adds a view of every run, in the order they ran (with their
// seconds when series is set), and returns the runs of each cell.
func (r *Report) runViews(d *store.Data, series bool) [][]store.Run {
	cellByID := map[int64]int{}
	for i, c := range d.Cells {
		cellByID[c.ID] = i
	}
	perCell := make([][]store.Run, len(d.Cells))
	for _, run := range d.Runs {
		ci := cellByID[run.CellID]
		res := run.Result
		v := RunView{ID: run.ID, Cell: d.Cells[ci].Name, Variant: d.Cells[ci].Variant, Round: run.Round, Slot: run.Slot, Warmup: run.Warmup, Status: run.Status,
			Error: run.Error, Errors: res.Errors, Start: res.Start, DurationS: res.Duration.Seconds(), CPUS: res.CPUUserS + res.CPUSysS,
			OpsPerS: res.PerSecond(res.Ops()), BytesPerS: res.PerSecond(res.Bytes()), TimingOverheadNs: res.TimingOverheadNs,
			Read: dirView(res, metrics.Read), Write: dirView(res, metrics.Write), Sync: dirView(res, metrics.Sync), Notes: res.Notes,
			Ops: objectOps(res), Verify: verifyView(res), Frames: framesView(res), ErrorCodes: res.ErrorCodes, Extra: res.Extra}
		v.Lat, v.TTFB = mergedLatency(res)
		v.Metrics, v.Result, v.StoredCell = r.derived.of(res), res, d.Cells[ci]
		if series {
			v.Series, v.FrameSeries, v.ServerSeries, v.EnvSeries = res.Series, res.Frames, res.ServerSeries, res.EnvSeries
		}
		r.Runs = append(r.Runs, v)
		perCell[ci] = append(perCell[ci], run)
	}
	return perCell
}

// cellViews adds a view of every cell, with its warnings, and gathers the
// evidence the machine's warnings weigh: the machine's seconds, whether a
// cell touches a disk, its fastest uncached random read, and the cells
// whose throughput swung while the CPU each operation cost held steady —
// operations that waited for a CPU, not for the target.
func (r *Report) cellViews(d *store.Data, perCell [][]store.Run, trendAdvice string) envinfo.Evidence {
	var evidence envinfo.Evidence
	for i, c := range d.Cells {
		cv := buildCell(r.derived, c, perCell[i], trendAdvice)
		cv.Variant, cv.Searched = c.Variant, Searched(c)
		r.Cells = append(r.Cells, cv)
		if !Searched(c) { // a search's runs are at loads of their own, no repeats
			r.Warnings = append(r.Warnings, cv.Warnings...)
		}
		r.Warnings = append(r.Warnings, stallWarnings(r.derived, c, perCell[i])...)
		evidence.TouchesDisk = evidence.TouchesDisk || ownsIO(c, perCell[i])
		for _, run := range perCell[i] {
			if !run.Warmup && run.Result != nil {
				evidence.Seconds = append(evidence.Seconds, run.Result.EnvSeries...)
			}
		}
		if p := uncachedRandomReadP50(c, cv); p > 0 && (evidence.UncachedRandomReadP50Ns == 0 || p < evidence.UncachedRandomReadP50Ns) {
			evidence.UncachedRandomReadP50Ns = p
		}
		rate, perOp := cv.Summary[PrimaryMetric(c.Workload)], cv.Summary["cpu_us_per_op"]
		if rate.N >= 3 && perOp.N >= 3 && rate.CV > stats.HighCVThreshold && perOp.CV < rate.CV/2 {
			name := c.Name
			if c.Variant != "" {
				name = c.Variant + "/" + c.Name
			}
			evidence.Starved = append(evidence.Starved, envinfo.Starved{Cell: name, RateCV: rate.CV, CPUPerOpCV: perOp.CV})
		}
	}
	return evidence
}

// envWarnings adds what the machine's snapshots and seconds say, and
// returns whether the machine was busy (its load above its cores, or its
// CPU under pressure). A trend under CPU starvation is the load changing,
// not the target: the trend's warning says so.
func (r *Report) envWarnings(snaps []envinfo.Snapshot, evidence envinfo.Evidence) (busy bool) {
	env := envinfo.Warnings(snaps, evidence)
	for _, w := range env {
		busy = busy || w.Code == "load-above-cores" || w.Code == "cpu-pressure"
		if w.Code != "cpu-pressure" || len(evidence.Starved) == 0 {
			continue
		}
		for i := range r.Warnings {
			if c := r.Warnings[i].Code; c == stats.CodeTrend || c == "baseline-trend" {
				r.Warnings[i].Message += "; but see cpu-pressure: throughput moved while the CPU per operation held, so the likelier cause is the benchmark starved of CPU, not the target"
			}
		}
	}
	r.Warnings = append(r.Warnings, env...)
	return busy
}

// ResponseSuffix names a direction's response-time distribution beside
// its service time's in a cell's latencies ("get response").
const ResponseSuffix = " response"

// trendAdvice is what a drift over a cell's runs means for d's
// comparisons: advice that fits the rounds as they were run.
func trendAdvice(d *store.Data, order string) string {
	variants := map[string]bool{}
	for _, c := range d.Cells {
		if c.Variant != "" {
			variants[c.Variant] = true
		}
	}
	switch {
	case len(variants) < 2:
		return "compared with another variant in interleaved rounds (a plan's variants:) it would cancel out; a history of such experiments reads it as a change"
	case order == "sequential":
		return "these rounds ran each variant's runs one after another (sequential order), so the drift is in the comparison: interleave them (the default order)"
	}
	return "the rounds were interleaved, so the variants drifted alike and their per-round ratios cancel it; a cell's own median and interval do not"
}

func buildCell(dm derivedMetrics, c store.Cell, runs []store.Run, trendAdvice string) CellView {
	cv := CellView{Name: c.Name, Workload: c.Workload, Params: c.Params, Summary: map[string]stats.Summary{},
		Latency: map[string]metrics.Percentiles{}, Warnings: []stats.Warning{}, Deadline: deadlineOf(runs)}
	values := map[string][]float64{}
	merged := map[metrics.Op]*hdrhistogram.Histogram{}
	response := map[metrics.Op]*hdrhistogram.Histogram{} // of a paced run
	notes := map[string]metrics.Note{}
	var errs int64
	var overhead []float64
	for _, run := range runs {
		for _, n := range run.Result.Notes {
			notes[n.Code] = n
		}
		errs += run.Result.Errors
		if !run.Warmup && run.Status == store.StatusFailed {
			cv.Failed++
		}
		if run.Warmup || run.Status != store.StatusOK {
			continue
		}
		cv.Measured++
		if run.Result.TimingOverheadNs > 0 {
			overhead = append(overhead, run.Result.TimingOverheadNs)
		}
		for k, v := range dm.of(run.Result) {
			values[k] = append(values[k], v)
		}
		for d := metrics.Op(0); d < metrics.NumOps; d++ {
			if h := run.Result.ByOp[d].Lat; h != nil {
				merged[d] = metrics.MergeHistogram(merged[d], h)
			}
			if h := run.Result.ByOp[d].Response; h != nil && h.TotalCount() > 0 {
				response[d] = metrics.MergeHistogram(response[d], h)
			}
		}
	}
	for k, v := range values {
		cv.Summary[k] = stats.Summarize(v)
	}
	if len(overhead) > 0 {
		cv.TimingOverheadNs = stats.Summarize(overhead).Median
	}
	cv.Hist = map[string]*hdrhistogram.Histogram{}
	for d, h := range merged {
		cv.Latency[d.String()] = metrics.PercentilesOf(h)
		cv.Hist[d.String()] = h
	}
	for d, h := range response { // beside the service time: "get response"
		cv.Latency[d.String()+ResponseSuffix] = metrics.PercentilesOf(h)
		cv.Hist[d.String()+ResponseSuffix] = h
	}
	label := c.Name + " " + PrimaryMetric(c.Workload)
	if c.Variant != "" {
		label = c.Variant + "/" + label
	}
	primary := PrimaryMetric(c.Workload)
	cv.Warnings = append(cv.Warnings, stats.Diagnose(label, values[primary], func(v float64) string { return FormatMetric(primary, v) }, trendAdvice)...)
	codes := make([]string, 0, len(notes))
	for code := range notes {
		codes = append(codes, code)
	}
	sort.Strings(codes)
	for _, code := range codes {
		cv.Warnings = append(cv.Warnings, stats.Warning{Code: code, Message: c.Name + ": " + notes[code].Message})
	}
	if errs > 0 {
		cv.Warnings = append(cv.Warnings, stats.Warning{Code: "errors", Message: fmt.Sprintf(
			"%s: %d operations failed; runs with errors are left out of the summary", c.Name, errs)})
	}
	if w, ok := idleServer(c, values); ok {
		cv.Warnings = append(cv.Warnings, w)
	}
	return cv
}

// serverCPUTick is the resolution of a server's CPU time (clock ticks of
// /proc, USER_HZ 100): one tick in a run is what answering the ready
// check costs a server the load never reached, on a busy machine where
// that work spills into the run.
const serverCPUTick = 0.01 // s

// idleServer flags a cell whose variant's server, watched through every
// measured run, used no CPU (past one clock tick a run) and moved no bytes
// while the workload did its operations: the load did not reach it (an fs
// target on the local disk instead of the server's export, an endpoint of
// another server).
func idleServer(c store.Cell, values map[string][]float64) (stats.Warning, bool) {
	cpu, ops := values["server_cpu_s"], values["ops_per_s"]
	if len(cpu) == 0 || len(ops) == 0 {
		return stats.Warning{}, false
	}
	for _, v := range cpu {
		if v > serverCPUTick {
			return stats.Warning{}, false
		}
	}
	for _, k := range []string{"server_read_bytes", "server_write_bytes"} {
		for _, v := range values[k] {
			if v > 0 {
				return stats.Warning{}, false
			}
		}
	}
	return stats.Warning{Code: "server-idle", Message: fmt.Sprintf(
		"%s/%s: the variant's server used no CPU and moved no bytes in %d measured runs while the workload did %s operations/s: the load did not reach it — check the workload's target (a path under the server's mount, its {{port}})",
		c.Variant, c.Name, len(cpu), stats.FormatValue(stats.Summarize(ops).Median))}, true
}

// uncachedRandomReadP50 is the merged read median of a cell that read
// randomly with direct I/O that the filesystem honoured, or 0.
func uncachedRandomReadP50(c store.Cell, cv CellView) int64 {
	if c.Params["direct"] != "1" || !strings.HasPrefix(c.Params["rw"], "rand") || c.Params["rw"] == "randwrite" {
		return 0
	}
	for _, w := range cv.Warnings {
		if w.Code == "o-direct-fallback" {
			return 0
		}
	}
	return cv.Latency["read"].P50
}

// asRunSaw puts in the first snapshot the target as the runs saw it: as
// read once a variant's server was ready (store.PhaseReady), when one
// was, for the target warnings — a round's snapshots, taken with no
// server up, describe what lies under the mount the server makes.
func asRunSaw(env []store.EnvSnapshot, snaps []envinfo.Snapshot) {
	if len(snaps) == 0 || snaps[0].Target == nil {
		return
	}
	for _, e := range env {
		var s envinfo.Snapshot
		if e.Phase == store.PhaseReady && json.Unmarshal(e.Snapshot, &s) == nil && s.Target != nil && s.Target.Path == snaps[0].Target.Path {
			snaps[0].Target = s.Target
			return
		}
	}
}

// cpusOf is the CPUs of the machine d ran on, by its first environment
// snapshot (0: not known).
func cpusOf(d *store.Data) int {
	for _, e := range d.Env {
		var s envinfo.Snapshot
		if json.Unmarshal(e.Snapshot, &s) == nil {
			return s.CPUs
		}
	}
	return 0
}

func decodeEnv(env []store.EnvSnapshot) []envinfo.Snapshot {
	var out []envinfo.Snapshot
	for _, e := range env {
		var s envinfo.Snapshot
		if json.Unmarshal(e.Snapshot, &s) == nil {
			out = append(out, s)
		}
	}
	return out
}

// unknownKinds names the cells of a workload kind this iolab does not know
// (a store written by another version): listed, never compared or judged.
func unknownKinds(d *store.Data) []stats.Warning {
	var out []stats.Warning
	seen := map[string]bool{}
	for _, c := range d.Cells {
		if _, ok := workload.Lookup(c.Workload); ok || seen[c.Workload] {
			continue
		}
		seen[c.Workload] = true
		out = append(out, stats.Warning{Code: "unknown-workload", Message: fmt.Sprintf(
			"cells of workload %q (%s): this iolab does not know the kind (it knows %s), so they are listed and not compared",
			c.Workload, c.Name, strings.Join(workload.Names(), ", "))})
	}
	return out
}

func runStatusWarnings(d *store.Data) []stats.Warning {
	var failed, interrupted int
	for _, r := range d.Runs {
		switch r.Status {
		case store.StatusFailed:
			failed++
		case store.StatusInterrupted:
			interrupted++
		}
	}
	var ws []stats.Warning
	if failed > 0 {
		ws = append(ws, stats.Warning{Code: "failed-runs", Message: fmt.Sprintf("%d runs failed and are left out of the summary", failed)})
	}
	if interrupted > 0 {
		ws = append(ws, stats.Warning{Code: "interrupted", Message: fmt.Sprintf(
			"the experiment was interrupted: %d run cut short is stored as interrupted and left out of the summary", interrupted)})
	}
	return ws
}
