package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/scratch"
	"github.com/iolab/iolab/internal/workload/fs"
)

// RunOptions are the flags of `iolab run`, the default suite.
type RunOptions struct {
	Dir     string
	Runtime time.Duration
	Size    int64
	Engine  string
	Repeat  RepeatOptions
}

func newRunCommand(stdout, stderr io.Writer) *cobra.Command {
	var o RunOptions
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the default suite (about a minute) in a temp dir on the local disk",
		Long: `Runs four fs cells in interleaved rounds, direct I/O, in a temporary directory
that is removed afterwards: sequential write and read of 1 MiB blocks (QD8),
4 KiB random reads (QD1), and 4 KiB random 70/30 read/write at QD32 x 4 jobs.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSuite(cmd.Context(), o, commandLine(cmd), stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "dir", "", "directory to test in (a temp dir is made inside it; default: a temp dir on a disk, not tmpfs)")
	o.Runtime = 2 * time.Second
	f.Var(flagval.Duration{P: &o.Runtime}, "runtime", "duration of each run")
	o.Size = 256 << 20
	f.Var(flagval.Size{P: &o.Size, Min: 1 << 20}, "size", "file size per job")
	f.StringVar(&o.Engine, "ioengine", fs.DefaultEngine, "auto|psync|psync-pool|io_uring|fio")
	o.Repeat.AddFlags(f, false)
	return cmd
}

// suite is the default cells: the questions a storage team asks first.
func suite(dir string, o RunOptions) []fs.Options {
	base := fs.DefaultOptions()
	base.Directory, base.Size, base.Runtime, base.Direct, base.Engine = dir, o.Size, o.Runtime, true, o.Engine
	seqWrite, seqRead, randRead, randRW := base, base, base, base
	seqWrite.RW, seqWrite.BlockSize, seqWrite.IODepth = fs.Write, 1<<20, 8
	seqRead.RW, seqRead.BlockSize, seqRead.IODepth = fs.Read, 1<<20, 8
	randRead.RW, randRead.BlockSize = fs.RandRead, 4096
	randRW.RW, randRW.BlockSize, randRW.RWMixRead, randRW.IODepth, randRW.NumJobs = fs.RandRW, 4096, 70, 32, 4
	return []fs.Options{seqWrite, seqRead, randRead, randRW}
}

func runSuite(ctx context.Context, o RunOptions, command string, stdout, stderr io.Writer) error {
	if err := o.Repeat.validate(); err != nil {
		return err
	}
	parent := o.Dir
	if parent == "" {
		parent = diskTempDir()
	} else if st, err := os.Stat(parent); err != nil || !st.IsDir() {
		return usage("--dir %s: no such directory; point --dir at an existing directory", parent)
	}
	scratch.RemoveStale(parent, "suite") // the files a killed suite left
	dir, err := scratch.Dir(parent, "suite")
	if err != nil {
		return usage("--dir %s: cannot create a temp dir in it (%v); point --dir at a writable directory", parent, err)
	}
	defer os.RemoveAll(dir)
	var cells []lab.Cell
	var settings []map[string]string
	for _, job := range suite(dir, o) {
		w, err := fs.New(job)
		if err != nil {
			return &UsageError{Err: err}
		}
		cells = append(cells, lab.Cell{Name: fsCellName(w.LoadOptions()), Workload: w, Target: dir})
		settings = append(settings, w.Params())
	}
	fmt.Fprintf(stderr, "iolab: default suite in %s: %d cells x (%d warm-up + %d rounds) x %v\n",
		dir, len(cells), o.Repeat.Warmup, o.Repeat.Rounds, o.Runtime)
	plan := lab.Plan{Name: "suite", Command: command, Settings: settings}
	return runExperiment(ctx, o.Repeat, plan, cells, o.Runtime, stdout, stderr)
}

// diskTempDir is the first temp location that is not in memory: $TMPDIR or
// /tmp may be tmpfs, which would measure RAM, not the disk.
func diskTempDir() string {
	for _, d := range []string{os.TempDir(), "/var/tmp", "."} {
		var st unix.Statfs_t
		if unix.Statfs(d, &st) == nil && st.Type != unix.TMPFS_MAGIC && st.Type != unix.RAMFS_MAGIC {
			return d
		}
	}
	return "."
}
