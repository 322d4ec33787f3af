package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/workload/frames"
)

// FramesOptions are the flags of `iolab frames`.
type FramesOptions struct {
	Job     frames.Options
	profile string
	width   int
	height  int
	bpp     int
	pattern string
	list    bool
	Repeat  RepeatOptions
}

// AddJobFlags registers the workload's options, which plans use as keys.
func (o *FramesOptions) AddJobFlags(f *pflag.FlagSet) {
	j := &o.Job
	f.StringVar(&j.Directory, "directory", "", "directory for the frame files (with --read and no --profile: an existing sequence, read as it is)")
	f.StringVar(&j.Stream, "stream", "", "one file holding every frame at its offset (created if missing), instead of a file per frame")
	f.StringVar(&o.profile, "profile", "", "frame format by vframetest's names (FULLHD-24bit, 4K-DCI-32bit, 8K-24bit; --list shows all) or WIDTHxHEIGHTxBITS")
	j.Header = frames.DefaultHeader
	f.Var(flagval.Size{P: &j.Header, Max: 1 << 30}, "header", "bytes before each frame's pixels (vframetest's default 64k)")
	f.StringVar(&j.Order, "order", frames.OrderSequential, "frame order: sequential, reverse or random (the same permutation every run)")
	flagval.IntVar(f, &o.width, "width", 0, 0, 1<<16, "frame width in pixels (instead of --profile)")
	flagval.IntVar(f, &o.height, "height", 0, 0, 1<<16, "frame height in pixels")
	flagval.IntVar(f, &o.bpp, "bytes-per-pixel", 0, 0, 16, "bytes per pixel")
	flagval.IntVar(f, &j.Frames, "frames", 0, 0, frames.MaxFrames, "frames per run (default 100; reading an existing sequence: all of it)")
	flagval.IntVar(f, &j.Threads, "threads", 1, 1, 1024, "frames in flight")
	f.Var(flagval.BoolInt{P: &j.Direct}, "direct", "O_DIRECT (1 or 0)")
	f.Lookup("direct").NoOptDefVal = "1"
	flagval.FloatVar(f, &j.FPS, "fps", 0, 0, 100_000, "target frame rate: frame i may start at i/F and is late after (i+1)/F")
	f.BoolVar(&j.DropLate, "drop-late", false, "with --fps, drop a frame not started by its deadline")
	f.BoolVar(&j.FailOnLate, "fail-on-late", false, "with --fps, exit 1 when a measured run has a late or dropped frame (FAIL)")
	f.BoolVar(&j.Read, "read", false, "read the frames back (written once, untimed, before the runs)")
	f.StringVar(&o.pattern, "pattern", "random", "frame content: random, zeros or compressible (half zeros)")
	f.BoolVar(&j.Keep, "keep", false, "leave the frame files")
}

func (o *FramesOptions) job() (frames.Options, error) {
	j := o.Job
	j.KeepGoing = o.Repeat.KeepGoing
	switch {
	case o.profile != "" && (o.width != 0 || o.height != 0 || o.bpp != 0):
		return j, fmt.Errorf("--profile or --width/--height/--bytes-per-pixel: give one")
	case o.profile != "":
		p, err := frames.LookupProfile(o.profile)
		if err != nil {
			return j, fmt.Errorf("--profile %w", err)
		}
		j.Profile = p
	default:
		j.Profile = frames.Profile{Width: o.width, Height: o.height, BytesPerPixel: o.bpp}
	}
	switch o.pattern {
	case "random":
	case "zeros":
		j.Data.Zeros = true
	case "compressible":
		j.Data.CompressPct = 50
	default:
		return j, fmt.Errorf("--pattern %q: want random, zeros or compressible", o.pattern)
	}
	return j, nil
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
	o.AddJobFlags(cmd.Flags())
	cmd.Flags().BoolVar(&o.list, "list", false, "list the built-in profiles and their frame sizes")
	o.Repeat.AddFlags(cmd.Flags())
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
	job, err := o.job()
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
	target := job.Directory
	if target == "" {
		target = job.Stream
	}
	cells := []lab.Cell{{Name: name, Workload: w, Target: target}}
	plan := lab.Plan{Name: "frames", Command: command, Settings: w.Params()}
	return runExperiment(ctx, o.Repeat, plan, cells, 0, stdout, stderr)
}
