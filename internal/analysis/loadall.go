package analysis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/iolab/iolab/internal/badinput"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/store"
)

// LoadAll loads every stored experiment for a history, oldest first: each
// without its measurements (store.Summaries), except a load run in
// segments, which is merged from them (one segment at a time) where its
// first segment was; a group that is not one load is left out, said on
// stderr. Those in loaded are not loaded again.
func LoadAll(ctx context.Context, st *store.Store, stderr io.Writer, loaded ...*store.Data) ([]*store.Data, error) {
	list, err := st.ListExperiments(ctx)
	if err != nil {
		return nil, err
	}
	summaries, err := st.Summaries(ctx)
	if err != nil {
		return nil, err
	}
	var out []*store.Data
	merged := map[string]bool{}
	for _, e := range slices.Backward(list) {
		if g := e.SegmentGroup; g != "" {
			if merged[g] {
				continue
			}
			merged[g] = true
			// A merged load the caller has (its group, no segment) is used.
			if i := slices.IndexFunc(loaded, func(d *store.Data) bool { return d.Experiment.SegmentGroup == g && d.Experiment.Segment == "" }); i >= 0 {
				out = append(out, loaded[i])
				continue
			}
			d, _, err := MergeGroup(ctx, st, g, nil)
			var malformed *MalformedGroup
			switch {
			case errors.As(err, &malformed):
				fmt.Fprintf(stderr, "iolab: segment group %s is not one load (%v); left out\n", g, malformed)
				continue
			case err != nil:
				return nil, err
			}
			out = append(out, d)
			continue
		}
		if i := slices.IndexFunc(loaded, func(d *store.Data) bool { return d.Experiment.ID == e.ID }); i >= 0 {
			out = append(out, loaded[i])
			continue
		}
		if d := summaries[e.ID]; d != nil { // nil: stored since the list was read
			out = append(out, d)
		}
	}
	return out, nil
}

// NoHistory says why a history matched nothing: what cells and metrics there are.
func NoHistory(exps []*store.Data, filter CellFilter, metric string) error {
	if len(exps) == 0 {
		return badinput.Errorf("iolab history: the database holds no experiments yet")
	}
	var cells, stored []string
	for _, d := range exps {
		for _, c := range d.Cells {
			name := c.Name
			if c.Variant != "" {
				name = c.Variant + "/" + name
			}
			cells = append(cells, name)
		}
		for _, r := range d.Runs {
			if r.Result != nil {
				for k := range metrics.RunMetrics(r.Result) {
					stored = append(stored, k)
				}
			}
		}
	}
	slices.Sort(cells)
	slices.Sort(stored)
	if metric != "" && !slices.Contains(stored, metric) {
		return badinput.Errorf("--metric %q: no stored run has it; stored metrics: %s", metric, strings.Join(slices.Compact(stored), ", "))
	}
	if def, known := metrics.Describe(metric); metric != "" && !(known && def.Judged()) {
		return badinput.Errorf("--metric %q: iolab does not know which way is better for it: it is neither a metric iolab judges nor one a plan's metrics: declare", metric)
	}
	return badinput.Errorf("iolab history %s: no cell with measured runs matches; stored cells: %s", strings.Join(filter, " "), strings.Join(slices.Compact(cells), ", "))
}
