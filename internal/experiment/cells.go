// Package experiment compiles a plan into the cells a lab runs: every
// workload at every point of its matrix, for every variant — the
// workload's kind looked up in the registry and its keys set through the
// kind's own flags, templates filled (and those only a start or a run can
// fill left for then), limits checked, set-up steps and the per-start
// rebuild of a workload against a variant's server arranged. Nothing
// runs here; a bad value fails before anything starts.
package experiment

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/cgroup"
	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/profiling"
	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/suggest"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/variant"
	"github.com/iolab/iolab/internal/workload"
)

// Cells expands a plan into cells: every workload at every point of its
// matrix, for every variant. A cell's name is the workload and its matrix
// point, the same for every variant, so comparisons pair them.
//
// Everything is built once here, so a bad value fails before anything
// runs. Against a variant that starts a server, every workload — whatever
// it touches: a bucket, an upload URL, a file or device the server
// exports — is built again for every start of the server, with that
// start's port, and laid out or opened only once the server is ready; a
// workload with a setup step is too, after its setup ran.
func Cells(p *plan.Plan, variants []*variant.Variant, seg segment.Segment, show io.Writer) ([]lab.Cell, error) {
	var cells []lab.Cell
	checked := map[cgroup.Limits]error{}
	for _, v := range p.Variants {
		if v.Profile != nil && v.Profile.Perf {
			if err := profiling.CheckPerf(); err != nil {
				return nil, v.Pos.Errorf("variant %q: %v", v.Name, err)
			}
			break
		}
	}
	for _, w := range p.Workloads {
		if err := checkMatrix(p, w); err != nil {
			return nil, err
		}
		if err := checkCurve(w); err != nil {
			return nil, err
		}
		for _, point := range w.Points() {
			// Each variant's flat-out cell calibrates; the highest of their
			// rates paces the loads of every variant.
			flat := map[string]*calibration{}
			for _, load := range curveLoads(w) {
				name := cellName(w, point)
				if load != nil {
					name += " " + plan.LoadParam + "=" + load.name()
				}
				for _, v := range variants {
					c := &cellBuilder{p: p, w: w, v: v, point: point, params: map[string]string{}, seg: seg, show: show}
					if load != nil {
						if flat[v.Name] == nil {
							flat[v.Name] = &calibration{}
						}
						c.load = &curveLoad{pct: load.pct, flat: flat[v.Name], base: highest(flat)}
						if load.search != nil {
							c.load.search = &sloSearch{slo: w.SLO, SLOSearch: w.SLO.NewSearch(p.Rounds), segmented: seg.Split()}
						}
					}
					cell, err := c.cell(name, len(cells), checked)
					if err != nil {
						return nil, err
					}
					cells = append(cells, cell)
				}
			}
		}
	}
	return cells, nil
}

// cell builds the cell of one workload at one point of its matrix (and
// of its curve), for one variant; index is its place among the cells.
func (c *cellBuilder) cell(name string, index int, checked map[cgroup.Limits]error) (lab.Cell, error) {
	w, v := c.w, c.v
	for k, val := range c.point {
		c.params[k] = val.Text
	}
	maps.Copy(c.params, v.Spec().Vars) // what the variant changes in the load
	if w.Setup != nil {
		c.ids = filepath.Join(v.Tmp, fmt.Sprintf("ids-%d", index))
	}
	if err := c.checkVariant(); err != nil {
		return lab.Cell{}, err
	}
	limits, err := c.limits(checked)
	if err != nil {
		return lab.Cell{}, err
	}
	var serverLimits cgroup.Limits
	if v.HasServer() {
		serverLimits = limits
	} else {
		c.cmdLimits = limits
	}
	if w.Setup != nil {
		if _, _, err := c.build(*w.Setup, true); err != nil {
			return lab.Cell{}, err
		}
	}
	wl, target, err := c.build(w, false)
	if err != nil {
		return lab.Cell{}, err
	}
	paced := c.load != nil && !c.load.flatOut()
	searched := paced && c.load.search != nil
	// A search's every run is at a load of its own: built anew for each.
	perStart := v.HasServer() || searched
	if perStart || w.Setup != nil || paced {
		wl = &stagedWorkload{first: wl, c: c, params: c.portTemplated(wl.Params())}
	}
	cell := lab.Cell{Name: name, Variant: v.Name, Workload: wl, Target: target,
		Around: v.Lifecycle(c.p.Hooks, c.params, serverLimits), PerStart: perStart, Params: cellParams(c, limits), Calibrated: paced}
	switch {
	case c.load != nil && c.load.flatOut():
		cell.Calibrate = c.load.flat.set
	case searched:
		s := c.load.search
		cell.Rounds, cell.Done, cell.Ran, cell.FailuresAreFindings = s.MaxTotalRuns(), s.Done, s.ran, true
	}
	return cell, nil
}

// cellParams are what a cell stores beside its workload's own parameters:
// matrix fields that are not workload keys, and the limits.
func cellParams(c *cellBuilder, limits cgroup.Limits) map[string]string {
	out := maps.Clone(c.params)
	for k := range c.v.Spec().Vars {
		if redact.IsSecretName(k) {
			out[k] = redact.Mask
		}
	}
	if c.w.Scale != "" {
		out[plan.ScaleParam] = c.w.Scale
	}
	if c.load != nil {
		out[plan.LoadParam] = c.load.name()
		if c.load.search != nil {
			maps.Copy(out, c.w.SLO.Params(c.p.Rounds))
		}
	}
	if limits.Memory > 0 {
		out["limit_memory"] = units.FormatSize(limits.Memory)
	}
	if limits.CPUs > 0 {
		out["limit_cpus"] = fmt.Sprint(limits.CPUs)
	}
	return out
}

func cellName(w plan.Workload, point map[string]plan.Value) string {
	parts := []string{w.Name}
	for _, ax := range w.Matrix {
		parts = append(parts, ax.Field+"="+point[ax.Field].Text)
	}
	return strings.Join(parts, " ")
}

// checkMatrix refuses a matrix field that is neither a key of its
// workload nor used as a template anywhere: it would only rename cells.
func checkMatrix(p *plan.Plan, w plan.Workload) error {
	kind, err := lookupKind(w)
	if err != nil {
		return err
	}
	keys := kind.Keys()
	for _, ax := range w.Matrix {
		if kind.MatrixTemplates || slices.Contains(keys, ax.Field) || usesTemplate(p, w, ax.Field) {
			continue
		}
		return ax.Values[0].KeyPos.Errorf("matrix.%s: not a key of the %s workload, and no {{%s}} uses it; keys: %s",
			ax.Field, w.Kind, ax.Field, strings.Join(keys, ", "))
	}
	return nil
}

// usesTemplate says whether {{name}} appears in what a cell expands: the
// workload's fields, its setup's, and the variants' texts of a cell
// (cellTexts).
func usesTemplate(p *plan.Plan, w plan.Workload, name string) bool {
	if workloadUses(w, name) || (w.Setup != nil && workloadUses(*w.Setup, name)) {
		return true
	}
	for _, v := range p.Variants {
		for _, t := range cellTexts(v, p.Hooks) {
			if strings.Contains(t.Text, "{{"+name+"}}") {
				return true
			}
		}
	}
	return false
}

// cellTexts are a variant's texts that a cell's templates fill, by field:
// what it runs per cell (start, ready, the run hooks), its limits and its
// profile URL. (Build, env and workdir are the variant's alone.)
func cellTexts(v plan.Variant, hooks plan.Hooks) map[string]plan.Value {
	at := func(text string) plan.Value { return plan.Value{Text: text, Pos: v.Pos} }
	out := map[string]plan.Value{"start": at(v.Start), "hooks.before_run": at(hooks.BeforeRun), "hooks.after_run": at(hooks.AfterRun)}
	if v.Ready != nil {
		out["ready.http"], out["ready.tcp"], out["ready.cmd"] = at(v.Ready.HTTP), at(v.Ready.TCP), at(v.Ready.Cmd)
	}
	if v.Limits != nil {
		out["limits.memory"], out["limits.cpus"] = v.Limits.Memory, v.Limits.CPUs
	}
	if v.Profile != nil {
		out["profile.go_pprof"] = v.Profile.GoPprof
	}
	return out
}

// workloadUses says whether {{name}} appears in a workload's own fields.
func workloadUses(w plan.Workload, name string) bool {
	for _, v := range w.Fields {
		if strings.Contains(v.Text, "{{"+name+"}}") || slices.ContainsFunc(v.List, func(x plan.Value) bool { return strings.Contains(x.Text, "{{"+name+"}}") }) {
			return true
		}
	}
	return false
}

// lookupKind is the registered kind of a plan's workload.
func lookupKind(w plan.Workload) (workload.Kind, error) {
	kind, ok := workload.Lookup(w.Kind)
	if !ok {
		return kind, w.Pos.Errorf("workload %q: %v", w.Name, workload.UnknownKind(w.Kind))
	}
	return kind, nil
}

// cellBuilder builds one cell's workloads: one workload at one matrix
// point, for one variant.
type cellBuilder struct {
	p      *plan.Plan
	w      plan.Workload
	v      *variant.Variant
	point  map[string]plan.Value
	params map[string]string // the matrix point, as templates
	// ids is the file a setup step's outputs go to ({{ids}}); "" without
	// a setup step.
	ids string
	// cmdLimits confine a cmd workload of a variant without a server.
	cmdLimits cgroup.Limits
	// seg is the share of the load this process runs (--segment).
	seg segment.Segment
	// load, for a workload with a curve, is the cell's point on it.
	load *curveLoad
	// show gets what the measured workload runs prints (--show-output).
	show io.Writer
}

// expand fills a plan value's templates — the variant's, the matrix
// point's, {{ids}} — and rejects any left unknown; those in keep are
// left for the workload to fill.
func (c *cellBuilder) expand(val plan.Value, field string, keep []string) (string, error) {
	vars := maps.Clone(c.params)
	if c.ids != "" {
		vars["ids"] = c.ids
	}
	s := c.v.ExpandWith(val.Text, vars)
	rest := s
	for _, t := range keep {
		rest = strings.ReplaceAll(rest, "{{"+t+"}}", "")
	}
	m := plan.Template.FindString(rest)
	if m == "" {
		return s, nil
	}
	known := slices.Clone(plan.VariantTemplates)
	known = append(known, slices.Sorted(maps.Keys(vars))...)
	known = append(known, keep...)
	for i, k := range known {
		known[i] = "{{" + k + "}}"
	}
	hint := ""
	if m == "{{ids}}" {
		hint = " ({{ids}} is the file a workload's setup: step writes; add one)"
	}
	return "", val.Pos.Errorf("%s: unknown template %s%s; known: %s", field, m, hint, strings.Join(known, ", "))
}

// checkVariant checks the templates of what the variant runs per cell
// (start, ready, the run hooks, its profile URL) before anything starts;
// its limits are read, and checked, by limits.
func (c *cellBuilder) checkVariant() error {
	spec := c.v.Spec()
	if spec.Profile != nil && spec.Start == "" && spec.Observe == nil {
		return spec.Pos.Errorf("variant %q: profile: profiles a server; give the variant a start: (or observe: one that runs)", spec.Name)
	}
	texts := cellTexts(spec, c.p.Hooks)
	for _, field := range slices.Sorted(maps.Keys(texts)) {
		if strings.HasPrefix(field, "limits.") {
			continue
		}
		if _, err := c.expand(texts[field], fmt.Sprintf("variant %q: %s", spec.Name, field), nil); err != nil {
			return err
		}
	}
	return nil
}

// limits reads the variant's limits for this cell and checks, once per
// distinct value, that this machine can apply them.
func (c *cellBuilder) limits(checked map[cgroup.Limits]error) (cgroup.Limits, error) {
	var lim cgroup.Limits
	spec := c.v.Spec().Limits
	if spec == nil {
		return lim, nil
	}
	var at plan.Pos
	if spec.Memory.Text != "" {
		text, err := c.expand(spec.Memory, "limits.memory", nil)
		if err != nil {
			return lim, err
		}
		if lim.Memory, err = units.ParseSize(text); err != nil || lim.Memory < cgroup.MinMemory {
			return lim, spec.Memory.Pos.Errorf("limits.memory %q: want a size of at least %s such as 256m or 2g", text, units.FormatSize(cgroup.MinMemory))
		}
		at = spec.Memory.Pos
	}
	if spec.CPUs.Text != "" {
		text, err := c.expand(spec.CPUs, "limits.cpus", nil)
		if err != nil {
			return lim, err
		}
		if lim.CPUs, err = units.ParseFloat(text, 0.01, 1024); err != nil {
			return lim, spec.CPUs.Pos.Errorf("limits.cpus %q: %v; want cores such as 1.5", text, err)
		}
		at = spec.CPUs.Pos
	}
	err, done := checked[lim]
	if !done {
		err = cgroup.Check(lim)
		checked[lim] = err
	}
	if err != nil {
		return lim, at.Errorf("variant %q: %v", c.v.Name, err)
	}
	return lim, nil
}

// build makes the workload spec (the measured one, or its setup step):
// its kind's options, set through their flags from the plan's fields, then
// built for this cell.
func (c *cellBuilder) build(spec plan.Workload, setup bool) (workload.Workload, string, error) {
	kind, err := lookupKind(spec)
	if err != nil {
		return nil, "", err
	}
	opts := kind.NewOptions()
	flags := pflag.NewFlagSet(spec.Kind, pflag.ContinueOnError)
	opts.AddFlags(flags)
	if err := c.applyFields(flags, kind, spec, setup); err != nil {
		return nil, "", err
	}
	if !setup && c.load != nil && c.load.flat.res != nil && !c.load.flatOut() {
		share := c.load.share()
		if share <= 0 { // a search that ended runs no more
			return nil, "", fmt.Errorf("workload %q at %s: no load left to run at", c.w.Name, c.load.name())
		}
		opts.(workload.Pacer).Pace(c.load.flat.res, share)
		if l, ok := opts.(workload.Lengthener); ok && c.load.search != nil {
			// Enough operations for the objective's percentile at a low
			// load (the report says which runs were too short still).
			l.AtLeast(c.w.SLO.MinOps())
		}
	}
	switch {
	case setup || c.load == nil:
	case c.load.flatOut():
		opts.(workload.Pacer).FlatOut()
	case c.load.flat.res == nil:
		opts.(workload.Pacer).PacedLater()
	}
	b := workload.Build{Dir: c.v.Workdir, Env: c.v.Env(), Params: c.params, Limits: c.cmdLimits, Setup: setup, Segment: c.seg}
	if !setup {
		b.Show = c.show
	}
	for _, m := range spec.Metrics {
		if setup {
			return nil, "", m.Pos.Errorf("workload %q: setup: metrics are read from the measured runs; give them to the workload itself", c.w.Name)
		}
		if _, builtin := metrics.Describe(m.Name); builtin {
			return nil, "", m.Pos.Errorf("metric %s: iolab measures a metric of that name itself; call yours something else", m.Name)
		}
		b.Metrics = append(b.Metrics, workload.OutputMetric{Name: m.Name, Regex: m.Regex, JSONKey: m.JSONKey, JSONValue: m.JSONValue, Field: m.Field, Scale: m.Scale})
	}
	wl, target, err := opts.Build(b)
	if err != nil {
		what := fmt.Sprintf("workload %q", c.w.Name)
		if setup {
			what += " setup"
		}
		return nil, "", spec.Pos.Errorf("%s: %v", what, err)
	}
	return wl, target, nil
}

// applyFields sets a plan workload's fields through the flags of its
// command, so a plan accepts exactly what the command line accepts. The
// measured workload also takes the matrix point's fields that are keys;
// the others are only templates (checkMatrix).
func (c *cellBuilder) applyFields(flags *pflag.FlagSet, kind workload.Kind, spec plan.Workload, setup bool) error {
	all := spec.Fields
	if !setup {
		all = fields(spec, c.point)
	}
	for _, key := range sortedKeys(all) {
		val := all[key]
		f := flags.Lookup(key)
		if f == nil {
			if _, isMatrix := c.point[key]; isMatrix && !setup {
				continue
			}
			hint := ""
			if kind.MatrixTemplates {
				hint = " (matrix fields become {{name}} templates)"
			}
			if near := suggest.Closest(key, kind.Keys()); near != "" {
				hint += "; did you mean " + near + "?"
			}
			return val.KeyPos.Errorf("unknown key %q in %s workload %q; known: %s%s", key, spec.Kind, c.w.Name, strings.Join(kind.Keys(), ", "), hint)
		}
		values := val.List
		if values == nil {
			values = []plan.Value{val}
		} else if !flagval.Repeatable(f) {
			return val.Pos.Errorf("%s.%s: a list, but --%s takes one value", spec.Kind, key, key)
		}
		for _, x := range values {
			text, err := c.expand(x, spec.Kind+"."+key, kind.Templates)
			if err != nil {
				return err
			}
			if slices.Contains(kind.PathKeys, key) && !filepath.IsAbs(text) {
				text = filepath.Join(c.p.Dir, text)
			}
			if err := flagval.Set(flags, key, text); err != nil {
				return x.Pos.Errorf("%s.%s %q: %v", spec.Kind, key, text, err)
			}
		}
	}
	return nil
}

// fields merges a workload's settings with a matrix point.
func fields(w plan.Workload, point map[string]plan.Value) map[string]plan.Value {
	f := map[string]plan.Value{}
	for k, v := range w.Fields {
		f[k] = v
	}
	for k, v := range point {
		f[k] = v
	}
	return f
}

// portTemplated returns a workload's parameters with what its fields made
// of {{port}} shown as the template again: the plan-time build had the
// port of no start, and every start gets a port of its own.
func (c *cellBuilder) portTemplated(params map[string]string) map[string]string {
	out := maps.Clone(params)
	port := strconv.Itoa(c.v.Port)
	for _, val := range fields(c.w, c.point) {
		for _, x := range append([]plan.Value{val}, val.List...) {
			if !strings.Contains(x.Text, "{{port}}") {
				continue
			}
			made := c.v.ExpandWith(x.Text, c.params)
			shown := strings.ReplaceAll(c.v.ExpandWith(strings.ReplaceAll(x.Text, "{{port}}", "\x00port\x00"), c.params), "\x00port\x00", "{{port}}")
			for k, v := range out {
				if v == made || (len(made) > len(port) && strings.Contains(v, made)) {
					out[k] = strings.ReplaceAll(v, made, shown)
				}
			}
		}
	}
	return out
}
