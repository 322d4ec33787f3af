package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/workload"
	"github.com/iolab/iolab/internal/workload/s3"
)

// S3Options are the flags of `iolab s3`.
type S3Options struct {
	s3.Flags
	Repeat RepeatOptions
}

// AddFlags registers the workload's and the repeat flags.
func (o *S3Options) AddFlags(f *pflag.FlagSet) {
	o.Flags.AddFlags(f)
	o.Repeat.AddFlags(f, true)
}

func newS3Command(stdout, stderr io.Writer) *cobra.Command {
	var o S3Options
	var capacity capacityFlags
	cmd := &cobra.Command{
		Use:   "s3",
		Short: "Object operations against any S3-compatible endpoint, repeated in rounds and stored",
		Example: `  AWS_ACCESS_KEY_ID=.. AWS_SECRET_ACCESS_KEY=.. iolab s3 --endpoint http://127.0.0.1:9000 --bucket b --create-bucket \
      --mix put=50,get=50 --size 4k --concurrency 8 --runtime 10s --verify`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if capacity.given() {
				kind, _ := workload.Lookup("s3")
				return capacity.run(cmd, kind, nil, o.Repeat, stdout, stderr)
			}
			return runS3(cmd.Context(), o, commandLine(cmd), stdout, stderr)
		},
	}
	o.AddFlags(cmd.Flags())
	capacity.addFlags(cmd.Flags())
	cmd.AddCommand(newS3VerifyCommand(stdout))
	return cmd
}

func runS3(ctx context.Context, o S3Options, command string, stdout, stderr io.Writer) error {
	if err := o.Repeat.validate(); err != nil {
		return err
	}
	job, err := o.Options()
	if err != nil {
		return &UsageError{Err: err}
	}
	job.Segment = o.Repeat.Segment
	w, err := s3.New(job)
	if err != nil {
		return &UsageError{Err: err}
	}
	name := "s3 " + job.Mix.String() + " " + job.Sizes.String() + fmt.Sprintf(" c%d", job.Concurrency)
	cells := []lab.Cell{{Name: strings.TrimSpace(name), Workload: w, Target: "."}}
	plan := lab.Plan{Name: "s3", Command: command, Settings: w.Params()}
	return runExperiment(ctx, o.Repeat, plan, cells, job.Runtime, stdout, stderr)
}
