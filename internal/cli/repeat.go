package cli

import (
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/badinput"
	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/outpath"
	"github.com/iolab/iolab/internal/report"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/variant"
)

// RepeatOptions are the flags every measuring command shares: how often to
// repeat, where to store, how to print.
type RepeatOptions struct {
	Rounds   int
	Warmup   int
	Cooldown time.Duration
	Seed     uint64
	DB       string
	JSON     bool
	Format   string
	Series   bool
	// KeepGoing records a failed run and goes on with the others.
	KeepGoing bool
	// ObservePID is a process to watch during every run (the server under
	// test, when iolab did not start it).
	ObservePID string
	// At are scales a scale study's fits extrapolate to, instead of the
	// plan's extrapolate: (--at 1e9,1.4e10).
	At []float64
	at string
	// Gates make the command exit 1 for a CI pipeline (--fail-on, --gate).
	Gates      analysis.Gates
	failOn     string
	gateLimits []string
	// Quiet draws no progress line.
	Quiet bool
	// ShowOutput prints what each measured run of a command prints, on
	// stderr, as hyperfine's --show-output (and draws no progress line).
	ShowOutput bool
	// Note is stored with the experiment ("VM-7: virtio queue depth 256").
	Note string
	// Segment is this process's share of a load run by several (--segment
	// I/N, or a Kubernetes Indexed Job's environment); SegmentGroup names
	// the load; StartAt and BarrierTimeout say when its segments start.
	Segment        segment.Segment
	SegmentGroup   string
	StartAt        time.Time
	BarrierTimeout time.Duration
	RejoinTimeout  time.Duration
	// StoreGrace is how long a store outage is waited out while a load
	// runs (store.Patient).
	StoreGrace time.Duration
	// Every, with StartAt, starts run i at StartAt + i·Every: segments
	// with stores of their own meet by the clock (iolab import merges
	// them later), not at barriers in a shared store.
	Every time.Duration
	// LatencyLog is a file every measured operation goes to (--lat-log),
	// in LatencyLogFormat.
	LatencyLog, LatencyLogFormat string
	// exportTo are the files the report is also written to, in each of
	// report.Exports (--export-json, --export-markdown, --export-csv).
	exportTo      []string
	segment       string
	startAt       string
	along         string
	seedFromClock bool
	// mergeSegments shows a segment's load whole: show merges them, the
	// report a segment prints when it ends is its own.
	mergeSegments bool
}

// DefaultRounds is the fewest rounds that give a 95% confidence interval of
// the median (stats.MinRunsForCI): with 5, no order-statistic interval
// reaches 95%.
const DefaultRounds = stats.MinRunsForCI

// AddFlags registers the repeat flags; the flags that run a segment show
// only on a command whose load splits into segments.
func (o *RepeatOptions) AddFlags(fs *pflag.FlagSet, splits bool) {
	flagval.IntVar(fs, &o.Rounds, "rounds", DefaultRounds, 1, lab.MaxRuns, "measured rounds; each runs every cell once")
	flagval.IntVar(fs, &o.Rounds, "runs", DefaultRounds, 1, lab.MaxRuns, "hyperfine's name for --rounds: each command (each cell) runs once a round")
	flagval.IntVar(fs, &o.Warmup, "warmup", 1, 0, lab.MaxRuns, "warm-up rounds before the measured ones (stored, labelled, left out of summaries)")
	fs.Var(flagval.Duration{P: &o.Cooldown}, "cooldown", "pause between runs (60, 60s, 1m)")
	flagval.IntVar(fs, &o.Seed, "seed", 0, 0, math.MaxInt64, "seed of the run order within rounds (0: from the clock)")
	fs.BoolVar(&o.KeepGoing, "keep-going", false, "record a failed run and go on with the others (exit 1 at the end)")
	fs.StringVar(&o.ObservePID, "observe-pid", "", "watch this process tree (the server under test) during every run: its CPU, memory, I/O, threads and files")
	o.addSegmentFlags(fs)
	if !splits { // not in its help; given, refused with the kinds that split
		for _, name := range []string{"segment", "segment-group", "run-every", "start-at", "barrier-timeout", "store-grace", "rejoin-timeout"} {
			_ = fs.MarkHidden(name)
		}
	}
	fs.StringVar(&o.LatencyLog, "lat-log", "", "also write every measured operation to this file, a CSV line each (run,op,end_unix_ns,latency_ns,bytes); with --lat-log-format fio, to a file per run named from it as fio's write_lat_log names a job's (PATH_lat.RUN.log)")
	fs.StringVar(&o.LatencyLogFormat, "lat-log-format", "csv", "the --lat-log's format: csv, or fio (msec, latency_ns, direction, bytes: read by fio2gnuplot and fiologparser)")
	o.addOutputFlags(fs)
}

// addOutputFlags registers where results go and how they print.
func (o *RepeatOptions) addOutputFlags(fs *pflag.FlagSet) {
	dbFlag(fs, &o.DB)
	fs.BoolVar(&o.JSON, "json", false, "print the report as JSON instead of a table")
	fs.StringVar(&o.Format, "format", "text", "text, md (Markdown), csv (a row per run and metric; with --series, per run and second), ndjson (a line per run), bench (Go benchmark format, for benchstat), fio or fio+ (fio's json and json+ output: a job per cell, its measured runs merged), frames (a frame test's per-frame series as CSV)")
	fs.BoolVar(&o.Series, "series", false, "with --json, include each run's per-second series")
	fs.StringVar(&o.failOn, "fail-on", "", "exit 1 when any of these hold, comma-separated: slower, inconclusive, faster (a primary comparison's verdict), frames (a frame test's FAIL), verify (objects that did not verify)")
	fs.StringArrayVar(&o.gateLimits, "gate", nil, "exit 1 when a cell's median breaks a limit: METRIC<VALUE or METRIC>VALUE, such as 'read.lat_p99_ns<5ms', 'wall_s<2m', 'ops_per_s>10000' (repeatable)")
	fs.BoolVarP(&o.Quiet, "quiet", "q", false, "no live progress line on the terminal")
	fs.StringVar(&o.Note, "note", "", "a note stored with the experiment, shown by show, ls and history (\"VM-7: virtio queue depth 256\"); 'iolab note EXP TEXT' adds more later")
	o.exportTo = make([]string, len(report.Exports))
	for i, format := range report.Exports {
		fs.StringVar(&o.exportTo[i], "export-"+format, "", "also write the report as "+format+" to this file, as hyperfine's --export-"+format+
			" (never over a file iolab did not write)")
	}
	fs.StringVar(&o.along, "along", "", "compare cells along this matrix field instead of variants against variants (FIELD, or FIELD=BASE: the base value, else its first), as benchstat's -col; as a plan's along:")
	fs.StringVar(&o.at, "at", "", "scales a scale study's fits extrapolate to, comma-separated (1e9,1.4e10); instead of the plan's extrapolate: at")
}

// addShowOutputFlag registers --show-output, on a command whose workloads
// may print (a kind with OutputMetrics, experiment).
func (o *RepeatOptions) addShowOutputFlag(fs *pflag.FlagSet) {
	fs.BoolVar(&o.ShowOutput, "show-output", false, "print what each measured run of a command prints, on stderr as it prints it (hyperfine's --show-output); no progress line then")
}

// showTo is where --show-output sends what runs print: stderr, one write
// at a time (a command's stdout and stderr are copied at once); nil
// without the flag.
func (o *RepeatOptions) showTo(stderr io.Writer) io.Writer {
	if !o.ShowOutput {
		return nil
	}
	return &lockedWriter{w: stderr}
}

// lockedWriter is a writer safe for concurrent use.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (o *RepeatOptions) validateOutput() error {
	if o.ShowOutput {
		o.Quiet = true // the progress line would be torn by the command's lines
	}
	switch {
	case o.DB == "":
		return usage("--db: want a file path such as ./iolab.db")
	case !slices.Contains([]string{"text", "md", report.FormatCSV, report.FormatNDJSON, report.FormatBench, report.FormatFio, report.FormatFioPlus, report.FormatFrames}, o.Format):
		return usage("--format %q: want text, md, csv, ndjson, bench, fio, fio+ or frames", o.Format)
	case o.JSON && o.Format != "text":
		return usage("--json and --format %s: give one", o.Format)
	}
	var err error
	if o.Gates, err = analysis.ParseGates(o.failOn, o.gateLimits); err != nil {
		return err
	}
	if err := o.validateLatencyLog(); err != nil {
		return err
	}
	for i, path := range o.exportTo {
		if path != "" {
			if err := outpath.Writable("--export-"+report.Exports[i], path, report.IsExport(report.Exports[i])); err != nil {
				return err
			}
		}
	}
	o.At = nil
	for _, f := range strings.Split(o.at, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := units.ParseFloat(f, 1, 1e300)
		if err != nil {
			return usage("--at %q: %s: %v (scales such as 1e9,1.4e10)", o.at, f, err)
		}
		o.At = append(o.At, v)
	}
	return nil
}

func (o *RepeatOptions) validate() error {
	switch {
	case o.Rounds < 1:
		return usage("--rounds %d: want at least 1 (%d or more for a 95%% confidence interval)", o.Rounds, stats.MinRunsForCI)
	case o.Warmup < 0:
		return usage("--warmup %d: want 0 or more", o.Warmup)
	}
	if err := o.validateOutput(); err != nil {
		return err
	}
	if o.Seed == 0 {
		o.Seed, o.seedFromClock = uint64(time.Now().UnixNano()), true
	}
	if err := o.validateSegment(); err != nil {
		return err
	}
	if o.ObservePID != "" {
		if _, err := variant.CheckPID(o.ObservePID); err != nil {
			return usage("--observe-pid %v", err)
		}
	}
	return nil
}

// validateLatencyLog checks --lat-log and its format before anything
// runs.
func (o *RepeatOptions) validateLatencyLog() error {
	switch {
	case o.LatencyLogFormat == "": // a command without the flag
	case !slices.Contains(metrics.LatencyLogFormats, o.LatencyLogFormat):
		return usage("--lat-log-format %q: want %s", o.LatencyLogFormat, strings.Join(metrics.LatencyLogFormats, " or "))
	}
	switch {
	case o.LatencyLog == "" && o.LatencyLogFormat == metrics.LatencyLogFio:
		return usage("--lat-log-format %s: the format of --lat-log; give --lat-log PATH too", o.LatencyLogFormat)
	case o.LatencyLog == "":
		return nil
	case o.LatencyLogFormat == metrics.LatencyLogFio:
		if err := lab.CheckFioLatencyLog(o.LatencyLog); err != nil {
			return &badinput.Error{Err: err}
		}
		return nil
	}
	return outpath.Writable("--lat-log", o.LatencyLog, metrics.IsLatencyLog)
}
