package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/outpath"
	"github.com/iolab/iolab/internal/report"
	"github.com/iolab/iolab/internal/store"
)

// colourful says whether w is a terminal that takes colour: not when
// NO_COLOR is set (no-color.org), nor TERM=dumb.
func colourful(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	if u, ok := w.(interface{ Unwrap() io.Writer }); ok {
		w = u.Unwrap()
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newRunner makes a runner that draws progress on p (nil: none) and says
// what the user should know above it.
func newRunner(st *store.Store, grace time.Duration, stderr io.Writer, p *lab.Progress) *lab.Runner {
	return &lab.Runner{Store: store.NewPatient(st, grace), Notices: p.Above(stderr), Progress: p}
}

// newProgress is the live progress line when stderr is a terminal (and
// not --quiet), else nil; it is cut to the terminal's width as it is now.
func newProgress(stderr io.Writer, runTime time.Duration, quiet bool) *lab.Progress {
	if quiet {
		return nil
	}
	terminal := stderr
	if u, ok := stderr.(interface{ Unwrap() io.Writer }); ok {
		terminal = u.Unwrap()
	}
	f, ok := terminal.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	width := func() int {
		w, _, err := term.GetSize(int(f.Fd()))
		if err != nil {
			return 0
		}
		return w
	}
	return &lab.Progress{W: stderr, Width: width, RunTime: runTime}
}

func printExperiment(ctx context.Context, st *store.Store, id string, o RepeatOptions, stdout, stderr io.Writer) error {
	data, err := st.Load(ctx, id)
	if err != nil {
		return err
	}
	var segments *analysis.SegmentsView
	if o.mergeSegments && data.Experiment.SegmentGroup != "" {
		if data, segments, err = analysis.LoadSegments(ctx, st, data); err != nil {
			return err
		}
	}
	var opts analysis.Options
	if sp, ok := data.Experiment.PlanRecord(); ok { // experiments of plans keep how to compare
		opts = analysis.OptionsFor(sp)
	}
	opts.Segments = segments
	opts.Series = o.Series
	if o.along != "" {
		if err := analysis.CheckAlong(data, o.along); err != nil {
			return &UsageError{Err: err}
		}
		opts.Along = o.along
	}
	if len(o.At) > 0 {
		opts.Extrapolate.At = o.At
	}
	rep, err := writeExperiment(data, opts, o, st, stdout)
	if err != nil {
		return err
	}
	if err := o.writeExports(rep); err != nil {
		return err
	}
	if len(o.Gates.FailOn) == 0 && len(o.Gates.Limits) == 0 {
		return nil
	}
	v, err := o.Gates.Check(rep)
	if err != nil {
		return err
	}
	for _, p := range v.Passed {
		fmt.Fprintf(stderr, "iolab: gate kept: %s\n", p)
	}
	if len(v.Failed) > 0 {
		return fmt.Errorf("%w: %s", analysis.ErrGate, strings.Join(v.Failed, "; "))
	}
	return nil
}

// writeExperiment prints a stored experiment's report, or one of its
// exports, and returns the report's model.
func writeExperiment(data *store.Data, opts analysis.Options, o RepeatOptions, st *store.Store, stdout io.Writer) (*analysis.Report, error) {
	rep := analysis.Build(data, opts)
	switch o.Format { // the exports write the model's runs whole
	case report.FormatCSV:
		return rep, report.CSV(stdout, rep, o.Series)
	case report.FormatNDJSON:
		return rep, report.NDJSON(stdout, rep, o.Series)
	case report.FormatBench:
		return rep, report.Bench(stdout, rep)
	case report.FormatFrames:
		return rep, report.FramesCSV(stdout, rep)
	case report.FormatFio, report.FormatFioPlus:
		return rep, report.FioJSON(stdout, rep, o.Format == report.FormatFioPlus, Version())
	}
	switch {
	case o.JSON:
		return rep, report.JSON(stdout, rep)
	case o.Format == "md":
		return rep, report.Markdown(stdout, rep)
	}
	rep.Colour = colourful(stdout)
	if err := report.Terminal(stdout, rep); err != nil {
		return rep, err
	}
	fmt.Fprintf(stdout, "\nstored in %s as experiment %s; `%s` prints this again\n", st.Path(), rep.Experiment, showCommand(rep.Experiment, o.DB))
	return rep, nil
}

// commandLine renders the invocation, with the flags that were set, for
// the record.
func commandLine(cmd *cobra.Command) string {
	parts := []string{cmd.CommandPath()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		parts = append(parts, "--"+f.Name+"="+f.Value.String())
	})
	return strings.Join(parts, " ")
}

// writeExports writes the report to the files --export-json,
// --export-markdown and --export-csv name, each whole or not at all.
func (o RepeatOptions) writeExports(rep *analysis.Report) error {
	for i, path := range o.exportTo {
		if path == "" {
			continue
		}
		format := report.Exports[i]
		var b bytes.Buffer
		if err := report.Export(&b, rep, format, o.Series); err != nil {
			return err
		}
		if err := outpath.Write("--export-"+format, path, b.Bytes(), report.IsExport(format)); err != nil {
			return err
		}
	}
	return nil
}
