package report

import (
	"fmt"
	"io"
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
				if m == "wall_s" && loadAboveCores {
					fit.Warnings = append(fit.Warnings, "the load exceeded the CPUs during the runs: wall time includes waiting for a CPU, which grows with whatever else ran; cpu_s is the cost to fit and extrapolate")
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
			Exponent: finite(f.Exponent), ExponentCI: [2]any{finite(f.ExponentCI[0]), finite(f.ExponentCI[1])},
			AIC: finite(f.AICc), DeltaAIC: finite(f.DeltaAICc), Best: i == 0, Indistinct: slices.Contains(v.Fit.Indistinct, f.Model),
			Pattern: f.Pattern, Extrapolations: []map[string]any{}, Warnings: v.Fit.Warnings}
		for _, e := range f.Extrapolations {
			fv.Extrapolations = append(fv.Extrapolations, map[string]any{"at": e.At, "value": finite(e.Value), "pi95": []any{finite(e.PI95[0]), finite(e.PI95[1])}})
		}
		r.Fits = append(r.Fits, fv)
	}
}

// FormatMetric formats a value in a metric's unit, in the unit that
// reads best at its size (extrapolations reach hours and terabytes).
func FormatMetric(metric string, v float64) string {
	if d, ok := metrics.Describe(metric); ok {
		switch {
		case strings.HasSuffix(d.Unit, "/s"): // a rate, not a time
			return count(v)
		case d.Unit == "B":
			return humanBytes(v)
		case d.Unit == "s":
			return humanSeconds(v)
		case d.Unit == "ns":
			return latency(v)
		}
		return fmt.Sprintf("%.3g", v)
	}
	// A plan's own metric: its name's suffix says what it counts.
	switch {
	case strings.HasSuffix(metric, "_per_s"): // a rate, not a time
		return count(v)
	case strings.HasSuffix(metric, "_bytes"):
		return humanBytes(v)
	case strings.HasSuffix(metric, "_s"):
		return humanSeconds(v)
	case strings.HasSuffix(metric, "_ns"):
		return latency(v)
	}
	return fmt.Sprintf("%.3g", v)
}

func humanSeconds(v float64) string {
	switch a := math.Abs(v); {
	case a >= 2*86400:
		return fmt.Sprintf("%.3g days", v/86400)
	case a >= 2*3600:
		return fmt.Sprintf("%.3g h", v/3600)
	case a >= 120:
		return fmt.Sprintf("%.3g min", v/60)
	}
	return seconds(v)
}

// humanBytes writes a size in the largest binary unit it is 1 or more of,
// moving up a unit before three digits would round to four (1020 MiB is
// 0.996 GiB).
func humanBytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for i < len(units)-1 && math.Abs(v) >= 999.5 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.3g %s", v, units[i])
}

// writeScales writes each scale fit: the costs by scale, the models with
// their exponents, residuals and extrapolations, and what not to trust.
func writeScales(w io.Writer, r *Report, markdown bool) error {
	heading := "\n%s %s by %s\n"
	if markdown {
		heading = "\n### %s %s by %s\n\n"
	}
	for _, v := range r.Scales {
		label, _ := metricFormat(v.Metric)
		if v.Metric == "cpu_s" {
			label = "CPU (user + sys)"
		}
		format := func(x float64) string { return FormatMetric(v.Metric, x) }
		what := v.Cell + " —" // and the variant, when there are some
		if v.Variant != "" {
			what = v.Cell + " — " + v.Variant + ","
		}
		fmt.Fprintf(w, heading, what, label, v.Axis)
		t := &Table{Header: []string{v.Axis, "median [95% CI]", "per " + strings.TrimSuffix(v.Axis, "s")}}
		for _, p := range v.Points {
			t.Add(scaling.Format(p.N), medianCI(p.Summary, format), perItem(v.Metric, p.PerItem))
		}
		if err := t.Render(w, markdown); err != nil {
			return err
		}
		if v.Error != "" {
			fmt.Fprintf(w, "  no fit: %s\n", v.Error)
			continue
		}
		fmt.Fprintln(w)
		header := []string{"model", "exponent [95% CI]", "ΔAICc", "residuals by " + v.Axis}
		for _, e := range v.Fit.Across {
			header = append(header, fmt.Sprintf("at %g [95%% PI]", e.At))
		}
		t = &Table{Header: header}
		for _, f := range v.Fit.Fits {
			exp := fmt.Sprintf("%.3f", f.Exponent)
			if !math.IsNaN(f.ExponentCI[0]) {
				exp += fmt.Sprintf(" [%.3f, %.3f]", f.ExponentCI[0], f.ExponentCI[1])
			} else if f.Model == scaling.NLogN {
				exp += " (n·log n)"
			}
			row := []string{f.Model, exp, fmt.Sprintf("%.1f", f.DeltaAICc), f.Pattern}
			for _, e := range f.Extrapolations {
				row = append(row, fmt.Sprintf("%s [%s, %s]", FormatMetric(v.Metric, e.Value), FormatMetric(v.Metric, e.PI95[0]), FormatMetric(v.Metric, e.PI95[1])))
			}
			t.Add(row...)
		}
		if err := t.Render(w, markdown); err != nil {
			return err
		}
		for _, e := range v.Fit.Across {
			if len(v.Fit.Indistinct) > 1 {
				fmt.Fprintf(w, "  at %g, across the models the data cannot choose between: %s to %s\n", e.At,
					FormatMetric(v.Metric, e.PI95[0]), FormatMetric(v.Metric, e.PI95[1]))
			}
		}
		for _, wn := range v.Fit.Warnings {
			fmt.Fprintf(w, "  ! %s\n", wn)
		}
	}
	if len(r.Scales) > 0 {
		fmt.Fprintln(w, "\nscale fits: each model fitted to every run on the log scale; exponent = b of the power laws (how the cost grows past the start-up), 1 for linear, 1 + 1/ln n at the largest scale for n·log n; its interval and the prediction intervals (where one run would land) from the bootstrap over rounds, which does not assume the model; ΔAICc under 2: the data cannot tell the model from the best; residuals: + or - where the runs at a scale lie above or below the curve beyond chance (a model that is right marks a scale in 1 experiment of 20)")
	}
	return nil
}

// perItem formats the cost of one unit of scale.
func perItem(metric string, v float64) string { return FormatMetric(metric, v) }
