package analysis

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/store"
)

// along is the experiment seen with its cells compared along a matrix
// field (FIELD or FIELD=BASE) instead of variant against variant: each
// cell's "variant" is its value of the field (memory=1g), and cells that
// differ only in it — the same workload at the same other fields, of the
// same variant — are one group, compared against the base value (the
// field's first, unless named), as variants are, in every output. The
// runs are the cells' own; only the labels change. It returns the view
// and the comparisons' baseline.
func along(d *store.Data, spec string) (*store.Data, string) {
	field, base := plan.AlongField(spec)
	variants := map[string]bool{}
	for _, c := range d.Cells {
		variants[c.Variant] = true
	}
	view := *d
	view.Cells = slices.Clone(d.Cells)
	for i, c := range view.Cells {
		value, ok := c.Params[field]
		if !ok {
			continue // compared with nothing: its own group
		}
		name := strings.Replace(c.Name, " "+field+"="+value, "", 1)
		if len(variants) > 1 {
			name += " variant=" + c.Variant
		}
		view.Cells[i].Name, view.Cells[i].Variant = name, field+"="+value
		if base == "" {
			base = value
		}
	}
	return &view, field + "=" + base
}

// CheckAlong says whether an experiment's cells can be compared along
// spec (the --along flag): its field is a matrix field of theirs and its
// base, if named, one of its values.
func CheckAlong(d *store.Data, spec string) error {
	field, base := plan.AlongField(spec)
	values := map[string]bool{}
	fields := map[string]bool{}
	for _, c := range d.Cells {
		if v, ok := c.Params[field]; ok && strings.Contains(c.Name, " "+field+"="+v) {
			values[v] = true
		}
		for _, part := range strings.Fields(c.Name) { // the workload's name has no "="
			if k, _, ok := strings.Cut(part, "="); ok {
				fields[k] = true
			}
		}
	}
	switch {
	case len(values) == 0 && len(fields) == 0:
		return fmt.Errorf("--along %s: experiment %s has no matrix (its cells differ by variant only)", spec, d.Experiment.ID)
	case len(values) == 0:
		return fmt.Errorf("--along %s: not a matrix field of experiment %s; its fields: %s", spec, d.Experiment.ID, strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
	case base != "" && !values[base]:
		return fmt.Errorf("--along %s: %s is not a value of %s in experiment %s; its values: %s", spec, base, field, d.Experiment.ID, strings.Join(slices.Sorted(maps.Keys(values)), ", "))
	}
	return nil
}
