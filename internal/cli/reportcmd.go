package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/outpath"
	"github.com/iolab/iolab/internal/profiling"
	"github.com/iolab/iolab/internal/report"
	"github.com/iolab/iolab/internal/store"
)

func newReportCommand(stdout io.Writer) *cobra.Command {
	var db, out, along string
	var run int64
	cmd := &cobra.Command{
		Use:   "report [EXPERIMENT... | BISECT]",
		Short: "Write stored experiments as one self-contained HTML page with plots (default: the newest)",
		Long: `Write stored experiments as one HTML file that opens from disk with nothing fetched: per
experiment the verdict table, and per cell every run per variant with the median's interval,
the latency distribution, every run at the time it ran and every second of the runs (drift
shows at a glance), one run second by second (with the server's memory and CPU when watched),
scale curves with their fits and prediction band, server profiles, the environment and the
warnings; then the history of the same cells across the store, with change points.
Given a bisect's ID (iolab bisect prints it), the page of that bisect: its path over the commit
range and each step's comparisons.`,
		Example: `  iolab report -o report.html
  iolab report 20261120-080000-0001 20261121-080000-0002 -o week.html
  iolab report --run 42 -o run42.html`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd.Context(), db, args, out, along, run, stdout, cmd.ErrOrStderr())
		},
	}
	dbFlag(cmd.Flags(), &db)
	cmd.Flags().StringVarP(&out, "output", "o", "report.html", "the HTML file to write (- for standard output)")
	cmd.Flags().StringVar(&along, "along", "", "compare each experiment's cells along this matrix field instead of variants against variants (FIELD or FIELD=BASE), as show --along")
	flagval.IntVar(cmd.Flags(), &run, "run", 0, 0, 1<<62, "the run drawn second by second (its id, from show --json); default: the measured run furthest from its variant's median")
	return cmd
}

func runReport(ctx context.Context, db string, ids []string, out, along string, run int64, stdout, stderr io.Writer) error {
	st, err := openExisting(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	if len(ids) == 0 {
		ids = []string{""} // the newest
	}
	for _, id := range ids {
		view, err := storedBisect(ctx, st, id)
		if err != nil {
			return err
		}
		if view == nil {
			continue
		}
		if len(ids) > 1 {
			return usage("%s is a bisect: report draws it alone (its steps' experiments can be reported together: %s)", id, strings.Join(view.Experiments, " "))
		}
		var page bytes.Buffer
		if err := report.BisectHTML(&page, view); err != nil {
			return err
		}
		return writeReport(out, page.Bytes(), stdout)
	}
	pg := report.Page{Profiles: map[string]string{}, Run: run, Generated: time.Now()}
	var shown []*store.Data
	for _, id := range ids {
		d, err := st.Load(ctx, id)
		if err != nil {
			return err
		}
		var segments *analysis.SegmentsView
		if d.Experiment.SegmentGroup != "" { // a load run in segments is drawn whole
			if d, segments, err = analysis.LoadSegments(ctx, st, d); err != nil {
				return err
			}
		}
		var opts analysis.Options
		sp, ok := d.Experiment.PlanRecord()
		if ok {
			opts = analysis.OptionsFor(sp)
		}
		opts.Series, opts.Segments = true, segments
		if along != "" {
			if err := analysis.CheckAlong(d, along); err != nil {
				return &UsageError{Err: err}
			}
			opts.Along = along
		}
		pg.Reports = append(pg.Reports, analysis.Build(d, opts))
		shown = append(shown, d)
		stored, err := st.Profiles(ctx, d.Experiment.ID)
		if err != nil {
			return err
		}
		if len(stored) > 0 {
			views, err := analysis.ProfileViews(d, stored, sp.Baseline, analysis.ProfileOptions{Top: 15, Sort: profiling.SortFlat})
			if err != nil {
				return err
			}
			var b bytes.Buffer
			report.Profiles(&b, views, sp.Baseline)
			pg.Profiles[d.Experiment.ID] = b.String()
		}
	}
	if run != 0 && !hasRun(pg.Reports, run) {
		return usage("--run %d: no run of the experiments reported has that id; `iolab show EXP --json` lists runs with their ids", run)
	}
	all, err := analysis.LoadAll(ctx, st, stderr, shown...)
	if err != nil {
		return err
	}
	pg.Histories = analysis.HistoriesFor(all, shown, 0)
	var page bytes.Buffer
	if err := report.HTML(&page, pg); err != nil {
		return err
	}
	return writeReport(out, page.Bytes(), stdout)
}

// writeReport writes a page to out (- for stdout) and says where.
func writeReport(out string, page []byte, stdout io.Writer) error {
	if out == "-" {
		_, err := stdout.Write(page)
		return err
	}
	if err := outpath.Write("-o", out, page, report.IsPage); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%s): open it in a browser\n", out, analysis.FormatMetric("page_bytes", float64(len(page))))
	return nil
}

func hasRun(reports []*analysis.Report, id int64) bool {
	for _, r := range reports {
		for _, run := range r.Runs {
			if run.ID == id {
				return true
			}
		}
	}
	return false
}
