package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
)

// StatusPartial is a merged run some segment did not finish: it is listed,
// never summarised as if the load had been smaller.
const StatusPartial = "partial"

// SegmentsView is what each segment of a load did, beside the merge.
type SegmentsView struct {
	Group string `json:"group"`
	N     int    `json:"n"`
	// Experiments are the segments' own experiments, by segment ("0/2").
	Experiments map[string]string `json:"experiments"`
	// Missing names segments that stored no experiment.
	Missing []string `json:"missing,omitempty"`
	// Died names segments whose runner died before it ended (a kill -9,
	// a lost host): the runs it had not finished are partial.
	Died  []string      `json:"died,omitempty"`
	Cells []SegmentCell `json:"cells"`
	// Malformed says why the group's experiments are not one load (two
	// splits, other cells): nothing is merged, the segment is shown alone.
	Malformed string `json:"malformed,omitempty"`
}

// SegmentCell is one cell's figures per segment over its measured runs.
type SegmentCell struct {
	Cell     string           `json:"cell"`
	Segments []SegmentFigures `json:"segments"`
}

// SegmentFigures are one segment's medians of a cell.
type SegmentFigures struct {
	Segment string  `json:"segment"`
	Runs    int     `json:"runs"`
	OpsPerS float64 `json:"ops_per_s"`
	P99Ns   float64 `json:"lat_p99_ns"`
}

// MergeSegments merges the experiments of one load's segments into one:
// runs meet by cell, round and slot; operations, bytes and errors add up,
// latency histograms merge exactly (never percentiles averaged), per-second
// series add up by wall-clock second, the run spans from the first start
// to the last end. A run a segment did not finish (or never stored) makes
// the merged run partial, named in its error. A segment given twice (run
// again, as a restarted pod) counts as its latest.
func MergeSegments(parts []*store.Data) (*store.Data, *SegmentsView, error) {
	latest := map[string]*store.Data{}
	for _, p := range parts {
		if prev := latest[p.Experiment.Segment]; prev == nil || p.Experiment.CreatedAt.After(prev.Experiment.CreatedAt) {
			latest[p.Experiment.Segment] = p
		}
	}
	chosen := slices.Collect(maps.Values(latest))
	slices.SortFunc(chosen, func(a, b *store.Data) int {
		return cmp.Compare(segment.Index(a.Experiment.Segment), segment.Index(b.Experiment.Segment))
	})
	m := NewMerger()
	for _, d := range chosen {
		if err := m.Add(d); err != nil {
			return nil, nil, err
		}
	}
	return m.Done()
}

// Merger merges a load's segments one at a time: reading a load of many
// segments holds one segment's runs and the merged load, never all of
// them (100 segments x 20 runs of two operation kinds are 8,000 HDR
// histograms). Add each segment once, then Done.
type Merger struct {
	n     int
	out   *store.Data
	view  *SegmentsView
	added map[int]bool
	runs  map[mergeKey]*pendingRun
	order []mergeKey
	figs  map[int][]SegmentFigures // per cell, one per segment added
}

type mergeKey struct {
	cell, round, slot int
	warmup            bool
}

// pendingRun is a merged run being built: each segment's run without its
// measurements (status and times), and their measurements merged so far.
type pendingRun struct {
	parts    []*store.Run
	result   *metrics.Result // without its histograms, which are summed apart
	lat      [metrics.NumOps]metrics.HistogramSum
	ttfb     [metrics.NumOps]metrics.HistogramSum
	response [metrics.NumOps]metrics.HistogramSum
	startLag [metrics.NumOps]metrics.HistogramSum
}

func NewMerger() *Merger {
	return &Merger{added: map[int]bool{}, runs: map[mergeKey]*pendingRun{}, figs: map[int][]SegmentFigures{}}
}

// Add merges a segment's experiment into the load. The first one added
// gives the merged experiment its record, cells and environment.
func (m *Merger) Add(d *store.Data) error {
	seg, err := segment.Parse(d.Experiment.Segment)
	if err != nil {
		return fmt.Errorf("experiment %s: segment %w", d.Experiment.ID, err)
	}
	if m.out == nil {
		m.n = seg.N
		m.view = &SegmentsView{Group: d.Experiment.SegmentGroup, N: seg.N, Experiments: map[string]string{}}
		m.out = &store.Data{Experiment: d.Experiment, Cells: d.Cells, Env: d.Env}
		m.out.Experiment.Segment = ""
	}
	switch {
	case seg.N != m.n:
		return fmt.Errorf("group %s: experiment %s is a segment of %d, others of %d", m.view.Group, d.Experiment.ID, seg.N, m.n)
	case m.added[seg.I]:
		return fmt.Errorf("group %s: segment %s given twice (experiment %s)", m.view.Group, seg, d.Experiment.ID)
	case len(d.Cells) != len(m.out.Cells):
		return fmt.Errorf("group %s: the segments' experiments do not have the same cells; they are not one load", m.view.Group)
	}
	m.added[seg.I] = true
	m.view.Experiments[seg.String()] = d.Experiment.ID
	if st := d.Experiment.Status; st != "done" && m.out.Experiment.Status == "done" {
		m.out.Experiment.Status = st
	}
	cellOf := map[int64]int{}
	for _, c := range d.Cells {
		cellOf[c.ID] = c.Index
	}
	// A run redone (its first attempt cut) counts as its last attempt.
	last := map[mergeKey]*store.Run{}
	var keys []mergeKey
	for ri := range d.Runs {
		r := &d.Runs[ri]
		ci, ok := cellOf[r.CellID]
		if !ok || ci < 0 || ci >= len(m.out.Cells) {
			return fmt.Errorf("group %s: the segments' experiments do not have the same cells; they are not one load", m.view.Group)
		}
		k := mergeKey{ci, r.Round, r.Slot, r.Warmup}
		if last[k] == nil {
			keys = append(keys, k)
		}
		last[k] = r
	}
	for _, k := range keys {
		m.addRun(k, last[k], seg.I)
	}
	// Its own figures, per cell: medians of its measured runs.
	for ci := range m.out.Cells {
		m.figs[ci] = append(m.figs[ci], segmentFigures(seg, d.Runs, cellOf, ci))
	}
	return nil
}

// addRun adds segment i's run r to the load's run k: its histograms kept
// aside to merge once, its figures merged now, the run itself kept light.
func (m *Merger) addRun(k mergeKey, r *store.Run, i int) {
	p := m.runs[k]
	if p == nil {
		p = &pendingRun{parts: make([]*store.Run, m.n)}
		m.runs[k] = p
		m.order = append(m.order, k)
	}
	light := *r
	if r.Result != nil {
		light.Result = &metrics.Result{Start: r.Result.Start, Duration: r.Result.Duration}
		bare := *r.Result
		for op := range bare.ByOp {
			p.lat[op].Add(bare.ByOp[op].Lat)
			p.ttfb[op].Add(bare.ByOp[op].TTFB)
			p.response[op].Add(bare.ByOp[op].Response)
			p.startLag[op].Add(bare.ByOp[op].StartLag)
			bare.ByOp[op].Lat, bare.ByOp[op].TTFB, bare.ByOp[op].Response, bare.ByOp[op].StartLag = nil, nil, nil, nil
		}
		if p.result == nil {
			p.result = metrics.MergeTogether([]*metrics.Result{&bare})
		} else {
			p.result = metrics.MergeTogether([]*metrics.Result{p.result, &bare})
		}
	}
	p.parts[i] = &light
}

// segmentFigures are a segment's own figures of cell ci: the medians of
// its measured runs' rate and p99.
func segmentFigures(seg segment.Segment, runs []store.Run, cellOf map[int64]int, ci int) SegmentFigures {
	var ops, p99 []float64
	for _, r := range runs {
		if cellOf[r.CellID] != ci || r.Warmup || r.Status != store.StatusOK || r.Result == nil {
			continue
		}
		ops = append(ops, float64(r.Result.Ops())/r.Result.Duration.Seconds())
		if h := latencyUnion(r.Result, false); h != nil { // only its p99: one walk of one histogram
			p99 = append(p99, float64(h.ValueAtQuantile(99)))
		}
	}
	f := SegmentFigures{Segment: seg.String(), Runs: len(ops)}
	if len(ops) > 0 {
		f.OpsPerS = stats.Summarize(ops).Median
	}
	if len(p99) > 0 {
		f.P99Ns = stats.Summarize(p99).Median
	}
	return f
}

// Done is the merged load, with what each segment did beside it.
func (m *Merger) Done() (*store.Data, *SegmentsView, error) {
	if m.out == nil {
		return nil, nil, fmt.Errorf("no segments to merge")
	}
	for i := range m.n {
		if !m.added[i] {
			m.view.Missing = append(m.view.Missing, segment.Segment{I: i, N: m.n}.String())
		}
	}
	if len(m.view.Missing) > 0 {
		m.out.Experiment.Status = StatusPartial
	}
	for _, k := range m.order {
		p := m.runs[k]
		if p.result != nil {
			for op := range p.result.ByOp {
				p.result.ByOp[op].Lat, p.result.ByOp[op].TTFB = p.lat[op].Histogram(), p.ttfb[op].Histogram()
				p.result.ByOp[op].Response = p.response[op].Histogram()
				p.result.ByOp[op].StartLag = p.startLag[op].Histogram()
			}
		}
		m.out.Runs = append(m.out.Runs, mergeRun(p.parts, p.result, m.out.Cells[k.cell].ID, m.n))
	}
	for ci, c := range m.out.Cells {
		figs := m.figs[ci]
		slices.SortFunc(figs, func(a, b SegmentFigures) int { return cmp.Compare(segment.Index(a.Segment), segment.Index(b.Segment)) })
		m.view.Cells = append(m.view.Cells, SegmentCell{Cell: c.Name, Segments: figs})
	}
	return m.out, m.view, nil
}

// mergeRun is one run across the segments (parts by segment, nil where a
// segment has none; without their measurements, which merged is).
func mergeRun(parts []*store.Run, merged *metrics.Result, cellID int64, n int) store.Run {
	var present []*store.Run
	var problems []string
	for i, r := range parts {
		seg := segment.Segment{I: i, N: n}
		switch {
		case r == nil:
			problems = append(problems, fmt.Sprintf("segment %s has no such run", seg))
		case r.Status == store.StatusRunning:
			problems = append(problems, fmt.Sprintf("segment %s did not finish it (still running, or its runner died)", seg))
			present = append(present, r)
		case r.Status != store.StatusOK:
			problems = append(problems, fmt.Sprintf("segment %s %s: %s", seg, r.Status, r.Error))
			present = append(present, r)
		default:
			present = append(present, r)
		}
	}
	if why := misaligned(parts, n); why != "" {
		problems = append(problems, why)
	}
	first := present[0]
	m := store.Run{ID: first.ID, CellID: cellID, Round: first.Round, Slot: first.Slot, Warmup: first.Warmup, Status: store.StatusOK}
	if len(problems) > 0 {
		m.Status, m.Error = StatusPartial, strings.Join(problems, "; ")
	}
	for _, r := range present {
		m.EndedAt = later(m.EndedAt, r.EndedAt)
	}
	m.Result = &metrics.Result{}
	if merged != nil {
		m.Result = merged
	}
	return m
}

// misaligned says, when the finished runs of one merged run started
// further apart than one load's may (segment.Apart),
// which started first and last and how far apart; "" otherwise. runs
// are by segment, nil where a segment has none.
func misaligned(runs []*store.Run, n int) string {
	var first, last *store.Run
	shortest := time.Duration(math.MaxInt64)
	for _, r := range runs {
		if r == nil || r.Status != store.StatusOK || r.Result == nil || r.Result.Start.IsZero() {
			continue
		}
		if first == nil || r.Result.Start.Before(first.Result.Start) {
			first = r
		}
		if last == nil || r.Result.Start.After(last.Result.Start) {
			last = r
		}
		shortest = min(shortest, r.Result.Duration)
	}
	if first == nil {
		return ""
	}
	apart, bad := segment.Apart([]time.Time{first.Result.Start, last.Result.Start}, shortest)
	if !bad {
		return ""
	}
	return fmt.Sprintf("its segments' runs started %v apart (%s, %s), not together: not one load's seconds",
		apart.Round(time.Millisecond), segOf(runs, first, n), segOf(runs, last, n))
}

// segOf names the segment whose run r is, in runs by segment.
func segOf(all []*store.Run, r *store.Run, n int) string {
	for i, x := range all {
		if x == r {
			return "segment " + segment.Segment{I: i, N: n}.String()
		}
	}
	return "a segment"
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
