package cli

import (
	"context"
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/report"
)

func newCompareCommand(stdout io.Writer) *cobra.Command {
	var db, format, threshold string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "compare EXPERIMENT-A EXPERIMENT-B",
		Short: "Compare two stored experiments cell by cell (unpaired: B against A), as warp cmp and benchstat do",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(cmd.Context(), db, args[0], args[1], threshold, format, asJSON, stdout)
		},
	}
	dbFlag(cmd.Flags(), &db)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparisons as JSON")
	cmd.Flags().StringVar(&format, "format", "text", "text or md (Markdown)")
	cmd.Flags().StringVar(&threshold, "threshold", "2%", "the practical difference verdicts use")
	return cmd
}

func runCompare(ctx context.Context, db, a, b, threshold, format string, asJSON bool, stdout io.Writer) error {
	st, th, err := openToCompare(ctx, db, format, threshold)
	if err != nil {
		return err
	}
	defer st.Close()
	da, err := st.Load(ctx, a)
	if err != nil {
		return err
	}
	dbb, err := st.Load(ctx, b)
	if err != nil {
		return err
	}
	bt := analysis.CompareExperiments(da, dbb, th)
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"a": bt.A, "b": bt.B, "threshold": bt.Threshold, "method": "unpaired",
			"comparisons": bt.Comparisons, "only_a": bt.OnlyA, "only_b": bt.OnlyB})
	}
	return report.WriteBetween(stdout, bt, format == "md")
}
