package cmd

import (
	"math"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/workload"
)

func init() {
	metrics.DeclareFor("cmd",
		metrics.Def{Name: "wall_s", Label: "wall", NounLabel: "wall time", Unit: "s", Bench: "sec/op", Better: metrics.LowerIsBetter, Merge: metrics.MergeMax},
		metrics.Def{Name: "user_s", Label: "user CPU", Unit: "s", Better: metrics.LowerIsBetter},
		metrics.Def{Name: "sys_s", Label: "sys CPU", Unit: "s", Better: metrics.LowerIsBetter},
		metrics.Def{Name: "max_rss_bytes", Label: "peak RSS MiB", Unit: "B", Better: metrics.LowerIsBetter, Merge: metrics.MergeMax},
		metrics.Def{Name: "items_per_s", Label: "items/s", Unit: "items/s", Better: metrics.HigherIsBetter},
		metrics.Def{Name: "exit_code", Unit: "code", Merge: metrics.MergeMax},
		// Block I/O of the command's tree (rusage): not judged, but what
		// tells its own I/O from other work's.
		metrics.Def{Name: "disk_read_bytes", Label: "disk read", Unit: "B", Zeroable: true, BlockIO: true},
		metrics.Def{Name: "disk_write_bytes", Label: "disk written", Unit: "B", Zeroable: true, BlockIO: true},
	)
	workload.Register(workload.Kind{
		Name:            "cmd",
		Short:           "any command, timed as a whole process (wall, CPU, peak RSS), at growing scale",
		NewOptions:      func() workload.Options { return new(Flags) },
		Templates:       []string{"run", "round"},
		MatrixTemplates: true,
		OutputMetrics:   true,
		Arguments:       "run",
		Primary:         "wall_s",
		Metrics:         []string{"wall_s", "bytes_per_s", "items_per_s", "max_rss_bytes"},
	})
}

// Flags are a plan's cmd: keys, declared once.
type Flags struct {
	o Options
}

// AddFlags implements workload.Options.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.o.Run, "run", "", "the shell command of each run (sh -c); {{run}} and {{round}} are the run's and the round's numbers, matrix fields are {{templates}}")
	fs.Var(flagval.Size{P: &f.o.BytesPerRun, Min: 1}, "bytes", "bytes one run handles, for bytes_per_s")
	flagval.IntVar(fs, &f.o.ItemsPerRun, "items", 0, 1, math.MaxInt64, "items one run handles, for items_per_s")
	fs.Var(flagval.Duration{P: &f.o.Timeout}, "timeout", "kill the command's process group after this long")
	fs.StringVarP(&f.o.Shell, "shell", "S", "", "the shell each run's command runs in, with -c (default sh), as hyperfine's --shell; none: no shell, the command's words (quoted as a shell quotes) run as they are, as hyperfine's -N (also -N here)")
}

// Build implements workload.Options.
func (f *Flags) Build(b workload.Build) (workload.Workload, string, error) {
	o := f.o
	o.Dir, o.Env, o.Params, o.KeepOutput, o.Show = b.Dir, b.Env, b.Params, b.Setup, b.Show
	if !b.Setup {
		o.Limits = b.Limits
	}
	for _, m := range b.Metrics {
		o.Metrics = append(o.Metrics, Metric{Name: m.Name, Regex: m.Regex, JSONKey: m.JSONKey, JSONValue: m.JSONValue, Field: m.Field, Scale: m.Scale})
	}
	w, err := New(o)
	return w, b.Dir, err
}
