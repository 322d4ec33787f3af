package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/workload"
	"github.com/iolab/iolab/internal/workload/httpload"
)

// HTTPOptions are the flags of `iolab http upload|download`.
type HTTPOptions struct {
	httpload.Flags
	Repeat RepeatOptions
}

func newHTTPCommand(stdout, stderr io.Writer) *cobra.Command {
	parent := &cobra.Command{Use: "http", Short: "HTTP uploads and downloads of bodies of any size, streamed",
		Args: unknownCommand, RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() }}
	for _, mode := range []string{httpload.Upload, httpload.Download} {
		var o HTTPOptions
		var capacity capacityFlags
		cmd := &cobra.Command{
			Use:   mode,
			Short: map[string]string{httpload.Upload: "PUT or POST bodies (raw or a multipart form)", httpload.Download: "GET bodies, whole or ranges"}[mode],
			Args:  noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				if capacity.given() {
					kind, _ := workload.Lookup("http")
					return capacity.run(cmd, kind, map[string]string{"mode": mode}, o.Repeat, stdout, stderr)
				}
				return runHTTP(cmd.Context(), o, mode, commandLine(cmd), stdout, stderr)
			},
		}
		o.Flags.AddFlags(cmd.Flags())
		capacity.addFlags(cmd.Flags())
		for name, only := range httpload.ModeOnly {
			if only != mode {
				cmd.Flags().MarkHidden(name) // still parsed, to be refused by name
			}
		}
		o.Repeat.AddFlags(cmd.Flags(), true)
		parent.AddCommand(cmd)
	}
	return parent
}

func runHTTP(ctx context.Context, o HTTPOptions, mode, command string, stdout, stderr io.Writer) error {
	if err := o.Repeat.validate(); err != nil {
		return err
	}
	o.Mode = mode
	job, err := o.Options()
	if err != nil {
		return &UsageError{Err: err}
	}
	job.Segment = o.Repeat.Segment
	w, err := httpload.New(job)
	if err != nil {
		return &UsageError{Err: err}
	}
	name := fmt.Sprintf("http %s c%d", mode, job.Concurrency)
	if !job.Sizes.Empty() {
		name = fmt.Sprintf("http %s %s c%d", mode, job.Sizes, job.Concurrency)
	}
	cells := []lab.Cell{{Name: name, Workload: w, Target: "."}}
	plan := lab.Plan{Name: "http " + mode, Command: command, Settings: w.Params()}
	return runExperiment(ctx, o.Repeat, plan, cells, job.Runtime, stdout, stderr)
}
