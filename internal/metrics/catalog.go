package metrics

import (
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/units"
)

// The catalogue: every metric iolab stores is declared once, by the
// package that produces it (Declare in an init function), with all a
// consumer needs to read it — its unit, which way is better, its label and
// format, how the segments of a load merge it. Comparisons, gates, history,
// every export and the segments' merge read it here (Describe), the way
// x/perf's benchfmt carries better= and assume= with the unit; a metric
// nobody declared is not judged.

// Better says which way a metric improves.
type Better int8

const (
	// NoDirection: a figure shown, never judged (a count of objects).
	NoDirection Better = iota
	HigherIsBetter
	LowerIsBetter
)

// MergeRule says how the figures of a load's segments make the load's.
type MergeRule int8

const (
	// MergeSum: counts and bytes add up.
	MergeSum MergeRule = iota
	// MergeMax: peaks, the worst of anything, a host's stall, a whole
	// process's time: the largest segment's.
	MergeMax
	// MergeMin: a pass is every segment's.
	MergeMin
	// MergeRecompute: rates, percentiles and costs per operation are
	// computed again from the merged run (its histograms merged exactly),
	// never from the segments' figures.
	MergeRecompute
)

// Def is one metric.
type Def struct {
	// Name is the metric's name; a PerOp metric's also stands after an
	// operation's name ("read.lat_p99_ns").
	Name string
	// Label is how tables and plots name it; OpLabels name it per
	// operation where that differs from "<op> <label>".
	Label   string
	OpLabel string // default: Label
	// Noun is how a sentence names it ("13% less wall time than"); by
	// default Label.
	NounLabel string
	OpLabels  map[string]string
	// Unit is what the value counts: ns, s, B, B/s, ops/s, items/s, %,
	// or any other word (frames, µs/op). Times, sizes and rates format,
	// and gate limits parse, by their unit.
	Unit string
	// Bench is the unit in the Go benchmark format where benchstat has a
	// conventional one (sec/op); by default the metric's name.
	Bench  string
	Better Better
	// Zeroable metrics have zero as an ordinary value (late frames, bytes
	// a server wrote), which a ratio cannot carry: they are compared by
	// their difference.
	Zeroable bool
	Merge    MergeRule
	// PerOp says the metric exists per operation kind as well.
	PerOp bool
	// Kind is the workload kind that alone measures it (DeclareFor); ""
	// for a metric any kind may.
	Kind string
	// BlockIO metrics count bytes of block I/O the workload did itself
	// (a command's, from its rusage): BlockIOBytes sums them.
	BlockIO bool
}

// BlockIOBytes is the block I/O a run's workload did itself: the sum of
// its metrics declared BlockIO.
func BlockIOBytes(m map[string]float64) float64 {
	catalogMu.RLock()
	defer catalogMu.RUnlock()
	sum := 0.0
	for name, v := range m {
		if catalog[name].BlockIO {
			sum += v
		}
	}
	return sum
}

var (
	catalogMu sync.RWMutex
	catalog   = map[string]Def{}
)

// Declare adds metrics to the catalogue. A name declared twice is a
// programming error and panics.
func Declare(defs ...Def) {
	catalogMu.Lock()
	defer catalogMu.Unlock()
	for _, d := range defs {
		if d.Name == "" || d.Unit == "" || catalog[d.Name].Name != "" {
			panic(fmt.Sprintf("metrics.Declare: %q declared twice, or without a name or unit", d.Name))
		}
		if d.Label == "" {
			d.Label = d.Name
		}
		catalog[d.Name] = d
	}
}

// DeclareFor adds metrics that only workloads of kind measure.
func DeclareFor(kind string, defs ...Def) {
	for i := range defs {
		defs[i].Kind = kind
	}
	Declare(defs...)
}

// Describe returns the metric of that name: a declared one, or a
// declared PerOp one after an operation's name ("read.lat_p99_ns").
func Describe(name string) (Def, bool) {
	catalogMu.RLock()
	defer catalogMu.RUnlock()
	if d, ok := catalog[name]; ok {
		return d, true
	}
	// One of a numbered family (endpoint.2.ops_per_s), declared with * for
	// the number.
	if parts := strings.Split(name, "."); len(parts) == 3 && parts[1] != "" && strings.Trim(parts[1], "0123456789") == "" {
		if d, ok := catalog[parts[0]+".*."+parts[2]]; ok {
			d.Name, d.Label = name, strings.ReplaceAll(d.Label, "*", parts[1])
			return d, true
		}
	}
	op, rest, found := strings.Cut(name, ".")
	if !found {
		return Def{}, false
	}
	d, ok := catalog[rest]
	if _, isOp := ParseOp(op); !ok || !d.PerOp || !isOp {
		return Def{}, false
	}
	d.Name = name
	switch l, ok := d.OpLabels[op]; {
	case ok:
		d.Label = l
	case d.OpLabel != "":
		d.Label = op + " " + d.OpLabel
	default:
		d.Label = op + " " + d.Label
	}
	return d, true
}

// Judged says the metric has a direction: comparisons and gates judge it.
func (d Def) Judged() bool { return d.Better != NoDirection }

// Noun is how a sentence names the metric.
func (d Def) Noun() string {
	if d.NounLabel != "" {
		return d.NounLabel
	}
	return d.Label
}

// Stat is how the statistics read it.
func (d Def) Stat() stats.Metric {
	return stats.Metric{LowerIsBetter: d.Better == LowerIsBetter, Zeroable: d.Zeroable}
}

// BenchUnit is its unit in the Go benchmark format.
func (d Def) BenchUnit() string {
	if d.Bench != "" {
		return d.Bench
	}
	return d.Name
}

// Format writes a value as its tables show it: times as durations, sizes
// and byte rates in MiB (the label says so), operation rates with k/M/G,
// anything else in plain digits.
func (d Def) Format(v float64) string {
	switch d.Unit {
	case "ns":
		return FormatNs(v)
	case "s":
		return FormatNs(v * 1e9)
	case "B", "B/s":
		return fmt.Sprintf("%.4g", v/(1<<20))
	case "ops/s", "items/s":
		return stats.FormatValue(v)
	}
	return FormatPlain(v)
}

// ParseLimit reads a gate's limit in the metric's unit: a duration for a
// time (5ms), a size for bytes (1g), else a number.
func (d Def) ParseLimit(text string) (float64, error) {
	switch d.Unit {
	case "ns":
		t, err := units.ParseDuration(text)
		return float64(t.Nanoseconds()), err
	case "s":
		t, err := units.ParseDuration(text)
		return t.Seconds(), err
	case "B":
		b, err := units.ParseSize(text)
		return float64(b), err
	}
	return units.ParseFloat(text, -1e300, 1e300)
}

// FormatNs writes nanoseconds as a duration: 1.5ms, 820µs, 2.1s.
func FormatNs(ns float64) string {
	switch a := math.Abs(ns); {
	case a >= 1e9:
		return fmt.Sprintf("%.3gs", ns/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3gms", ns/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.3gµs", ns/1e3)
	}
	return fmt.Sprintf("%.0fns", ns)
}

// FormatPlain writes a figure in plain digits: 4520, not 4.52e+03.
func FormatPlain(v float64) string {
	if a := math.Abs(v); a >= 1000 && a < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// FormatSeconds writes seconds in the unit that reads best at their size
// (extrapolations reach hours and days).
func FormatSeconds(v float64) string {
	switch a := math.Abs(v); {
	case a >= 2*86400:
		return fmt.Sprintf("%.3g days", v/86400)
	case a >= 2*3600:
		return fmt.Sprintf("%.3g h", v/3600)
	case a >= 120:
		return fmt.Sprintf("%.3g min", v/60)
	}
	return FormatNs(v * 1e9)
}

// FormatBytes writes a size in the largest binary unit it is 1 or more of,
// moving up a unit before three digits would round to four (1020 MiB is
// 0.996 GiB).
func FormatBytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for i < len(units)-1 && math.Abs(v) >= 999.5 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.3g %s", v, units[i])
}
