package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/report"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/workload"
	"github.com/iolab/iolab/internal/workload/fs"
)

// FSOptions are the flags of `iolab fs`, in fio's vocabulary.
type FSOptions struct {
	fs.Flags
	name   string // the result's label, as fio's --name
	Repeat RepeatOptions
	// latLog is a job file's write_lat_log: the experiment's latency log
	// in fio's format, files named from it.
	latLog string
}

// AddFlags registers fio's option names.
func (o *FSOptions) AddFlags(f *pflag.FlagSet) {
	o.Flags.AddFlags(f)
	o.addNameFlag(f)
	o.Repeat.AddFlags(f, true)
	// fio options that describe what iolab always does: accepted so that a
	// fio command line runs unchanged.
	f.Var(fioOutputValue{&o.Repeat.Format}, "output-format", "fio's: normal (iolab's report), json or json+ (fio's JSON shape: --format fio, fio+)")
	f.Bool("group_reporting", false, "accepted as fio's; no effect (iolab reports the jobs together and each)")
	_ = f.MarkHidden("group_reporting")
}

// fioOutputValue is fio's --output-format, which sets --format.
type fioOutputValue struct{ p *string }

func (v fioOutputValue) String() string { return "normal" }
func (v fioOutputValue) Type() string   { return "normal|json|json+" }
func (v fioOutputValue) Set(s string) error {
	f, ok := map[string]string{"normal": "text", "json": report.FormatFio, "json+": report.FormatFioPlus}[s]
	if !ok {
		return fmt.Errorf("want normal, json or json+ (fio's terse is not written)")
	}
	*v.p = f
	return nil
}

func (o *FSOptions) addNameFlag(f *pflag.FlagSet) {
	f.StringVar(&o.name, "name", "", "the job's name, its label in reports (default: from the options, e.g. randrw70-4k-qd32x4-direct)")
}

// fioJobs returns the jobs of a fio job file as options, in fio's groups
// (the jobs of a group run at the same time), each over the fs flags'
// defaults with the job file's options and, over those, the job flags
// given on the command line; notes go to stderr.
func fioJobs(path string, cmdFlags *pflag.FlagSet, stderr io.Writer) ([][]FSOptions, []byte, error) {
	groups, text, err := fs.ReadJobFile(path)
	if err != nil {
		return nil, nil, err
	}
	given := map[string]string{}
	cmdFlags.Visit(func(f *pflag.Flag) { given[f.Name] = f.Value.String() })
	if _, ok := given["name"]; ok && (len(groups) > 1 || len(groups[0]) > 1) {
		return nil, nil, fmt.Errorf("--name: %s has several jobs, named by their sections", path)
	}
	out := make([][]FSOptions, len(groups))
	for g, jobs := range groups {
		out[g] = make([]FSOptions, len(jobs))
		for i, j := range jobs {
			if err := fioJob(j, &out[g][i], given, stderr); err != nil {
				return nil, nil, err
			}
		}
	}
	return out, text, nil
}

// fioJob sets o from one job of a file and the flags given.
func fioJob(j fs.JobSection, o *FSOptions, given map[string]string, stderr io.Writer) error {
	flags := pflag.NewFlagSet(j.Name, pflag.ContinueOnError)
	o.Flags.AddFlags(flags)
	o.addNameFlag(flags)
	flags.StringVar(&o.latLog, "write_lat_log", "", "")
	cmdline := map[string]bool{}
	for name, v := range given {
		if flags.Lookup(name) != nil {
			if err := flagval.Set(flags, name, v); err != nil {
				return fmt.Errorf("--%s %q: %w", name, v, err)
			}
			cmdline[name] = true
		}
	}
	fresh := pflag.NewFlagSet(j.Name, pflag.ContinueOnError)
	new(FSOptions).Flags.AddFlags(fresh)
	notes, err := j.Apply(flags, fresh, cmdline)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(stderr, "iolab: [%s] %s\n", j.Name, n)
	}
	return nil
}

func newFSCommand(stdout, stderr io.Writer) *cobra.Command {
	var o FSOptions
	var capacity capacityFlags
	cmd := &cobra.Command{
		Use:   "fs [JOBFILE]",
		Short: "File and block I/O with fio's options, repeated in rounds and stored",
		Example: `  iolab fs --directory /mnt/data --rw=randrw --rwmixread=70 --bs=4k --iodepth=32 --numjobs=4 --size=128m --direct=1 --runtime=10s
  iolab fs --filename /dev/nvme0n1 --rw=randread --bs=4k --iodepth=32 --runtime=30 --ioengine=fio
  iolab fs job.fio --runtime=30s     # a fio job file's [global] and one [job]; flags win over it
  iolab fs job.fio --ioengine=fio --runtime=30s   # fio runs the file as written: any engine, jobs at once`,
		Args: maxOneArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			// fio: "time_based requires a runtime/timeout setting" (it
			// then runs the size once).
			if cmd.Flags().Lookup("time_based").Value.String() == "1" && !cmd.Flags().Changed("runtime") && len(args) == 0 {
				return usage("--time_based: needs --runtime, as fio says (time_based requires a runtime/timeout setting); without it the size is written once")
			}
			if capacity.given() {
				if len(args) == 1 {
					return usage("--curve, --slo and a job file: give the job's options as flags (or a plan's fs: workload)")
				}
				kind, _ := workload.Lookup("fs")
				return capacity.run(cmd, kind, nil, o.Repeat, stdout, stderr)
			}
			groups := [][]FSOptions{{o}}
			command := commandLine(cmd)
			if engine := o.Job.Engine; len(args) == 1 && (engine == fs.EngineFio || strings.HasPrefix(engine, fs.EngineFio+":")) {
				return runFioFile(cmd.Context(), o, args[0], cmd.Flags(), command, stdout, stderr)
			}
			if len(args) == 1 {
				var text []byte
				var err error
				if groups, text, err = fioJobs(args[0], cmd.Flags(), stderr); err != nil {
					return &UsageError{Err: err}
				}
				// The job file as it ran, in the record: the file may
				// change, and the command alone would not run again.
				command += " " + shellQuote(args[0]) + "\n# " + args[0] + " as it ran:\n" + redact.String(strings.TrimRight(string(text), "\n"))
			}
			return runFS(cmd.Context(), o.Repeat, groups, command, stdout, stderr)
		},
	}
	o.AddFlags(cmd.Flags())
	capacity.addFlags(cmd.Flags())
	// fio's other names for its options, as fio's command line takes
	// them (--blocksize=4k).
	cmd.Flags().SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		return pflag.NormalizedName(fs.FioAlias(name))
	})
	return cmd
}

// runFS runs groups of jobs as the cells of one experiment: a group's
// jobs run at the same time (fs.Together), the groups' cells are
// interleaved in rounds as any cells are.
func runFS(ctx context.Context, repeat RepeatOptions, groups [][]FSOptions, command string, stdout, stderr io.Writer) error {
	if err := fioLatLog(&repeat, groups, stderr); err != nil {
		return err
	}
	if err := repeat.validate(); err != nil {
		return err
	}
	var cells []lab.Cell
	var settings []map[string]string
	var runtime time.Duration
	for _, group := range groups {
		var members []*fs.FS
		var names []string
		for _, o := range group {
			job, err := o.Options()
			if err != nil {
				return &UsageError{Err: err}
			}
			job.Segment = repeat.Segment
			if (len(group) > 1 || job.FilenameFormat != "") && job.Filename == "" {
				job.FilePrefix = o.name // jobs at once: each its own files, named by its section as fio names them
			}
			w, err := fs.New(job)
			if err != nil {
				return &UsageError{Err: err}
			}
			name := o.name
			if name == "" {
				name = fsCellName(w.LoadOptions()) // what runs (psync caps iodepth), all segments of it
			}
			members, names = append(members, w), append(names, name)
			runtime = max(runtime, job.StartDelay+job.Runtime)
		}
		target := members[0].Options().Filename
		if target == "" {
			target = members[0].Options().Directory
		}
		var w workload.Workload = members[0]
		if len(members) > 1 {
			together := fs.NewTogether(members, names)
			w, runtime = together, max(runtime, together.Runtime())
		}
		cells = append(cells, lab.Cell{Name: uniqueName(strings.Join(names, "+"), cells), Workload: w, Target: target})
		settings = append(settings, w.Params())
	}
	plan := lab.Plan{Name: "fs", Command: command, Settings: settings[0]}
	if len(settings) > 1 {
		plan.Settings = settings
	}
	return runExperiment(ctx, repeat, plan, cells, runtime, stdout, stderr)
}

// uniqueName is name, or name-2, name-3, ... when a cell before has it:
// fio runs sections of the same name (each a job "a"), and iolab's cells
// are told apart by name.
func uniqueName(name string, cells []lab.Cell) string {
	taken := func(n string) bool {
		return slices.ContainsFunc(cells, func(c lab.Cell) bool { return c.Name == n })
	}
	out := name
	for k := 2; taken(out); k++ {
		out = fmt.Sprintf("%s-%d", name, k)
	}
	return out
}

// fioLatLog makes a job file's write_lat_log the experiment's latency log
// in fio's format (a file per run, PREFIX_lat.RUN.log, where fio writes
// one per job), unless --lat-log is given; the jobs of a file write one.
func fioLatLog(repeat *RepeatOptions, groups [][]FSOptions, stderr io.Writer) error {
	var prefix string
	for _, g := range groups {
		for _, o := range g {
			switch {
			case o.latLog == "" || o.latLog == prefix:
			case prefix != "":
				return usage("write_lat_log=%s and write_lat_log=%s: iolab writes one latency log for the runs of all a job file's jobs, a file per run; give one (or --lat-log)", prefix, o.latLog)
			default:
				prefix = o.latLog
			}
		}
	}
	switch {
	case prefix == "":
	case repeat.LatencyLog != "":
		fmt.Fprintf(stderr, "iolab: write_lat_log=%s in the job file; --lat-log %s on the command line wins here\n", prefix, repeat.LatencyLog)
	default:
		repeat.LatencyLog, repeat.LatencyLogFormat = prefix, metrics.LatencyLogFio
		fmt.Fprintf(stderr, "iolab: write_lat_log=%s: the latency log of every measured operation in fio's format, a file per run (%s), where fio writes one per job\n",
			prefix, metrics.FioLatencyLogPath(prefix, 1))
	}
	return nil
}

// fsCellName is a short label: "randrw70-4k-qd32x4-direct".
func fsCellName(j fs.Options) string {
	name := string(j.RW)
	if j.RW == fs.RW || j.RW == fs.RandRW {
		name += fmt.Sprint(j.RWMixRead)
	}
	name += "-" + units.FormatSize(j.BlockSize)
	if j.IODepth > 1 || j.NumJobs > 1 {
		name += fmt.Sprintf("-qd%dx%d", j.IODepth, j.NumJobs)
	}
	if j.Direct {
		name += "-direct"
	}
	return name
}

// runFioFile runs a job file by fio as written: its one cell's runs are
// fio's runs of the whole file, and of the flags only those that shorten
// a job or point it elsewhere (fs.FioFileOverrides) reach it.
func runFioFile(ctx context.Context, o FSOptions, path string, given *pflag.FlagSet, command string, stdout, stderr io.Writer) error {
	if err := o.Repeat.validate(); err != nil {
		return err
	}
	if o.Repeat.Segment.Split() {
		return usage("--segment with a job file fio runs: fio numbers its jobs' files from 0 in every process; use iolab's engines")
	}
	jobFlags := pflag.NewFlagSet("fs", pflag.ContinueOnError)
	new(fs.Flags).AddFlags(jobFlags)
	overrides := map[string]string{}
	var refused string
	given.Visit(func(f *pflag.Flag) {
		switch {
		case jobFlags.Lookup(f.Name) == nil || f.Name == "ioengine" || f.Name == "fio":
		case slices.Contains(fs.FioFileOverrides, f.Name):
			overrides[f.Name] = f.Value.String()
		case refused == "":
			refused = f.Name
		}
	})
	if refused != "" {
		return usage("--%s: fio runs %s as written and takes from the command line only --%s; set %s= in the job file",
			refused, path, strings.Join(fs.FioFileOverrides, ", --"), refused)
	}
	_, engine, _ := strings.Cut(o.Job.Engine, ":")
	w, err := fs.NewFioFile(path, overrides, engine, o.Job.FioPath)
	if err != nil {
		return &UsageError{Err: err}
	}
	name := o.name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	command += " " + shellQuote(path) + "\n# " + path + " as fio read it:\n" + redact.String(strings.TrimRight(string(w.Text()), "\n"))
	plan := lab.Plan{Name: "fs", Command: command, Settings: w.Params()}
	return runExperiment(ctx, o.Repeat, plan, []lab.Cell{{Name: name, Workload: w, Target: w.Target()}}, w.Runtime(), stdout, stderr)
}
