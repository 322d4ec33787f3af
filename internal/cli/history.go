package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/report"
	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/units"
)

func newHistoryCommand(stdout io.Writer) *cobra.Command {
	var db, format, threshold, metric string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history [CELL-FILTER...]",
		Short: "Line up the same cell across stored experiments in time order: medians, notes, what changed, change points",
		Long: `Line up the same cell (workload and parameters, wherever it ran) of each variant across the
stored experiments, oldest first: per experiment the median [95% CI] of the metric, the step
from the experiment before, its notes (iolab note, --note), what changed under it (kernel, CPU,
disk, iolab version, the variant's commit), and the change points e-divisive means finds.

A filter term is KEY=VALUE (a parameter such as rw=randread, or workload=, variant=, cell=) or a
word in the cell's name or workload; every term must hold.`,
		Example: `  iolab history
  iolab history rw=randread bs=4k
  iolab history upload --metric put.lat_p99_ns --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runHistory(cmd.Context(), db, analysis.CellFilter(args), metric, threshold, format, asJSON, stdout, cmd.ErrOrStderr())
		},
	}
	dbFlag(cmd.Flags(), &db)
	cmd.Flags().StringVar(&metric, "metric", "", "the metric to follow (default: each workload's primary metric)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the histories as JSON")
	cmd.Flags().StringVar(&format, "format", "text", "text or md (Markdown)")
	cmd.Flags().StringVar(&threshold, "threshold", "2%", "the practical difference steps and change points are judged by")
	return cmd
}

// openToCompare checks --format and --threshold of a command that
// compares stored runs, then opens --db.
func openToCompare(ctx context.Context, db, format, threshold string) (*store.Store, float64, error) {
	if format != "text" && format != "md" {
		return nil, 0, usage("--format %q: want text or md", format)
	}
	th, err := parseThreshold(threshold)
	if err != nil {
		return nil, 0, err
	}
	st, err := openExisting(ctx, db)
	return st, th, err
}

// parseThreshold reads a --threshold percentage.
func parseThreshold(text string) (float64, error) {
	th, err := units.ParseFloat(strings.TrimSuffix(text, "%"), 0, 100)
	if err == nil && strings.HasSuffix(text, "%") {
		th /= 100
	}
	if err != nil || th <= 0 || th >= 1 {
		return 0, usage("--threshold %q: want a percentage above 0 and below 100 such as 2%%", text)
	}
	return th, nil
}

func runHistory(ctx context.Context, db string, filter analysis.CellFilter, metric, threshold, format string, asJSON bool, stdout, stderr io.Writer) error {
	st, th, err := openToCompare(ctx, db, format, threshold)
	if err != nil {
		return err
	}
	defer st.Close()
	exps, err := analysis.LoadAll(ctx, st, stderr)
	if err != nil {
		return err
	}
	hs := analysis.BuildHistory(exps, filter, metric, th)
	if len(hs) == 0 {
		return analysis.NoHistory(exps, filter, metric)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(hs)
	}
	return report.WriteHistory(stdout, hs, format == "md")
}
