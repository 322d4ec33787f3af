package workload

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/cgroup"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/segment"
)

// Kind is one kind of workload, registered once, by its own package
// (Register in an init function; internal/workload/all imports them all).
// Everything that depends on the kind — a plan's keys and their help, the
// per-start rule, segments, which metrics a report compares and judges
// first — reads it here; nothing else names a kind.
type Kind struct {
	// Name is the kind's key in a plan (fs: {...}) and its command's name.
	Name string
	// Short is one line on what it drives, for help.
	Short string
	// NewOptions returns the kind's options at their defaults. Their flags
	// are the kind's plan keys: a plan accepts exactly what the command
	// line does.
	NewOptions func() Options
	// Splits says the kind takes its share of a load run in segments
	// (--segment I/N): its concurrency and its objects' names.
	Splits bool
	// TouchesDisk says the kind's target is a file, a directory or a
	// device: the machine's I/O stall bears on its numbers.
	TouchesDisk bool
	// Templates are the templates the workload fills itself, per
	// operation or per run ({{i}} in a URL, {{run}} in a command): a plan
	// leaves them in its keys' values.
	Templates []string
	// PathKeys are keys whose values are paths: a relative one is taken
	// from the plan's directory.
	PathKeys []string
	// MatrixTemplates says a matrix field need not be one of its keys: a
	// command reads them all as {{templates}}.
	MatrixTemplates bool
	// OutputMetrics says the kind reads metrics from what it runs prints
	// (a plan's metrics: list).
	OutputMetrics bool
	// Arguments, if set, is the option its command's arguments give, one
	// variant each, compared in rounds as a plan's variants are (iolab cmd
	// 'sleep 0.1' 'sleep 0.12', as hyperfine does): run for cmd.
	Arguments string
	// Primary is the metric the kind is judged by first; Metrics are the
	// client metrics compared for it, Primary first.
	Primary string
	Metrics []string
}

// Options are a kind's settings, declared once as flags.
type Options interface {
	// AddFlags registers the options, with their defaults and help.
	AddFlags(f *pflag.FlagSet)
	// Build makes the workload from the options as set, for one cell, and
	// says its target (the path under test, for the environment
	// snapshot; the working directory for a kind that talks to a server).
	Build(b Build) (w Workload, target string, err error)
}

// Build is what a cell tells a kind's options when it builds a workload.
type Build struct {
	// Dir is the working directory (the variant's): where a command runs.
	Dir string
	// Env is the environment of what the workload runs.
	Env []string
	// Params are the cell's matrix point, for a command's templates.
	Params map[string]string
	// Limits confine a command run without a server to a cgroup.
	Limits cgroup.Limits
	// Setup says the workload is a plan's setup step: it hands on its
	// outputs (Outputter) to the measured workload.
	Setup bool
	// Segment is the share of the load this process runs.
	Segment segment.Segment
	// Metrics are read from what the workload runs prints (a kind with
	// OutputMetrics).
	Metrics []OutputMetric
	// Show, if set, gets what the workload runs prints, as it prints it
	// (--show-output, a kind with OutputMetrics); safe for concurrent use.
	Show io.Writer
}

// OutputMetric is a figure read from a command's output: the first group of
// Regex (or its whole match), or Field of the JSON lines whose JSONKey has
// JSONValue, times Scale.
type OutputMetric struct {
	Name                      string
	Regex                     *regexp.Regexp
	JSONKey, JSONValue, Field string
	Scale                     float64
}

// What workloads of several kinds measure (s3 and http both).
func init() {
	metrics.Declare(
		metrics.Def{Name: "connections_opened", Label: "connections", Unit: "connections", Better: metrics.LowerIsBetter, Zeroable: true},
		metrics.Def{Name: "verify_checked", Unit: "objects", Better: metrics.HigherIsBetter, Zeroable: true},
		metrics.Def{Name: "verify_mismatched", Unit: "objects", Better: metrics.LowerIsBetter, Zeroable: true},
		metrics.Def{Name: "verify_missing", Unit: "objects", Better: metrics.LowerIsBetter, Zeroable: true},
		metrics.Def{Name: "verify_unreadable", Unit: "objects", Better: metrics.LowerIsBetter, Zeroable: true},
	)
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Kind{}
)

// Register adds a kind. A kind registered twice, or without a name, a
// line of help, options or a primary metric, is a programming error and
// panics.
func Register(k Kind) {
	registryMu.Lock()
	defer registryMu.Unlock()
	switch {
	case k.Name == "" || k.Short == "" || k.NewOptions == nil || k.Primary == "":
		panic(fmt.Sprintf("workload.Register: kind %q lacks a name, a line of help, options or a primary metric", k.Name))
	case registry[k.Name].Name != "":
		panic(fmt.Sprintf("workload.Register: kind %q registered twice", k.Name))
	}
	if !slices.Contains(k.Metrics, k.Primary) {
		k.Metrics = append([]string{k.Primary}, k.Metrics...)
	}
	registry[k.Name] = k
}

// Lookup returns the kind of that name.
func Lookup(name string) (Kind, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	k, ok := registry[name]
	return k, ok
}

// Kinds returns every registered kind, by name.
func Kinds() []Kind {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]Kind, 0, len(registry))
	for _, k := range registry {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Splits says kind takes its share of a load run in segments.
func Splits(kind string) bool {
	k, ok := Lookup(kind)
	return ok && k.Splits
}

// SplittingKinds are the names of the kinds that split their load, sorted.
func SplittingKinds() []string {
	var out []string
	for _, k := range Kinds() {
		if k.Splits {
			out = append(out, k.Name)
		}
	}
	return out
}

// Names returns the registered kinds' names, sorted.
func Names() []string {
	var out []string
	for _, k := range Kinds() {
		out = append(out, k.Name)
	}
	return out
}

// UnknownKind is the error for a kind nobody registered.
func UnknownKind(name string) error {
	return fmt.Errorf("unknown workload %q; known: %s", name, strings.Join(Names(), ", "))
}

// Keys are a kind's plan keys: its options' flags, sorted.
func (k Kind) Keys() []string {
	f := pflag.NewFlagSet(k.Name, pflag.ContinueOnError)
	k.NewOptions().AddFlags(f)
	var keys []string
	f.VisitAll(func(fl *pflag.Flag) { keys = append(keys, fl.Name) })
	return keys
}
