package plan

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/workload"
)

// extrapolate reads [scales...] or {at: [scales...], caps: {metric: value}}.
func (r reader) extrapolate(n *yaml.Node, dst *Extrapolate) error {
	at := n
	if n.Kind == yaml.MappingNode {
		at = nil
		err := r.fields(n, "extrapolate", []string{"at", "caps"}, func(key string, v *yaml.Node) error {
			if key == "at" {
				at = v
				return nil
			}
			return r.caps(v, dst)
		})
		if err != nil {
			return err
		}
		if at == nil {
			return r.pos(n).Errorf("extrapolate: give at: [scales to predict]")
		}
	}
	items, err := r.list(at, "extrapolate")
	if err != nil {
		return err
	}
	for _, x := range items {
		v, err := r.scalar(x, "extrapolate")
		if err != nil {
			return err
		}
		f, err := units.ParseFloat(v.Text, 1, 1e300)
		if err != nil {
			return v.Pos.Errorf("extrapolate %q: %v (a scale such as 1e9)", v.Text, err)
		}
		dst.At = append(dst.At, f)
	}
	return nil
}

// caps reads {metric: value}: sizes for byte metrics (32g), numbers else.
func (r reader) caps(n *yaml.Node, dst *Extrapolate) error {
	if n.Kind != yaml.MappingNode {
		return r.pos(n).Errorf("extrapolate.caps: want a mapping of metric: cap, such as max_rss_bytes: 32g")
	}
	dst.Caps = map[string]float64{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		v, err := r.scalar(n.Content[i+1], "extrapolate.caps."+k)
		if err != nil {
			return err
		}
		var f float64
		if strings.HasSuffix(k, "_bytes") {
			var b int64
			b, err = units.ParseSize(v.Text)
			f = float64(b)
		} else {
			f, err = units.ParseFloat(v.Text, 0, 1e300)
		}
		if err != nil || f <= 0 {
			return v.Pos.Errorf("extrapolate.caps.%s %q: want a positive %s", k, v.Text, map[bool]string{true: "size such as 32g", false: "number"}[strings.HasSuffix(k, "_bytes")])
		}
		dst.Caps[k] = f
	}
	return nil
}

func (r reader) workloads(n *yaml.Node, p *Plan) error {
	items, err := r.list(n, "workloads")
	if err != nil {
		return err
	}
	kinds := workload.Names() // every registered kind is a key of its own
	known := append(slices.Clone(WorkloadKeys), kinds...)
	for _, item := range items {
		w := Workload{Pos: r.pos(item), Fields: map[string]Value{}}
		var matrix, scale, curve, slo *yaml.Node
		err := r.fields(item, "a workload", known, func(key string, v *yaml.Node) error {
			switch key {
			case "name":
				return r.str(v, "workload name", &w.Name)
			case "matrix":
				matrix = v
				return nil
			case "scale":
				scale = v
				return nil
			case "curve":
				curve = v
				return nil
			case "slo":
				slo = v
				return nil
			case "setup":
				w.Setup = &Workload{Pos: r.pos(v), Fields: map[string]Value{}}
				return r.fields(v, "setup", kinds, func(kind string, x *yaml.Node) error {
					return r.kind(w.Setup, "setup", kind, x)
				})
			}
			return r.kind(&w, fmt.Sprintf("workload %q", w.Name), key, v)
		})
		if err != nil {
			return err
		}
		if w.Kind == "" {
			return w.Pos.Errorf("workload %q: no kind; give one of: %s", w.Name, strings.Join(kinds, ", "))
		}
		if w.Setup != nil && w.Setup.Kind == "" {
			name := w.Name
			if name == "" {
				name = w.Kind
			}
			return w.Setup.Pos.Errorf("workload %q: setup: no kind; give one of: %s", name, strings.Join(kinds, ", "))
		}
		if w.Setup != nil {
			w.Setup.Name = w.Name + " setup"
		}
		if matrix != nil {
			if w.Matrix, err = r.matrix(matrix); err != nil {
				return err
			}
		}
		if scale != nil {
			if err := r.scale(scale, &w); err != nil {
				return err
			}
		}
		if curve != nil {
			if err := r.curve(curve, &w); err != nil {
				return err
			}
		}
		if slo != nil {
			if err := r.slo(slo, &w); err != nil {
				return err
			}
		}
		p.Workloads = append(p.Workloads, w)
	}
	return nil
}

// kind reads a workload's settings under its kind's key (fs: {...}). A
// list value stands for a repeated flag (header: [a, b] is -H a -H b): its
// items are kept joined by newlines, each one a flag value.
func (r reader) kind(w *Workload, what, kind string, v *yaml.Node) error {
	if w.Kind != "" {
		return r.pos(v).Errorf("%s: both %s and %s; give one workload kind per entry", what, w.Kind, kind)
	}
	w.Kind = kind
	if v.Kind != yaml.MappingNode {
		return r.pos(v).Errorf("%s: want a mapping of its settings", kind)
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		key, x := v.Content[i].Value, v.Content[i+1]
		if k, _ := workload.Lookup(kind); k.OutputMetrics && key == "metrics" {
			if err := r.metrics(x, w); err != nil {
				return err
			}
			continue
		}
		var val Value
		if x.Kind == yaml.SequenceNode {
			val = Value{Pos: r.pos(x)}
			for _, item := range x.Content {
				one, err := r.scalar(item, kind+"."+key)
				if err != nil {
					return err
				}
				val.List = append(val.List, one)
			}
			if len(val.List) == 0 {
				return val.Pos.Errorf("%s.%s: an empty list; give at least one value, or leave the key out", kind, key)
			}
		} else {
			var err error
			if val, err = r.scalar(x, kind+"."+key); err != nil {
				return err
			}
		}
		val.KeyPos = r.pos(v.Content[i])
		if _, dup := w.Fields[key]; dup {
			return val.KeyPos.Errorf("%s.%s given twice", kind, key)
		}
		w.Fields[key] = val
	}
	return nil
}

// metrics reads a cmd workload's metrics: a list of {name, regex | json
// and field, scale, better, unit}.
func (r reader) metrics(n *yaml.Node, w *Workload) error {
	items, err := r.list(n, "cmd.metrics")
	if err != nil {
		return err
	}
	const example = "such as {name: ingest_s, json: 'msg=ingest phase complete', field: duration_ms, scale: 0.001} or {name: objects_per_s, regex: 'rate=([0-9.]+)'}"
	for _, item := range items {
		m := MetricSpec{Scale: 1, LowerIsBetter: true, Pos: r.pos(item)}
		var json *Value
		err := r.fields(item, "a metric", []string{"name", "regex", "json", "field", "scale", "better", "unit"}, func(key string, v *yaml.Node) error {
			val, err := r.scalar(v, "metrics."+key)
			if err != nil {
				return err
			}
			switch key {
			case "name":
				if !metricName.MatchString(val.Text) {
					return val.Pos.Errorf("metrics.name %q: want lower-case letters, digits, _ and ., starting with a letter (ingest_s)", val.Text)
				}
				m.Name = val.Text
			case "regex":
				if m.Regex, err = regexp.Compile(val.Text); err != nil {
					return val.Pos.Errorf("metrics.regex %q: %v", val.Text, err)
				}
				if m.Regex.NumSubexp() > 1 {
					return val.Pos.Errorf("metrics.regex %q: %d groups; the value is the first group, so give one (use (?:...) for the others)", val.Text, m.Regex.NumSubexp())
				}
			case "json":
				json = &val
				if val.Text != "" {
					k, v, ok := strings.Cut(val.Text, "=")
					if !ok || strings.TrimSpace(k) == "" {
						return val.Pos.Errorf("metrics.json %q: want key=value selecting the lines (msg=ingest phase complete), or \"\" for every JSON line", val.Text)
					}
					m.JSONKey, m.JSONValue = strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `"`)
				}
			case "field":
				m.Field = val.Text
			case "scale":
				if m.Scale, err = units.ParseFloat(val.Text, -1e300, 1e300); err != nil || m.Scale == 0 {
					return val.Pos.Errorf("metrics.scale %q: want a number other than 0 (0.001 turns ms into s)", val.Text)
				}
			case "better":
				if val.Text != "lower" && val.Text != "higher" {
					return val.Pos.Errorf("metrics.better %q: want lower (a cost: time, bytes) or higher (a rate)", val.Text)
				}
				m.LowerIsBetter = val.Text == "lower"
			case "unit":
				if !validUnit(val.Text) {
					return val.Pos.Errorf("metrics.unit %q: want what the value (after scale) counts: a duration (%s), bytes (B), a count (count), a share (%%), or any of them per second (B/s, items/s)",
						val.Text, strings.Join(durationUnits, ", "))
				}
				m.Unit = val.Text
			}
			return nil
		})
		switch {
		case err != nil:
			return err
		case m.Name == "":
			return m.Pos.Errorf("a metric without a name; %s", example)
		case (m.Regex == nil) == (json == nil):
			return m.Pos.Errorf("metric %s: give one of regex or json; %s", m.Name, example)
		case json != nil && m.Field == "":
			return m.Pos.Errorf("metric %s: json needs field: the JSON field that holds the value", m.Name)
		case m.Regex != nil && m.Field != "":
			return m.Pos.Errorf("metric %s: field goes with json, not regex (the regex's first group is the value)", m.Name)
		}
		if m.Unit == "" {
			m.Unit = MetricUnit(m.Name)
		}
		for _, o := range w.Metrics {
			if o.Name == m.Name {
				return m.Pos.Errorf("metric %s defined twice", m.Name)
			}
		}
		w.Metrics = append(w.Metrics, m)
	}
	return nil
}

// scale reads scale: {field: [numbers]}: one axis, numeric, put first in
// the matrix (ascending), so its cells are named by it first.
func (r reader) scale(n *yaml.Node, w *Workload) error {
	axes, err := r.matrix(n)
	if err != nil {
		return fmt.Errorf("%w (scale: {objects: [10000, 100000, 1000000]})", err)
	}
	if len(axes) != 1 {
		return r.pos(n).Errorf("scale: want one field, such as scale: {objects: [10000, 100000, 1000000]}; other fields go under matrix:")
	}
	ax := axes[0]
	for _, m := range w.Matrix {
		if m.Field == ax.Field {
			return ax.Values[0].KeyPos.Errorf("scale.%s: also a matrix field; give it once", ax.Field)
		}
	}
	if ax.Field == ScaleParam {
		return ax.Values[0].KeyPos.Errorf("scale.%s: a name iolab keeps for itself; call it what it counts (objects, files, bytes)", ax.Field)
	}
	num := make([]float64, len(ax.Values))
	for i, v := range ax.Values {
		if num[i], err = ScaleValue(v.Text); err != nil {
			return v.Pos.Errorf("scale.%s %q: want a number above 0 (a count such as 100000 or 1e6, or a size such as 64m)", ax.Field, v.Text)
		}
		if i > 0 && num[i] <= num[i-1] {
			return v.Pos.Errorf("scale.%s: %s after %s; list the scales in ascending order, each once", ax.Field, v.Text, ax.Values[i-1].Text)
		}
	}
	if len(ax.Values) < 3 {
		return r.pos(n).Errorf("scale.%s: %d scales; a fit of start-up cost, rate and exponent needs 3 or more", ax.Field, len(ax.Values))
	}
	w.Scale = ax.Field
	w.Matrix = append([]Axis{ax}, w.Matrix...)
	return nil
}

// curve reads a workload's curve: loads in percent of its flat-out rate,
// ascending, each once.
func (r reader) curve(n *yaml.Node, w *Workload) error {
	const example = "such as curve: [10, 50, 70, 80, 90, 100]"
	items, err := r.list(n, "curve")
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return r.pos(n).Errorf("curve: an empty list; give the loads in percent of the flat-out rate, %s", example)
	}
	for i, item := range items {
		val, err := r.scalar(item, "curve")
		if err != nil {
			return err
		}
		pct, err := units.ParseFloat(strings.TrimSuffix(val.Text, "%"), 0, 100)
		if err != nil || pct <= 0 {
			return val.Pos.Errorf("curve: %q: want a load in percent of the flat-out rate, above 0 and at most 100, %s", val.Text, example)
		}
		if i > 0 && pct <= w.Curve[i-1] {
			return val.Pos.Errorf("curve: %s after %g; list the loads in ascending order, each once", val.Text, w.Curve[i-1])
		}
		w.Curve = append(w.Curve, pct)
	}
	for _, ax := range w.Matrix {
		if ax.Field == LoadParam {
			return ax.Values[0].KeyPos.Errorf("matrix.%s: a name a curve keeps for its loads; call the field something else", ax.Field)
		}
	}
	w.CurvePos = r.pos(n)
	return nil
}

// slo reads a workload's slo: {metric, below, precision}: a metric the
// catalogue declares, lower being better, and its bound.
func (r reader) slo(n *yaml.Node, w *Workload) error {
	const example = "such as slo: {metric: get.response_p99_ns, below: 20ms}"
	o := &SLO{Precision: 0.05, Pos: r.pos(n)}
	var below Value
	err := r.fields(n, "slo", SLOKeys, func(key string, v *yaml.Node) error {
		val, err := r.scalar(v, "slo."+key)
		if err != nil {
			return err
		}
		switch key {
		case "metric":
			o.Metric = val.Text
			def, ok := metrics.Describe(val.Text)
			switch {
			case !ok:
				hint := ""
				if _, ok := metrics.Describe(val.Text + "_ns"); ok {
					hint = "; did you mean " + val.Text + "_ns?"
				}
				return val.Pos.Errorf("slo.metric %q: no metric of that name%s; %s", val.Text, hint, example)
			case def.Better != metrics.LowerIsBetter:
				return val.Pos.Errorf("slo.metric %s: an objective keeps a metric below a bound, and lower %s is not better; give a latency, %s", val.Text, val.Text, example)
			}
		case "below":
			below = val
		case "precision":
			if o.Precision, err = units.ParseFloat(strings.TrimSuffix(val.Text, "%"), 0.1, 50); err != nil {
				return val.Pos.Errorf("slo.precision %q: want the bracket's width in percent, 0.1 to 50 (default 5)", val.Text)
			}
			o.Precision /= 100
		}
		return nil
	})
	if err != nil {
		return err
	}
	if o.Metric == "" || below.Text == "" {
		return o.Pos.Errorf("slo: give metric and below, %s", example)
	}
	def, _ := metrics.Describe(o.Metric)
	o.BelowText = below.Text
	if def.Unit == "ns" {
		d, err := units.ParseDuration(below.Text)
		if err != nil || d <= 0 {
			return below.Pos.Errorf("slo.below %q: %s is a time; want a duration above 0 such as 20ms", below.Text, o.Metric)
		}
		o.Below = float64(d.Nanoseconds())
	} else if o.Below, err = units.ParseFloat(below.Text, 0, math.MaxFloat64); err != nil || o.Below <= 0 {
		return below.Pos.Errorf("slo.below %q: want a number above 0, in %s", below.Text, def.Unit)
	}
	for _, ax := range w.Matrix {
		if ax.Field == LoadParam {
			return ax.Values[0].KeyPos.Errorf("matrix.%s: a name the SLO search keeps for its loads; call the field something else", ax.Field)
		}
	}
	w.SLO = o
	return nil
}

// PreconditionKeys are the keys of a plan's precondition:.
var PreconditionKeys = []string{"rounds", "window", "range", "slope"}

// precondition reads precondition: — true for SNIA's rule as it is, or
// {rounds, window, range, slope} to change it.
func (r reader) precondition(n *yaml.Node, p *Plan) error {
	pc := stats.DefaultPrecondition
	p.PreconditionPos = r.pos(n)
	if n.Kind == yaml.ScalarNode {
		switch n.Value {
		case "true":
			p.Precondition = &pc
		case "false":
		default:
			return r.pos(n).Errorf("precondition %q: want true (SNIA's rule: 5 rounds within 20%% of their mean, their slope within 10%%, at most 25 rounds) or {rounds, window, range, slope}", n.Value)
		}
		return nil
	}
	percent := func(v Value, dst *float64) error {
		f, err := units.ParseFloat(strings.TrimSuffix(v.Text, "%"), 0.1, 100)
		if err != nil {
			return v.Pos.Errorf("precondition: %q: want a percentage of the rounds' mean, 0.1%% to 100%%", v.Text)
		}
		*dst = f / 100
		return nil
	}
	err := r.fields(n, "precondition", PreconditionKeys, func(key string, v *yaml.Node) error {
		val, err := r.scalar(v, "precondition."+key)
		if err != nil {
			return err
		}
		switch key {
		case "rounds", "window":
			i, err := units.ParseInt(val.Text, 2, MaxRounds)
			if err != nil {
				return val.Pos.Errorf("precondition.%s %q: %v", key, val.Text, err)
			}
			if key == "rounds" {
				pc.Rounds = int(i)
			} else {
				pc.Window = int(i)
			}
		case "range":
			return percent(val, &pc.Range)
		case "slope":
			return percent(val, &pc.Slope)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if pc.Window > pc.Rounds {
		return p.PreconditionPos.Errorf("precondition: a window of %d rounds in at most %d; give rounds of at least the window", pc.Window, pc.Rounds)
	}
	p.Precondition = &pc
	return nil
}

// CurveLoad is the load param of a curve's cell at pct percent.
func CurveLoad(pct float64) string { return strconv.FormatFloat(pct, 'g', -1, 64) + "%" }

// ScaleValue is a scale as a number: a count (100000, 1e6) or a size in
// bytes (64m, as fs --size takes it).
func ScaleValue(text string) (float64, error) {
	f, err := units.ParseFloat(text, 0, 1e300)
	if err != nil {
		var b int64
		if b, err = units.ParseSize(text); err != nil {
			return 0, err
		}
		f = float64(b)
	}
	if f <= 0 {
		return 0, errors.New("not above 0")
	}
	return f, nil
}

// ScaleAdvice says what is wrong with a workload's scales for a fit: too
// few decades, or values spaced evenly rather than geometrically; "" when
// nothing is.
func (w Workload) ScaleAdvice() string {
	if w.Scale == "" {
		return ""
	}
	var v []float64
	for _, x := range w.Matrix[0].Values {
		f, _ := ScaleValue(x.Text)
		v = append(v, f)
	}
	lo, hi := v[0], v[len(v)-1]
	geometric := func() string {
		top := math.Max(hi, lo*1000)
		var out []string
		for i := range 5 {
			out = append(out, fmt.Sprintf("%.4g", lo*math.Pow(top/lo, float64(i)/4)))
		}
		return "[" + strings.Join(out, ", ") + "]"
	}
	if decades := math.Log10(hi / lo); decades < 2 {
		return fmt.Sprintf("workload %q: scale.%s spans %.1f decades; a fit tells n from n·log n, or finds an exponent, only over 2 or more: try %s", w.Name, w.Scale, decades, geometric())
	}
	// Evenly spaced: the middle step is as large as the first.
	if len(v) >= 4 && (v[2]-v[1]) > 0.8*(v[1]-v[0]) && (v[2]-v[1]) < 1.25*(v[1]-v[0]) {
		return fmt.Sprintf("workload %q: scale.%s is spaced evenly, which crowds the fit at the top; geometric spacing weighs every decade alike: try %s", w.Name, w.Scale, geometric())
	}
	return ""
}

// Points expands the matrix: one map of field overrides per combination, in
// the order written (the last axis varies fastest).
func (w Workload) Points() []map[string]Value {
	points := []map[string]Value{{}}
	for _, ax := range w.Matrix {
		var next []map[string]Value
		for _, p := range points {
			for _, v := range ax.Values {
				q := map[string]Value{ax.Field: v}
				for k, x := range p {
					q[k] = x
				}
				next = append(next, q)
			}
		}
		points = next
	}
	return points
}
