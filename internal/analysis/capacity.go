package analysis

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
)

// CurveView is one variant's load–latency curve of one workload (at one
// point of its matrix) for one kind of operation: the response time of
// its operations at each load against the rate the load achieved, as
// vdbench's curve= runs it — flat out first, then shares of that rate.
type CurveView struct {
	Variant string `json:"variant,omitempty"`
	// Cell is the workload and its other matrix fields.
	Cell string `json:"cell"`
	// Op is the kind of operation whose times are drawn (read, get).
	Op     string       `json:"op"`
	Points []CurvePoint `json:"points"`
	// Calibrated is the highest rate the variant's flat-out calibration
	// runs reached (each in Calibrations, in the order they ran); Base the
	// rate the loads are shares of, the highest any variant's reached — a
	// load is the same rate for every variant.
	Calibrated   float64   `json:"calibrated_ops_per_s"`
	Calibrations []float64 `json:"calibration_runs_ops_per_s,omitempty"`
	Base         float64   `json:"base_ops_per_s"`
	// Knee is the load past which response time grows faster than the
	// rate it buys (the paced point farthest below the line from the
	// first to the last, on a log scale of p99 — the Kneedle rule); ""
	// with fewer than three paced points.
	Knee string `json:"knee,omitempty"`
}

// CurvePoint is one load of a curve: its measured runs' achieved rate
// (all operations) and the percentiles of Op's response times — from
// each operation's intended start. At LoadMax, which runs on no
// schedule, they are service times.
type CurvePoint struct {
	Load string `json:"load"`
	// Offered is the rate the load's schedule asked for (0 flat out).
	Offered float64       `json:"offered_ops_per_s"`
	Rate    stats.Summary `json:"ops_per_s"`
	P50     stats.Summary `json:"p50_ns"`
	P99     stats.Summary `json:"p99_ns"`
	P999    stats.Summary `json:"p999_ns"`
	// LateStartPct is the median share of operations that started late.
	LateStartPct float64 `json:"late_start_pct"`
}

// FlatOut says the point is the flat-out load, timed from actual starts.
func (p CurvePoint) FlatOut() bool { return p.Load == plan.LoadMax }

// curves builds every curve of the experiment: per variant and workload
// (at its matrix point), the cells of its loads.
func (r *Report) curves(d *store.Data, perCell [][]store.Run) {
	type group struct {
		variant, name string
		cells         []int
		flat          int
	}
	var groups []*group
	byKey := map[string]*group{}
	for i, c := range d.Cells {
		load, ok := c.Params[plan.LoadParam]
		if !ok || load == plan.LoadSLO { // a search is no point of a curve
			continue
		}
		name := loadless(c)
		key := c.Variant + "\x00" + name
		g := byKey[key]
		if g == nil {
			g = &group{variant: c.Variant, name: name, flat: -1}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.cells = append(g.cells, i)
		if load == plan.LoadMax {
			g.flat = i
		}
	}
	calibrated, calibrations := map[*group]float64{}, map[*group][]float64{}
	base := map[string]float64{} // by workload and matrix point
	for _, g := range groups {
		if g.flat >= 0 {
			calibrations[g] = calibrationRates(r.derived, perCell[g.flat])
			calibrated[g] = slices.Max(append([]float64{0}, calibrations[g]...))
		}
		base[g.name] = math.Max(base[g.name], calibrated[g])
	}
	for _, g := range groups {
		for _, op := range curveOps(r.derived, perCell, g.cells) {
			v := CurveView{Variant: g.variant, Cell: g.name, Op: op, Calibrated: calibrated[g], Calibrations: calibrations[g], Base: base[g.name]}
			for _, i := range g.cells {
				load := d.Cells[i].Params[plan.LoadParam]
				times := op + ".response_"
				if load == plan.LoadMax {
					times = op + ".lat_"
				}
				summary := func(m string) stats.Summary {
					var values []float64
					for _, o := range observations(r.derived, perCell[i], m, 0) {
						values = append(values, o.Value)
					}
					return stats.Summarize(values)
				}
				p := CurvePoint{Load: load, Rate: summary("ops_per_s"), P50: summary(times + "p50_ns"), P99: summary(times + "p99_ns"),
					P999: summary(times + "p999_ns"), LateStartPct: summary("late_start_pct").Median}
				if p.Rate.N == 0 {
					continue // no measured run of the load succeeded
				}
				if pct, ok := loadShare(load); ok {
					p.Offered = pct * v.Base
				}
				v.Points = append(v.Points, p)
			}
			sort.SliceStable(v.Points, func(a, b int) bool { return loadOrder(v.Points[a].Load) < loadOrder(v.Points[b].Load) })
			if len(v.Points) < 2 {
				continue // flat out alone (a workload with an SLO, no curve)
			}
			v.Knee = knee(v.Points)
			r.Curves = append(r.Curves, v)
		}
	}
}

// loadless is a curve's or a search's cell's name without its load: the
// workload at its matrix point, the same for all its loads.
func loadless(c store.Cell) string {
	return strings.Replace(c.Name, " "+plan.LoadParam+"="+c.Params[plan.LoadParam], "", 1)
}

// curveOps are the kinds of operation the paced loads of a curve timed
// from their intended starts.
func curveOps(dm derivedMetrics, perCell [][]store.Run, cells []int) []string {
	var out []string
	for _, i := range cells {
		for _, run := range perCell[i] {
			if run.Warmup || run.Status != store.StatusOK {
				continue
			}
			for d := metrics.Op(0); d < metrics.NumOps; d++ {
				if _, ok := dm.of(run.Result)[d.String()+".response_p99_ns"]; ok && !slices.Contains(out, d.String()) {
					out = append(out, d.String())
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// loadShare is a paced load's share of the flat-out rate ("50%" → 0.5).
func loadShare(load string) (float64, bool) {
	pct, err := plan.ScaleValue(strings.TrimSuffix(load, "%"))
	if load == plan.LoadMax || err != nil {
		return 0, false
	}
	return pct / 100, true
}

// loadOrder sorts a curve's loads: the shares ascending, flat out last.
func loadOrder(load string) float64 {
	if share, ok := loadShare(load); ok {
		return share
	}
	return math.Inf(1)
}

// knee is the paced load past which response time grows faster than the
// rate it buys: with the achieved rates and the log of the p99s scaled
// to [0, 1] over the paced points, the one farthest below the chord from
// the first to the last (Kneedle, for a convex rising curve); "" with
// fewer than three paced points, or a p99 that does not rise.
func knee(points []CurvePoint) string {
	var paced []CurvePoint
	for _, p := range points {
		if !p.FlatOut() && p.P99.Median > 0 {
			paced = append(paced, p)
		}
	}
	if len(paced) < 3 {
		return ""
	}
	x0, x1 := paced[0].Rate.Median, paced[len(paced)-1].Rate.Median
	y0, y1 := math.Log(paced[0].P99.Median), math.Log(paced[len(paced)-1].P99.Median)
	if x1 <= x0 || y1 <= y0 {
		return ""
	}
	best, at := 0.0, ""
	for _, p := range paced[1 : len(paced)-1] {
		x := (p.Rate.Median - x0) / (x1 - x0)
		y := (math.Log(p.P99.Median) - y0) / (y1 - y0)
		if d := x - y; d > best {
			best, at = d, p.Load
		}
	}
	return at
}

// calibrationRates are the rates a flat-out cell's calibration runs
// reached, in the order they ran (store.CalibrationRuns): the experiment
// paced its loads by the highest (experiment.calibration).
func calibrationRates(dm derivedMetrics, runs []store.Run) []float64 {
	runs = slices.Clone(runs)
	slices.SortStableFunc(runs, func(a, b store.Run) int { return a.Round - b.Round })
	var out []float64
	for _, run := range runs {
		if store.IsCalibration(run.Round) && run.Status == store.StatusOK {
			out = append(out, dm.of(run.Result)["ops_per_s"])
		}
	}
	return out
}
