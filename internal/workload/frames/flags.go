package frames

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/workload"
)

func init() {
	metrics.DeclareFor("frames",
		metrics.Def{Name: "frames_fps", Label: "frames/s", Unit: "frames/s", Better: metrics.HigherIsBetter}, // segments play at once: rates add up
		metrics.Def{Name: "frames_late", Label: "late frames", Unit: "frames", Better: metrics.LowerIsBetter, Zeroable: true},
		metrics.Def{Name: "frames_dropped", Label: "dropped frames", Unit: "frames", Better: metrics.LowerIsBetter, Zeroable: true},
		metrics.Def{Name: "frames_done", Unit: "frames", Better: metrics.HigherIsBetter, Zeroable: true},
		metrics.Def{Name: "frames_failed", Unit: "frames"},
		metrics.Def{Name: "frames_success_pct", Label: "frames ok %", Unit: "%", Merge: metrics.MergeRecompute},
		metrics.Def{Name: "frames_worst_late_ns", Unit: "ns", Better: metrics.LowerIsBetter, Zeroable: true, Merge: metrics.MergeMax},
		metrics.Def{Name: "frames_target_fps", Unit: "frames/s", Merge: metrics.MergeMax},
		metrics.Def{Name: "frames_pass", Unit: "pass", Merge: metrics.MergeMin},
		// How much longer the slowest thread ran than the threads' mean: a
		// split into fixed blocks (vframetest's) lasts as long as its
		// slowest thread.
		metrics.Def{Name: "frames_thread_spread", Label: "slowest thread / mean", Unit: "x", Better: metrics.LowerIsBetter, Merge: metrics.MergeMax},
	)
	workload.Register(workload.Kind{
		Name:        "frames",
		Short:       "video frames as files, written or read on a deadline (as frametest)",
		NewOptions:  func() workload.Options { return new(Flags) },
		Splits:      true,
		TouchesDisk: true,
		PathKeys:    []string{"directory", "stream"},
		Primary:     "frames_fps",
		Metrics:     []string{"frames_fps", "write.lat_p99_ns", "read.lat_p99_ns", "frames_late"},
	})
}

// Flags are the frames workload's options: the flags of `iolab frames`
// and the keys of a plan's frames: workload, declared once.
type Flags struct {
	Job     Options
	profile string
	width   int
	height  int
	bpp     int
	pattern string
}

// AddFlags registers the workload's options: the flags of `iolab frames`
// and the keys of a plan's frames: workload.
func (o *Flags) AddFlags(f *pflag.FlagSet) {
	j := &o.Job
	f.StringVar(&j.Directory, "directory", "", "directory for the frame files (with --read and no --profile: an existing sequence, read as it is)")
	f.StringVar(&j.Stream, "stream", "", "one file holding every frame at its offset (created if missing), instead of a file per frame")
	f.StringVar(&o.profile, "profile", "", "frame format by vframetest's names (FULLHD-24bit, 4K-DCI-32bit, 8K-24bit; --list shows all) or WIDTHxHEIGHTxBITS")
	j.Header = DefaultHeader
	f.Var(flagval.Size{P: &j.Header, Max: 1 << 30}, "header", "bytes before each frame's pixels (vframetest's default 64k)")
	f.StringVar(&j.Order, "order", OrderSequential, "frame order: sequential, reverse or random (the same permutation every run)")
	f.StringVar(&j.Split, "split", "", "how threads share the frames: block (vframetest's: each a contiguous block, and with --fps its share of the rate; the run lasts as long as its slowest thread) or next (each takes the next frame not taken); default block for a vframetest profile, so that its fps is vframetest's, else next")
	flagval.IntVar(f, &o.width, "width", 0, 0, 1<<16, "frame width in pixels (instead of --profile)")
	flagval.IntVar(f, &o.height, "height", 0, 0, 1<<16, "frame height in pixels")
	flagval.IntVar(f, &o.bpp, "bytes-per-pixel", 0, 0, 16, "bytes per pixel")
	flagval.IntVar(f, &j.Frames, "frames", 0, 0, MaxFrames, "frames per run (default 100; reading an existing sequence: all of it)")
	flagval.IntVar(f, &j.Threads, "threads", 1, 1, 1024, "frames in flight")
	f.Var(flagval.BoolInt{P: &j.Direct}, "direct", "O_DIRECT (1 or 0)")
	f.Lookup("direct").NoOptDefVal = "1"
	flagval.FloatVar(f, &j.FPS, "fps", 0, 0, 100_000, "target frame rate: frame i may start at i/F and is late after (i+1)/F")
	f.BoolVar(&j.DropLate, "drop-late", false, "with --fps, drop a frame not started by its deadline")
	f.BoolVar(&j.FailOnLate, "fail-on-late", false, "with --fps, exit 1 when a measured run has a late or dropped frame (FAIL)")
	f.BoolVar(&j.Read, "read", false, "read the frames back (written once, untimed, before the runs)")
	f.StringVar(&o.pattern, "pattern", "random", "frame content: random (each 4 KiB of every frame unique: its first 8 bytes stamped anew per frame), zeros or compressible (half zeros)")
	f.BoolVar(&j.Keep, "keep", false, "leave the frame files")
}

// Options resolves the parsed flags into the workload's options.
func (o *Flags) Options() (Options, error) {
	j := o.Job
	switch {
	case o.profile != "" && (o.width != 0 || o.height != 0 || o.bpp != 0):
		return j, fmt.Errorf("--profile or --width/--height/--bytes-per-pixel: give one")
	case o.profile != "":
		p, err := LookupProfile(o.profile)
		if err != nil {
			return j, fmt.Errorf("--profile %w", err)
		}
		j.Profile = p
	default:
		j.Profile = Profile{Width: o.width, Height: o.height, BytesPerPixel: o.bpp}
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

// Build implements workload.Options.
func (o *Flags) Build(b workload.Build) (workload.Workload, string, error) {
	job, err := o.Options()
	if err != nil {
		return nil, "", err
	}
	job.Segment = b.Segment
	w, err := New(job)
	return w, job.Target(), err
}

// Target is the path the frames go to: the directory, or the stream file.
func (o Options) Target() string {
	if o.Directory != "" {
		return o.Directory
	}
	return o.Stream
}
