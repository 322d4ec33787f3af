package report

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/analysis/analysistest"
	"github.com/iolab/iolab/internal/store"
)

// Every format renders the report's model and has a golden file, of a one-cell experiment and of one of
// two variants: a change to any format shows as a diff here.
func TestEveryFormatGolden(t *testing.T) {
	for _, f := range []struct {
		name   string
		render func(io.Writer, *store.Data) error
	}{
		{"txt", func(w io.Writer, d *store.Data) error { return Terminal(w, analysis.Build(d, optionsOf(d))) }},
		{"md", func(w io.Writer, d *store.Data) error { return Markdown(w, analysis.Build(d, optionsOf(d))) }},
		{"json", func(w io.Writer, d *store.Data) error { return JSON(w, analysis.Build(d, optionsOf(d))) }},
		{"csv", func(w io.Writer, d *store.Data) error { return CSV(w, analysis.Build(d, optionsOf(d)), false) }},
		{"ndjson", func(w io.Writer, d *store.Data) error { return NDJSON(w, analysis.Build(d, optionsOf(d)), false) }},
		{"bench", func(w io.Writer, d *store.Data) error { return Bench(w, analysis.Build(d, optionsOf(d))) }},
		{"fio.json", func(w io.Writer, d *store.Data) error {
			return FioJSON(w, analysis.Build(d, optionsOf(d)), false, "iolab-test")
		}},
		{"fioplus.json", func(w io.Writer, d *store.Data) error {
			return FioJSON(w, analysis.Build(d, optionsOf(d)), true, "iolab-test")
		}},
	} {
		for fixture, d := range map[string]*store.Data{"one": analysistest.Experiment(), "variants": analysistest.TwoVariants()} {
			var buf bytes.Buffer
			if err := f.render(&buf, d); err != nil {
				t.Fatalf("%s %s: %v", fixture, f.name, err)
			}
			golden(t, fixture+"."+f.name, buf.Bytes())
		}
	}
}

func optionsOf(d *store.Data) analysis.Options {
	if rec, ok := d.Experiment.PlanRecord(); ok {
		return analysis.OptionsFor(rec)
	}
	return analysis.Options{}
}

// The HTML page of the two variants, with their seconds, has a golden
// file too: its tables and every plot's SVG.
func TestHTMLGolden(t *testing.T) {
	page := func() []byte {
		d := analysistest.TwoVariants()
		opts := optionsOf(d)
		opts.Series = true
		var buf bytes.Buffer
		pg := Page{Reports: []*analysis.Report{analysis.Build(d, opts)}, Generated: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
		if err := HTML(&buf, pg); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	first := page()
	if !bytes.Equal(first, page()) {
		t.Fatal("the same model gave two different pages")
	}
	golden(t, "variants.html", first)
}
