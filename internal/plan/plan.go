// Package plan reads experiment plans: YAML files that name the variants to
// compare (git refs, builds, configs), the workloads with their parameter
// matrix, and how to repeat them. Every error names file:line:column and
// the field; unknown keys are rejected with the known ones listed.
//
// A plan keeps workload fields as positioned strings: the CLI applies them
// through the same flag parsers as the command line, so a plan accepts
// exactly what `iolab fs` accepts.
package plan

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/units"
)

// Plan is one experiment as written.
type Plan struct {
	Path   string // the plan file
	Dir    string // its directory: relative paths in commands start here
	Name   string
	Rounds int
	// MinRounds, when set (rounds: {min, max}), makes the experiment stop
	// after any round from MinRounds on at which every comparison of a
	// primary metric is decided; Rounds is then the most it runs.
	MinRounds int
	Warmup    int
	// WarmupPerVariant is how many runs each variant makes, unmeasured,
	// before the rounds begin (its cells in turn): a fresh build's cold
	// caches warmed without a warm-up round of every cell. AutoWarmup
	// records that the plan said auto: the rounds a trend at the start
	// marks as still warming up are left out of every comparison (the
	// analysis always does that now; auto runs no extra runs).
	WarmupPerVariant int
	AutoWarmup       bool
	Cooldown         time.Duration
	Seed             uint64
	Baseline         string
	// Along, when set, compares cells along a matrix field instead of
	// variants against variants: FIELD, or FIELD=BASE (the base value;
	// else the field's first), as benchstat's -col (AlongField).
	Along     string
	AlongPos  Pos
	Threshold float64 // relative, 0.02 for "2%"
	Order     string  // random (default) or sequential
	Variants  []Variant
	Hooks     Hooks
	Workloads []Workload
	// Extrapolate is where scale fits extrapolate to, and the limits a
	// curve may cross.
	Extrapolate Extrapolate
	// Ports confines the ports handed to variants' servers ({{port}});
	// zero: any free port.
	Ports PortRange
	// Precondition, if set, repeats the warm-up rounds until every cell's
	// primary metric is steady by SNIA's rule over them, at most its
	// Rounds; then the measured rounds begin.
	Precondition    *stats.Precondition
	PreconditionPos Pos
	warmupGiven     bool
}

// PortRange is an inclusive range of TCP ports (ports: 25000-25999).
type PortRange struct{ Lo, Hi int }

// IsZero says no range was given.
func (r PortRange) IsZero() bool { return r == PortRange{} }

func (r PortRange) String() string { return fmt.Sprintf("%d-%d", r.Lo, r.Hi) }

// ParsePortRange reads LO-HI (or one port), both from 1 to 65535.
func ParsePortRange(s string) (PortRange, error) {
	lo, hi, found := strings.Cut(strings.TrimSpace(s), "-")
	if !found {
		hi = lo
	}
	a, errA := units.ParseInt(strings.TrimSpace(lo), 1, 65535)
	b, errB := units.ParseInt(strings.TrimSpace(hi), 1, 65535)
	if errA != nil || errB != nil || a > b {
		return PortRange{}, fmt.Errorf("%q: want a range of ports such as 25000-25999 (from 1 to 65535, low first)", s)
	}
	return PortRange{Lo: int(a), Hi: int(b)}, nil
}

// Extrapolate names the scales a scale study's fits predict, and caps —
// per metric, a value the cost cannot exceed (a memory budget) — that a
// prediction is checked against.
type Extrapolate struct {
	At   []float64          `json:"at,omitempty"`
	Caps map[string]float64 `json:"caps,omitempty"`
}

// ScaleParam is the cell parameter that names a cell's scale axis.
const ScaleParam = "scale_axis"

// LoadParam is the cell parameter, and the part of a cell's name, that
// says which point of its workload's curve a cell is: LoadMax, the
// workload flat out, or a share of that rate ("50%").
const LoadParam = "load"

// LoadMax is the load of a curve's flat-out cell.
const LoadMax = "max"

// LoadSLO is the load of the cell that searches for the highest rate an
// SLO allows: each of its runs at the load the search is at.
const LoadSLO = "slo"

// Variant is one version of the thing under test.
type Variant struct {
	Name  string
	Git   *GitRef
	Build string
	Start string
	Ready *Ready
	Stop  Stop
	Env   map[string]string
	// Vars fill {{NAME}} in the workloads' keys for this variant's cells
	// (vars: {command: "sleep 0.1"} with cmd: {run: "{{command}}"}): what a
	// variant changes in the load itself, stored with its cells.
	Vars    map[string]string
	Workdir string
	// Limits, if set, confine what the variant starts (its server, or a
	// cmd workload's command) to a cgroup of that size; the values may use
	// the cell's matrix fields ({{memory}}).
	Limits *Limits
	// Observe names a running process to watch (one iolab did not start).
	Observe *Observe
	// Profile captures a profile of the server during every measured run.
	Profile *Profile
	Pos     Pos
}

// Limits are a variant's resource limits, as written.
type Limits struct {
	Memory, CPUs Value
}

// Observe names a process iolab did not start: a PID or a file holding one.
type Observe struct {
	PID     Value
	PIDFile Value
}

// Profile says how to profile a variant's server during measured runs.
type Profile struct {
	// GoPprof is the URL of its Go pprof endpoint
	// (http://127.0.0.1:{{port}}/debug/pprof/profile).
	GoPprof Value
	// Perf records the server's process tree with perf record -g.
	Perf bool
}

// GitRef checks a ref of a repository out into the variant's own worktree.
type GitRef struct {
	Repo string
	Ref  string
}

// Ready says how to know a started variant serves.
type Ready struct {
	HTTP    string
	TCP     string
	Cmd     string
	Timeout time.Duration
}

// Stop says how to stop a started variant: Signal, then SIGKILL after Grace.
type Stop struct {
	Signal string
	Grace  time.Duration
}

// Hooks are shell commands around every run and round, and Cleanup once
// per variant after its last run (hyperfine's --cleanup).
type Hooks struct {
	BeforeRun   string
	AfterRun    string
	BeforeRound string
	AfterRound  string
	Cleanup     string
	CleanupPos  Pos
}

// Workload is one workload with its parameter matrix.
type Workload struct {
	Name string
	Kind string // fs, cmd
	// Fields are the workload's settings, keyed like its flags.
	Fields map[string]Value
	// Matrix maps a field to the values it takes, in order.
	Matrix []Axis
	// Scale, if set, is the matrix field that is the workload's scale
	// (scale: {objects: [...]}): numeric, ordered, first in Matrix; its
	// cost is fitted against it.
	Scale string
	// Metrics are figures a cmd workload's command prints, read from its
	// output lines (metrics: [{name, regex | json + field, scale}]).
	Metrics []MetricSpec
	// Curve, if set, are the loads of the workload's load–latency curve,
	// in percent of the rate it reaches flat out (curve: [10, 50, 90]),
	// ascending: each a cell of its own beside the flat-out one, whose
	// first run (its calibration) sets their rates.
	Curve    []float64
	CurvePos Pos
	// SLO, if set, is the objective whose highest sustainable rate the
	// workload is searched for (slo: {metric: get.response_p99_ns,
	// below: 20ms}), in shares of its flat-out rate as a curve's loads.
	SLO *SLO
	// Setup, if set, is a workload run untimed before the measured one —
	// after every start of the variant's server — whose outputs (the ids
	// an upload returned) the measured workload reads as {{ids}}.
	Setup *Workload
	Pos   Pos
}

// MetricSpec is one figure read from a command's output: the first group
// of Regex (or its whole match), or Field of the JSON lines whose JSON key
// has the given value (json: 'msg=ingest phase complete'), times Scale.
type MetricSpec struct {
	Name          string
	Regex         *regexp.Regexp
	JSONKey       string
	JSONValue     string
	Field         string
	Scale         float64
	LowerIsBetter bool
	// Unit is what the value counts (MetricUnit): given, or read from the
	// name; "" when not known.
	Unit string
	Pos  Pos
}

// Units a metric read from a command's output may be given in (unit:),
// by what they count: a duration, bytes, a count, a share; a rate is
// any of them per second (B/s, items/s).
var (
	durationUnits = []string{"ns", "us", "ms", "s"}
	otherUnits    = []string{"B", "count", "%"}
)

// MetricUnit is the unit of a metric named name read from a command's
// output, given none: by its name's ending, as iolab's own metrics are
// named (_ns, _us, _ms, _s: a duration; _bytes: bytes; _per_s: a rate;
// _pct: a share; _count, _total: a count); "" when the name says none.
func MetricUnit(name string) string {
	for _, e := range []struct{ end, unit string }{
		{"_per_s", "/s"}, {"_bytes", "B"}, {"_pct", "%"}, {"_count", "count"}, {"_total", "count"},
		{"_ns", "ns"}, {"_us", "us"}, {"_ms", "ms"}, {"_s", "s"},
	} {
		if strings.HasSuffix(name, e.end) {
			return e.unit
		}
	}
	return ""
}

// IsDuration says a metric unit counts time.
func IsDuration(unit string) bool { return slices.Contains(durationUnits, unit) }

// validUnit says unit is one a metric may be given in.
func validUnit(unit string) bool {
	base, rate := strings.CutSuffix(unit, "/s")
	if rate {
		return base != "" && !strings.ContainsAny(base, "/ ")
	}
	return IsDuration(unit) || slices.Contains(otherUnits, unit)
}

// metricName is what a metric's name may be: it becomes a JSON key and a
// column.
var metricName = regexp.MustCompile(`^[a-z][a-z0-9_.]*$`)

// Axis is one matrix dimension.
type Axis struct {
	Field  string
	Values []Value
}

// Value is a scalar as written, with where it was written.
type Value struct {
	Text string
	// List holds the values of a key given a list (header: [a, b]), which
	// stands for the flag given once per value; Text is then empty.
	List []Value
	Pos  Pos
	// KeyPos is where its key was written (for workload fields and matrix
	// values), to point "unknown key" errors at the key.
	KeyPos Pos
}

// Pos is a place in the plan file.
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col) }

// Errorf makes an error located at p.
func (p Pos) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s", p, fmt.Sprintf(format, args...))
}

// MaxRounds bounds rounds and warmup on their own; the schedule as a whole
// is bounded by the lab (lab.MaxRuns), which names the numbers.
const MaxRounds = 1_000_000

// Load reads and checks the plan at path.
func Load(path string) (*Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	return Parse(path, b)
}

// Parse checks a plan's text; path is used in messages and for Dir.
func Parse(path string, text []byte) (*Plan, error) {
	if err := checkCaps(path, text); err != nil {
		return nil, err
	}
	var raw yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(text))
	if err := dec.Decode(&raw); err != nil {
		return nil, syntaxError(path, text, err)
	}
	abs, _ := filepath.Abs(path)
	p := &Plan{Path: path, Dir: filepath.Dir(abs), Rounds: 6, Warmup: 1, Threshold: 0.02, Order: "random"}
	r := reader{file: path}
	if len(raw.Content) == 0 {
		return nil, syntaxError(path, text, io.EOF)
	}
	budget := maxExpandedNodes
	doc, err := r.expand(raw.Content[0], 0, &budget)
	if err != nil {
		return nil, err
	}
	if err := r.environ(doc, ""); err != nil {
		return nil, err
	}
	if err := r.plan(doc, p); err != nil {
		return nil, err
	}
	return p, p.check(r.pos(doc))
}

// The keys a plan knows, at its top, in a variant, in hooks and in a
// workload (besides the kinds, each a key of its own): the parser's, and
// the reference's (docs/reference.md is made from them).
var (
	PlanKeys     = []string{"name", "rounds", "warmup", "warmup_per_variant", "cooldown", "seed", "baseline", "along", "threshold", "order", "variants", "hooks", "workloads", "extrapolate", "ports", "precondition"}
	VariantKeys  = []string{"name", "git", "build", "start", "ready", "stop", "env", "vars", "workdir", "limits", "observe", "profile"}
	HookKeys     = []string{"before_run", "after_run", "before_round", "after_round", "cleanup"}
	WorkloadKeys = []string{"name", "matrix", "scale", "curve", "slo", "setup"}
)
