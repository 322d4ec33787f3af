package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/workload/frames"
)

// FramesOptions are the flags of `iolab frames`.
type FramesOptions struct {
	frames.Flags
	list   bool
	Repeat RepeatOptions
}

func newFramesCommand(stdout, stderr io.Writer) *cobra.Command {
	var o FramesOptions
	cmd := &cobra.Command{
		Use:   "frames",
		Short: "Video frames as files, written or read on a deadline (as frametest), repeated and stored",
		Example: `  iolab frames --directory /mnt/nas --profile 8K-24bit --frames 100 --threads 16 --fps 24 --direct
  iolab frames --list`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.list {
				return listProfiles(stdout)
			}
			return runFrames(cmd.Context(), o, commandLine(cmd), stdout, stderr)
		},
	}
	o.Flags.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&o.list, "list", false, "list the built-in profiles and their frame sizes")
	o.Repeat.AddFlags(cmd.Flags(), true)
	return cmd
}

func listProfiles(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROFILE\tSCHEME\tPIXELS\tBYTES/PIXEL\tFRAME BYTES\tSAME SIZE AS\tNOTE")
	all := frames.Profiles()
	for _, p := range all {
		fmt.Fprintf(tw, "%s\t%s\t%dx%d\t%d\t%d\t%s\t%s\n", p.Name, p.Scheme, p.Width, p.Height, p.BytesPerPixel,
			p.FrameBytes(frames.DefaultHeader), strings.Join(frames.SameAs(p, all), " "), p.Warning)
	}
	fmt.Fprintf(tw, "\nframe bytes = width x height x bytes per pixel + the --header (default %d, vframetest's), rounded up to 4 KiB;\n"+
		"vframetest's names mean vframetest's sizes; iolab's own names are kept where vframetest has none; WIDTHxHEIGHTxBITS gives any other\n",
		frames.DefaultHeader)
	return tw.Flush()
}

func runFrames(ctx context.Context, o FramesOptions, command string, stdout, stderr io.Writer) error {
	if err := o.Repeat.validate(); err != nil {
		return err
	}
	job, err := o.Options()
	job.KeepGoing = o.Repeat.KeepGoing
	if err != nil {
		return &UsageError{Err: err}
	}
	job.Segment = o.Repeat.Segment
	w, err := frames.New(job)
	if err != nil {
		return &UsageError{Err: err}
	}
	name := fmt.Sprintf("frames %s x%s t%d", w.Params()["profile"], w.Params()["frames"], job.Threads)
	if job.Order != frames.OrderSequential {
		name += " " + job.Order
	}
	if job.FPS > 0 {
		name += fmt.Sprintf(" @%gfps", job.FPS)
	}
	cells := []lab.Cell{{Name: name, Workload: w, Target: job.Target()}}
	plan := lab.Plan{Name: "frames", Command: command, Settings: w.Params()}
	return runExperiment(ctx, o.Repeat, plan, cells, 0, stdout, stderr)
}
