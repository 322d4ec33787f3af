package analysis

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/scaling"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/units"
)

// scaleMetrics are the costs fitted against scale, when measured.
var scaleMetrics = []string{"wall_s", "cpu_s", "max_rss_bytes", "server_cpu_s", "server_rss_peak_bytes", "cgroup_memory_peak_bytes", "cgroup_cpu_s"}

// memoryMetrics are the costs a machine's memory, or a limit, caps.
var memoryMetrics = []string{"max_rss_bytes", "server_rss_peak_bytes", "cgroup_memory_peak_bytes"}

// ScaleView is how one cost of one variant's workload grew with its scale.
type ScaleView struct {
	Variant string `json:"variant"`
	// Cell is the workload and its other matrix fields; Axis the scale's
	// field.
	Cell   string            `json:"cell"`
	Axis   string            `json:"axis"`
	Metric string            `json:"metric"`
	Points []ScalePoint      `json:"points"`
	Fit    *scaling.Result   `json:"fit,omitempty"`
	Error  string            `json:"error,omitempty"`
	Caps   map[string]string `json:"caps,omitempty"` // what the extrapolation was checked against
}

// ScalePoint is a scale's runs of the metric.
type ScalePoint struct {
	N       float64       `json:"n"`
	Summary stats.Summary `json:"summary"`
	// PerItem is the median cost per unit of scale.
	PerItem float64 `json:"per_item"`
}

// FitView is one model of one ScaleView, flat, as --json prints it.
type FitView struct {
	Variant    string `json:"variant"`
	Cell       string `json:"cell"`
	Metric     string `json:"metric"`
	Model      string `json:"model"`
	Exponent   any    `json:"exponent"`
	ExponentCI [2]any `json:"exponent_ci95"`
	AIC        any    `json:"aic"`
	DeltaAIC   any    `json:"delta_aic"`
	Best       bool   `json:"best"`
	Indistinct bool   `json:"indistinct"` // within 2 AICc of the best
	Pattern    string `json:"residual_pattern"`
	// Extrapolations: {at, value, pi95}, null where not finite.
	Extrapolations []map[string]any `json:"extrapolations"`
	Warnings       []string         `json:"warnings"`
}

// scaleFits fits every cost of every scale workload; loadAboveCores says
// the machine was busier than its CPUs during the runs.
func (r *Report) scaleFits(d *store.Data, perCell [][]store.Run, opts Options, loadAboveCores bool) {
	type group struct {
		variant, name, axis string
		cells               []int
	}
	var groups []*group
	byKey := map[string]*group{}
	for i, c := range d.Cells {
		axis := c.Params[plan.ScaleParam]
		if axis == "" {
			continue
		}
		name := strings.Replace(c.Name, " "+axis+"="+c.Params[axis], "", 1)
		key := c.Variant + "\x00" + name
		g := byKey[key]
		if g == nil {
			g = &group{variant: c.Variant, name: name, axis: axis}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.cells = append(g.cells, i)
	}
	for _, g := range groups {
		for _, m := range append(slices.Clone(scaleMetrics), slices.Sorted(maps.Keys(opts.Custom))...) {
			v := ScaleView{Variant: g.variant, Cell: g.name, Axis: g.axis, Metric: m}
			var pts []scaling.Point
			for _, i := range g.cells {
				n, err := plan.ScaleValue(d.Cells[i].Params[g.axis])
				if err != nil {
					continue
				}
				var values []float64
				for _, o := range observations(r.derived, perCell[i], m, 0) {
					pts = append(pts, scaling.Point{N: n, Round: o.Round, Value: o.Value})
					values = append(values, o.Value)
				}
				if len(values) > 0 {
					s := stats.Summarize(values)
					v.Points = append(v.Points, ScalePoint{N: n, Summary: s, PerItem: s.Median / n})
				}
			}
			if len(v.Points) == 0 || allZeroPoints(pts) {
				continue
			}
			sort.Slice(v.Points, func(a, b int) bool { return v.Points[a].N < v.Points[b].N })
			fit, err := scaling.FitAll(pts, scaling.Options{At: opts.Extrapolate.At, Seed: 1})
			if err != nil {
				v.Error = err.Error()
			} else {
				v.Fit = fit
				r.limitWarnings(&v, d, g.cells, opts)
				switch _, custom := opts.Custom[m]; {
				case !loadAboveCores:
				case m == "wall_s":
					fit.Warnings = append(fit.Warnings, "the load exceeded the CPUs during the runs: wall time includes waiting for a CPU, which grows with whatever else ran; cpu_s is the cost to fit and extrapolate")
				case custom && plan.IsDuration(opts.CustomUnits[m]):
					// A figure the program printed: a duration it timed
					// itself waited for the CPU just as wall time did.
					fit.Warnings = append(fit.Warnings, fmt.Sprintf("the load exceeded the CPUs during the runs: %s, a duration read from the program's output, includes waiting for a CPU, which grows with whatever else ran; cpu_s is the cost to fit and extrapolate", m))
				case custom && opts.CustomUnits[m] == "":
					fit.Warnings = append(fit.Warnings, fmt.Sprintf("the load exceeded the CPUs during the runs: if %s, read from the program's output, is a duration, it includes waiting for a CPU, which grows with whatever else ran; cpu_s is the cost to fit and extrapolate (give the metric's unit: in the plan, and iolab says this only of a duration)", m))
				}
			}
			r.Scales = append(r.Scales, v)
			r.flatten(v)
		}
	}
}

func allZeroPoints(pts []scaling.Point) bool {
	for _, p := range pts {
		if p.Value != 0 {
			return false
		}
	}
	return true
}

// limitWarnings checks a cost's curve against what caps it — for memory
// the machine's and the variant's limit, for bytes written the target's
// free space, for any a cap the plan declares — and says at what scale
// the best model crosses each.
func (r *Report) limitWarnings(v *ScaleView, d *store.Data, cells []int, opts Options) {
	caps := map[string]float64{}
	if c, ok := opts.Extrapolate.Caps[v.Metric]; ok {
		caps["the cap the plan declares"] = c
	}
	if slices.Contains(memoryMetrics, v.Metric) {
		if r.Env != nil && r.Env.MemTotalBytes > 0 {
			caps["the machine's memory"] = float64(r.Env.MemTotalBytes)
		}
		if l := d.Cells[cells[0]].Params["limit_memory"]; l != "" {
			if b, err := units.ParseSize(l); err == nil {
				caps["the variant's memory limit"] = float64(b)
			}
		}
	}
	// What a run writes to storage, it needs room for.
	if strings.HasSuffix(v.Metric, "write_bytes") && r.Env != nil && r.Env.Target != nil && r.Env.Target.FreeBytes > 0 {
		caps["the free space of "+r.Env.Target.Path] = float64(r.Env.Target.FreeBytes)
	}
	if len(caps) == 0 || len(v.Fit.Fits) == 0 {
		return
	}
	v.Caps = map[string]string{}
	best := v.Fit.Fits[0]
	top := v.Fit.Scales[len(v.Fit.Scales)-1]
	for _, what := range slices.Sorted(maps.Keys(caps)) {
		limit := caps[what]
		v.Caps[what] = FormatMetric(v.Metric, limit)
		crossing := crossAt(best, limit, top)
		already := v.Points[len(v.Points)-1].Summary.Median >= limit
		for _, e := range best.Extrapolations {
			if e.Value >= limit || already || (math.IsNaN(crossing) && e.PI95[1] >= limit) {
				where := ""
				switch {
				case already:
					where = " — the runs at the largest scale measured are already above it"
				case !math.IsNaN(crossing):
					where = fmt.Sprintf(" at about %s = %.3g", v.Axis, crossing)
				}
				v.Fit.Warnings = append(v.Fit.Warnings, fmt.Sprintf(
					"%s's curve (%s) crosses %s (%s)%s: past it the program is killed, swaps or changes how it works, and the extrapolation to %g means nothing",
					v.Metric, best.Model, what, FormatMetric(v.Metric, limit), where, e.At))
				break
			}
		}
	}
}

// crossAt is the scale above top at which a fit's curve reaches limit
// (bisection on log n), NaN when it does not by 1e30.
func crossAt(f scaling.Fit, limit, top float64) float64 {
	lo, hi := math.Log(top), math.Log(1e30)
	if f.At(top) >= limit || f.At(1e30) < limit {
		return math.NaN()
	}
	for range 100 {
		mid := (lo + hi) / 2
		if f.At(math.Exp(mid)) >= limit {
			hi = mid
		} else {
			lo = mid
		}
	}
	return math.Exp(hi)
}

// flatten adds a ScaleView's models to r.Fits.
func (r *Report) flatten(v ScaleView) {
	if v.Fit == nil {
		return
	}
	for i, f := range v.Fit.Fits {
		fv := FitView{Variant: v.Variant, Cell: v.Cell, Metric: v.Metric, Model: f.Model,
			Exponent: stats.JSONNumber(f.Exponent), ExponentCI: [2]any{stats.JSONNumber(f.ExponentCI[0]), stats.JSONNumber(f.ExponentCI[1])},
			AIC: stats.JSONNumber(f.AICc), DeltaAIC: stats.JSONNumber(f.DeltaAICc), Best: i == 0, Indistinct: slices.Contains(v.Fit.Indistinct, f.Model),
			Pattern: f.Pattern, Extrapolations: []map[string]any{}, Warnings: v.Fit.Warnings}
		for _, e := range f.Extrapolations {
			fv.Extrapolations = append(fv.Extrapolations, map[string]any{"at": e.At, "value": stats.JSONNumber(e.Value), "pi95": []any{stats.JSONNumber(e.PI95[0]), stats.JSONNumber(e.PI95[1])}})
		}
		r.Fits = append(r.Fits, fv)
	}
}

// FormatMetric formats a value in a metric's unit, in the unit that
// reads best at its size (extrapolations reach hours and terabytes).
func FormatMetric(metric string, v float64) string {
	if d, ok := metrics.Describe(metric); ok {
		switch {
		case d.Unit == "B/s": // bytes in binary units, as the MiB/s labels say
			return metrics.FormatBytes(v) + "/s"
		case strings.HasSuffix(d.Unit, "/s"): // a rate, not a time
			return stats.FormatValue(v)
		case d.Unit == "B":
			return metrics.FormatBytes(v)
		case d.Unit == "s":
			return metrics.FormatSeconds(v)
		case d.Unit == "ns":
			return metrics.FormatNs(v)
		}
		return fmt.Sprintf("%.3g", v)
	}
	// A plan's own metric: its name's suffix says what it counts.
	switch {
	case strings.HasSuffix(metric, "_per_s"): // a rate, not a time
		return stats.FormatValue(v)
	case strings.HasSuffix(metric, "_bytes"):
		return metrics.FormatBytes(v)
	case strings.HasSuffix(metric, "_s"):
		return metrics.FormatSeconds(v)
	case strings.HasSuffix(metric, "_ns"):
		return metrics.FormatNs(v)
	}
	return fmt.Sprintf("%.3g", v)
}
