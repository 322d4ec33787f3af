package report

import (
	"bytes"
	"io"
	"testing"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/store"
)

// twoVariants is experiment() run by two variants, b 20% slower, in
// interleaved rounds, with a plan's record.
func twoVariants() *store.Data {
	d := experiment()
	d.Experiment.Plan = []byte(`{"plan_text": "x", "baseline": "a", "threshold": 0.02, "order": "random", "commits": {"b": "2222222"}}`)
	d.Cells[0].Variant = "a"
	b := d.Cells[0]
	b.ID, b.Index, b.Variant = 2, 1, "b"
	d.Cells = append(d.Cells, b)
	n := len(d.Runs)
	for i := range n {
		r := d.Runs[i]
		res := *r.Result
		res.ByOp[metrics.Read].Ops = res.ByOp[metrics.Read].Ops * 8 / 10
		res.Start = res.Start.Add(30_000_000_000)
		r.ID, r.CellID, r.Slot, r.Result = int64(n+i+1), 2, 1, &res
		d.Runs = append(d.Runs, r)
	}
	return d
}

// Every format renders the report's model and has a golden file, of a one-cell experiment and of one of
// two variants: a change to any format shows as a diff here.
func TestEveryFormatGolden(t *testing.T) {
	for _, f := range []struct {
		name   string
		render func(io.Writer, *store.Data) error
	}{
		{"txt", func(w io.Writer, d *store.Data) error { return Terminal(w, Build(d, optionsOf(d))) }},
		{"md", func(w io.Writer, d *store.Data) error { return Markdown(w, Build(d, optionsOf(d))) }},
		{"json", func(w io.Writer, d *store.Data) error { return JSON(w, Build(d, optionsOf(d))) }},
		{"csv", func(w io.Writer, d *store.Data) error { return CSV(w, Build(d, optionsOf(d)), false) }},
		{"ndjson", func(w io.Writer, d *store.Data) error { return NDJSON(w, Build(d, optionsOf(d)), false) }},
		{"bench", func(w io.Writer, d *store.Data) error { return Bench(w, Build(d, optionsOf(d))) }},
		{"fio.json", func(w io.Writer, d *store.Data) error { return FioJSON(w, Build(d, optionsOf(d)), false, "iolab-test") }},
		{"fioplus.json", func(w io.Writer, d *store.Data) error { return FioJSON(w, Build(d, optionsOf(d)), true, "iolab-test") }},
	} {
		for fixture, d := range map[string]*store.Data{"one": experiment(), "variants": twoVariants()} {
			var buf bytes.Buffer
			if err := f.render(&buf, d); err != nil {
				t.Fatalf("%s %s: %v", fixture, f.name, err)
			}
			golden(t, fixture+"."+f.name, buf.Bytes())
		}
	}
}

func optionsOf(d *store.Data) Options {
	if rec, ok := d.Experiment.PlanRecord(); ok {
		return OptionsFor(rec)
	}
	return Options{}
}
