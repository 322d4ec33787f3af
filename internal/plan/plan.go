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
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/suggest"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/workload"
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
	Threshold        float64 // relative, 0.02 for "2%"
	Order            string  // random (default) or sequential
	Variants         []Variant
	Hooks            Hooks
	Workloads        []Workload
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

// SLO is a service level objective: Metric below Below (in the metric's
// unit: ns for a time), to be held with 95% confidence; the search for
// the highest rate it allows ends when it is bracketed within Precision.
type SLO struct {
	Metric    string  `json:"metric"`
	Below     float64 `json:"below"`
	BelowText string  `json:"-"`
	Precision float64 `json:"precision"`
	Pos       Pos     `json:"-"`
}

// String is the objective as a user writes it: get.response_p99_ns < 20ms.
func (o SLO) String() string { return o.Metric + " < " + o.BelowText }

// SLOKeys are the keys of a workload's slo:.
var SLOKeys = []string{"metric", "below", "precision"}

// How an SLO is searched: each step takes from SLOMinRuns runs to the
// plan's rounds, and a search at most SLOMaxSteps steps.
const (
	SLOMinRuns  = 3
	SLOMaxSteps = 8
)

// NewSearch starts a search for the objective, each step taking at most
// runsPerStep runs.
func (o SLO) NewSearch(runsPerStep int) *stats.SLOSearch {
	return stats.NewSLOSearch(o.Precision, SLOMinRuns, runsPerStep, SLOMaxSteps)
}

// Outcome is what a run at a search's load, of these metrics, says of
// the objective: the metric over its bound (found false when the run
// measured no such metric), and whether the search counts it. A run that
// missed the objective while its client was delayed (metrics.ClientDelayed:
// iolab's own delay past its share of what was measured) says nothing of
// the target — the client missed it — and is not counted: the search runs
// that load again. One that held despite it held. The search and its
// replay in the report judge every run here.
func (o SLO) Outcome(m map[string]float64) (ratio float64, found, counts bool) {
	v, found := m[o.Metric]
	if !found {
		return 0, false, false
	}
	ratio = v / o.Below
	return ratio, true, ratio < 1 || !metrics.ClientDelayed(m)
}

// Params are what a search's cell stores of its objective and its
// search, for the report to replay the search from its runs.
func (o SLO) Params(runsPerStep int) map[string]string {
	return map[string]string{"slo": o.String(), "slo_metric": o.Metric, "slo_below": strconv.FormatFloat(o.Below, 'g', -1, 64),
		"slo_precision": strconv.FormatFloat(o.Precision, 'g', -1, 64), "slo_runs_per_step": strconv.Itoa(runsPerStep)}
}

// SLOOf reads back a search cell's objective and runs per step; false
// for a cell of no search (or one stored by an iolab that wrote them
// otherwise).
func SLOOf(params map[string]string) (SLO, int, bool) {
	o := SLO{Metric: params["slo_metric"], BelowText: strings.TrimPrefix(params["slo"], params["slo_metric"]+" < ")}
	below, err1 := strconv.ParseFloat(params["slo_below"], 64)
	precision, err2 := strconv.ParseFloat(params["slo_precision"], 64)
	runs, err3 := strconv.Atoi(params["slo_runs_per_step"])
	if o.Metric == "" || err1 != nil || err2 != nil || err3 != nil || below <= 0 || precision <= 0 || runs < 1 {
		return SLO{}, 0, false
	}
	o.Below, o.Precision = below, precision
	return o, runs, true
}

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

// Hooks are shell commands around every run and round.
type Hooks struct {
	BeforeRun   string
	AfterRun    string
	BeforeRound string
	AfterRound  string
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
	Pos           Pos
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
	if err := r.plan(doc, p); err != nil {
		return nil, err
	}
	return p, p.check(r.pos(doc))
}

type reader struct{ file string }

func (r reader) pos(n *yaml.Node) Pos { return Pos{File: r.file, Line: n.Line, Col: n.Column} }

// fields walks a mapping, rejecting keys not in known.
func (r reader) fields(n *yaml.Node, what string, known []string, fn func(key string, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return r.pos(n).Errorf("%s: want a mapping of %s", what, strings.Join(known, ", "))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !contains(known, k.Value) {
			return r.pos(k).Errorf("unknown key %q in %s; known: %s%s", k.Value, what, strings.Join(known, ", "), didYouMean(k.Value, known))
		}
		if seen[k.Value] {
			return r.pos(k).Errorf("%s: %q given twice", what, k.Value)
		}
		seen[k.Value] = true
		if err := fn(k.Value, v); err != nil {
			return err
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (r reader) scalar(n *yaml.Node, field string) (Value, error) {
	if n.Kind != yaml.ScalarNode {
		return Value{}, r.pos(n).Errorf("%s: want a single value", field)
	}
	return Value{Text: n.Value, Pos: r.pos(n)}, nil
}

func (r reader) str(n *yaml.Node, field string, dst *string) error {
	v, err := r.scalar(n, field)
	*dst = v.Text
	return err
}

// integer reads a whole number from min to max.
func (r reader) integer(n *yaml.Node, field string, min, max int64) (int64, error) {
	v, err := r.scalar(n, field)
	if err != nil {
		return 0, err
	}
	i, err := units.ParseInt(v.Text, min, max)
	if err != nil {
		return 0, v.Pos.Errorf("%s %q: %v", field, v.Text, err)
	}
	return i, nil
}

func (r reader) intField(n *yaml.Node, field string, min, max int64, dst *int) error {
	i, err := r.integer(n, field, min, max)
	*dst = int(i)
	return err
}

func (r reader) duration(n *yaml.Node, field string, dst *time.Duration) error {
	v, err := r.scalar(n, field)
	if err != nil {
		return err
	}
	d, err := units.ParseDuration(v.Text)
	if err != nil {
		return v.Pos.Errorf("%s %q: %v", field, v.Text, err)
	}
	*dst = d
	return nil
}

func (r reader) plan(n *yaml.Node, p *Plan) error {
	known := PlanKeys
	return r.fields(n, "the plan", known, func(key string, v *yaml.Node) error {
		switch key {
		case "name":
			return r.str(v, key, &p.Name)
		case "rounds":
			return r.rounds(v, p)
		case "warmup":
			p.warmupGiven = true
			return r.intField(v, key, 0, MaxRounds, &p.Warmup)
		case "warmup_per_variant":
			if v.Kind == yaml.ScalarNode && v.Value == "auto" {
				p.AutoWarmup = true
				return nil
			}
			if err := r.intField(v, key, 0, maxVariantWarmup, &p.WarmupPerVariant); err != nil {
				return fmt.Errorf("%w (or auto: no runs, and the rounds still warming up left out, as every comparison does)", err)
			}
		case "cooldown":
			return r.duration(v, key, &p.Cooldown)
		case "seed":
			s, err := r.integer(v, key, 0, math.MaxInt64)
			p.Seed = uint64(s)
			return err
		case "baseline":
			return r.str(v, key, &p.Baseline)
		case "threshold":
			return r.threshold(v, &p.Threshold)
		case "order":
			if err := r.str(v, key, &p.Order); err != nil {
				return err
			}
			if p.Order != "random" && p.Order != "sequential" {
				return r.pos(v).Errorf("order: %q: want random or sequential", p.Order)
			}
		case "variants":
			return r.variants(v, p)
		case "hooks":
			return r.hooks(v, &p.Hooks)
		case "workloads":
			return r.workloads(v, p)
		case "extrapolate":
			return r.extrapolate(v, &p.Extrapolate)
		case "precondition":
			return r.precondition(v, p)
		case "ports":
			var text string
			if err := r.str(v, key, &text); err != nil {
				return err
			}
			pr, err := ParsePortRange(text)
			if err != nil {
				return r.pos(v).Errorf("ports: %v", err)
			}
			p.Ports = pr
		}
		return nil
	})
}

// extrapolate reads [scales...] or {at: [scales...], caps: {metric: value}}.
func (r reader) extrapolate(n *yaml.Node, dst *Extrapolate) error {
	at := n
	if n.Kind == yaml.MappingNode {
		at = nil
		err := r.fields(n, "extrapolate", []string{"at", "caps"}, func(key string, v *yaml.Node) error {
			if key == "at" {
				at = v
				return nil
			}
			return r.caps(v, dst)
		})
		if err != nil {
			return err
		}
		if at == nil {
			return r.pos(n).Errorf("extrapolate: give at: [scales to predict]")
		}
	}
	items, err := r.list(at, "extrapolate")
	if err != nil {
		return err
	}
	for _, x := range items {
		v, err := r.scalar(x, "extrapolate")
		if err != nil {
			return err
		}
		f, err := units.ParseFloat(v.Text, 1, 1e300)
		if err != nil {
			return v.Pos.Errorf("extrapolate %q: %v (a scale such as 1e9)", v.Text, err)
		}
		dst.At = append(dst.At, f)
	}
	return nil
}

// caps reads {metric: value}: sizes for byte metrics (32g), numbers else.
func (r reader) caps(n *yaml.Node, dst *Extrapolate) error {
	if n.Kind != yaml.MappingNode {
		return r.pos(n).Errorf("extrapolate.caps: want a mapping of metric: cap, such as max_rss_bytes: 32g")
	}
	dst.Caps = map[string]float64{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		v, err := r.scalar(n.Content[i+1], "extrapolate.caps."+k)
		if err != nil {
			return err
		}
		var f float64
		if strings.HasSuffix(k, "_bytes") {
			var b int64
			b, err = units.ParseSize(v.Text)
			f = float64(b)
		} else {
			f, err = units.ParseFloat(v.Text, 0, 1e300)
		}
		if err != nil || f <= 0 {
			return v.Pos.Errorf("extrapolate.caps.%s %q: want a positive %s", k, v.Text, map[bool]string{true: "size such as 32g", false: "number"}[strings.HasSuffix(k, "_bytes")])
		}
		dst.Caps[k] = f
	}
	return nil
}

// maxVariantWarmup bounds warmup_per_variant: past it, a typo.
const maxVariantWarmup = 10_000

// MinSequentialRounds is the fewest rounds an experiment that stops when
// decided may stop after: fewer say too little about the noise for any
// interval.
const MinSequentialRounds = 3

// rounds reads a fixed count, or {min, max}: stop when decided.
func (r reader) rounds(n *yaml.Node, p *Plan) error {
	if n.Kind != yaml.MappingNode {
		return r.intField(n, "rounds", 1, MaxRounds, &p.Rounds)
	}
	var lo, hi int
	err := r.fields(n, "rounds", []string{"min", "max"}, func(key string, v *yaml.Node) error {
		if key == "min" {
			return r.intField(v, "rounds.min", MinSequentialRounds, MaxRounds, &lo)
		}
		return r.intField(v, "rounds.max", MinSequentialRounds, MaxRounds, &hi)
	})
	switch {
	case err != nil:
		return err
	case lo == 0 || hi == 0:
		return r.pos(n).Errorf("rounds: give both min and max (rounds: {min: 6, max: 60}: stop when every comparison is decided), or one number")
	case hi < lo:
		return r.pos(n).Errorf("rounds: max %d is below min %d", hi, lo)
	}
	p.MinRounds, p.Rounds = lo, hi
	return nil
}

func (r reader) threshold(n *yaml.Node, dst *float64) error {
	v, err := r.scalar(n, "threshold")
	if err != nil {
		return err
	}
	text := strings.TrimSpace(v.Text)
	pct := strings.HasSuffix(text, "%")
	f, err := units.ParseFloat(strings.TrimSuffix(text, "%"), 0, 100)
	if pct {
		f /= 100
	}
	if err != nil || f <= 0 || f >= 1 {
		return v.Pos.Errorf("threshold %q: want a percentage above 0 and below 100 such as 2%% (or a fraction such as 0.02)", v.Text)
	}
	*dst = f
	return nil
}

func (r reader) list(n *yaml.Node, what string) ([]*yaml.Node, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, r.pos(n).Errorf("%s: want a list", what)
	}
	return n.Content, nil
}

func (r reader) variants(n *yaml.Node, p *Plan) error {
	items, err := r.list(n, "variants")
	if err != nil {
		return err
	}
	for _, item := range items {
		v := Variant{Pos: r.pos(item), Stop: Stop{Signal: "TERM", Grace: 10 * time.Second}}
		if err := r.fields(item, "a variant", VariantKeys, func(key string, x *yaml.Node) error { return r.variantKey(&v, key, x) }); err != nil {
			return err
		}
		p.Variants = append(p.Variants, v)
	}
	return nil
}

// variantKey reads one key of a variant.
func (r reader) variantKey(v *Variant, key string, x *yaml.Node) error {
	var err error
	switch key {
	case "name":
		return r.str(x, "variant name", &v.Name)
	case "git":
		v.Git = &GitRef{}
		return r.fields(x, "git", []string{"repo", "ref"}, func(k string, y *yaml.Node) error {
			if k == "repo" {
				return r.str(y, "git.repo", &v.Git.Repo)
			}
			return r.str(y, "git.ref", &v.Git.Ref)
		})
	case "build":
		return r.str(x, key, &v.Build)
	case "start":
		return r.str(x, key, &v.Start)
	case "ready":
		return r.ready(x, v)
	case "stop":
		return r.fields(x, "stop", []string{"signal", "grace"}, func(k string, y *yaml.Node) error {
			if k == "signal" {
				return r.str(y, "stop.signal", &v.Stop.Signal)
			}
			return r.duration(y, "stop.grace", &v.Stop.Grace)
		})
	case "env":
		v.Env, err = r.stringMap(x, "env")
	case "vars":
		v.Vars, err = r.stringMap(x, "vars")
	case "workdir":
		return r.str(x, key, &v.Workdir)
	case "limits":
		v.Limits = &Limits{}
		return r.scalarPair(x, "limits", "memory", "cpus", &v.Limits.Memory, &v.Limits.CPUs)
	case "observe":
		v.Observe = &Observe{}
		return r.scalarPair(x, "observe", "pid", "pidfile", &v.Observe.PID, &v.Observe.PIDFile)
	case "profile":
		return r.profile(x, v)
	}
	return err
}

// ready reads a variant's ready: how iolab knows its server is up.
func (r reader) ready(x *yaml.Node, v *Variant) error {
	v.Ready = &Ready{Timeout: 30 * time.Second}
	return r.fields(x, "ready", []string{"http", "tcp", "cmd", "timeout"}, func(k string, y *yaml.Node) error {
		switch k {
		case "http":
			return r.str(y, "ready.http", &v.Ready.HTTP)
		case "tcp":
			return r.str(y, "ready.tcp", &v.Ready.TCP)
		case "cmd":
			return r.str(y, "ready.cmd", &v.Ready.Cmd)
		}
		return r.duration(y, "ready.timeout", &v.Ready.Timeout)
	})
}

// scalarPair reads a mapping of at most two scalar keys, a and b, into
// their places.
func (r reader) scalarPair(x *yaml.Node, what, a, b string, da, db *Value) error {
	return r.fields(x, what, []string{a, b}, func(k string, y *yaml.Node) error {
		dst := da
		if k == b {
			dst = db
		}
		var err error
		*dst, err = r.scalar(y, what+"."+k)
		return err
	})
}

// profile reads a variant's profile: what iolab records of its server.
func (r reader) profile(x *yaml.Node, v *Variant) error {
	v.Profile = &Profile{}
	return r.fields(x, "profile", []string{"go_pprof", "perf"}, func(k string, y *yaml.Node) error {
		val, err := r.scalar(y, "profile."+k)
		if k == "go_pprof" {
			v.Profile.GoPprof = val
			return err
		}
		switch val.Text {
		case "true":
			v.Profile.Perf = true
		case "false":
		default:
			return val.Pos.Errorf("profile.perf %q: want true or false", val.Text)
		}
		return err
	})
}

// stringMap reads a mapping of names to scalar values (env).
func (r reader) stringMap(n *yaml.Node, what string) (map[string]string, error) {
	if n.Kind != yaml.MappingNode {
		return nil, r.pos(n).Errorf("%s: want a mapping of NAME: value", what)
	}
	m := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		v, err := r.scalar(n.Content[i+1], what+"."+n.Content[i].Value)
		if err != nil {
			return nil, err
		}
		m[n.Content[i].Value] = v.Text
	}
	return m, nil
}

func (r reader) hooks(n *yaml.Node, h *Hooks) error {
	known := HookKeys
	return r.fields(n, "hooks", known, func(key string, v *yaml.Node) error {
		dst := map[string]*string{"before_run": &h.BeforeRun, "after_run": &h.AfterRun,
			"before_round": &h.BeforeRound, "after_round": &h.AfterRound}[key]
		if err := r.str(v, "hooks."+key, dst); err != nil {
			return err
		}
		// A round hook runs once per round, in the plan's directory, for
		// no variant and no cell: no template has a value there.
		if m := Template.FindString(*dst); m != "" && strings.HasSuffix(key, "_round") {
			return r.pos(v).Errorf("hooks.%s: %s has no value in a round hook, which runs once per round outside any variant or cell; use it in before_run/after_run", key, m)
		}
		return nil
	})
}

func (r reader) workloads(n *yaml.Node, p *Plan) error {
	items, err := r.list(n, "workloads")
	if err != nil {
		return err
	}
	kinds := workload.Names() // every registered kind is a key of its own
	known := append(slices.Clone(WorkloadKeys), kinds...)
	for _, item := range items {
		w := Workload{Pos: r.pos(item), Fields: map[string]Value{}}
		var matrix, scale, curve, slo *yaml.Node
		err := r.fields(item, "a workload", known, func(key string, v *yaml.Node) error {
			switch key {
			case "name":
				return r.str(v, "workload name", &w.Name)
			case "matrix":
				matrix = v
				return nil
			case "scale":
				scale = v
				return nil
			case "curve":
				curve = v
				return nil
			case "slo":
				slo = v
				return nil
			case "setup":
				w.Setup = &Workload{Pos: r.pos(v), Fields: map[string]Value{}}
				return r.fields(v, "setup", kinds, func(kind string, x *yaml.Node) error {
					return r.kind(w.Setup, "setup", kind, x)
				})
			}
			return r.kind(&w, fmt.Sprintf("workload %q", w.Name), key, v)
		})
		if err != nil {
			return err
		}
		if w.Kind == "" {
			return w.Pos.Errorf("workload %q: no kind; give one of: %s", w.Name, strings.Join(kinds, ", "))
		}
		if w.Setup != nil && w.Setup.Kind == "" {
			name := w.Name
			if name == "" {
				name = w.Kind
			}
			return w.Setup.Pos.Errorf("workload %q: setup: no kind; give one of: %s", name, strings.Join(kinds, ", "))
		}
		if w.Setup != nil {
			w.Setup.Name = w.Name + " setup"
		}
		if matrix != nil {
			if w.Matrix, err = r.matrix(matrix); err != nil {
				return err
			}
		}
		if scale != nil {
			if err := r.scale(scale, &w); err != nil {
				return err
			}
		}
		if curve != nil {
			if err := r.curve(curve, &w); err != nil {
				return err
			}
		}
		if slo != nil {
			if err := r.slo(slo, &w); err != nil {
				return err
			}
		}
		p.Workloads = append(p.Workloads, w)
	}
	return nil
}

// kind reads a workload's settings under its kind's key (fs: {...}). A
// list value stands for a repeated flag (header: [a, b] is -H a -H b): its
// items are kept joined by newlines, each one a flag value.
func (r reader) kind(w *Workload, what, kind string, v *yaml.Node) error {
	if w.Kind != "" {
		return r.pos(v).Errorf("%s: both %s and %s; give one workload kind per entry", what, w.Kind, kind)
	}
	w.Kind = kind
	if v.Kind != yaml.MappingNode {
		return r.pos(v).Errorf("%s: want a mapping of its settings", kind)
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		key, x := v.Content[i].Value, v.Content[i+1]
		if k, _ := workload.Lookup(kind); k.OutputMetrics && key == "metrics" {
			if err := r.metrics(x, w); err != nil {
				return err
			}
			continue
		}
		var val Value
		if x.Kind == yaml.SequenceNode {
			val = Value{Pos: r.pos(x)}
			for _, item := range x.Content {
				one, err := r.scalar(item, kind+"."+key)
				if err != nil {
					return err
				}
				val.List = append(val.List, one)
			}
			if len(val.List) == 0 {
				return val.Pos.Errorf("%s.%s: an empty list; give at least one value, or leave the key out", kind, key)
			}
		} else {
			var err error
			if val, err = r.scalar(x, kind+"."+key); err != nil {
				return err
			}
		}
		val.KeyPos = r.pos(v.Content[i])
		if _, dup := w.Fields[key]; dup {
			return val.KeyPos.Errorf("%s.%s given twice", kind, key)
		}
		w.Fields[key] = val
	}
	return nil
}

// metrics reads a cmd workload's metrics: a list of {name, regex | json
// and field, scale, better}.
func (r reader) metrics(n *yaml.Node, w *Workload) error {
	items, err := r.list(n, "cmd.metrics")
	if err != nil {
		return err
	}
	const example = "such as {name: ingest_s, json: 'msg=ingest phase complete', field: duration_ms, scale: 0.001} or {name: objects_per_s, regex: 'rate=([0-9.]+)'}"
	for _, item := range items {
		m := MetricSpec{Scale: 1, LowerIsBetter: true, Pos: r.pos(item)}
		var json *Value
		err := r.fields(item, "a metric", []string{"name", "regex", "json", "field", "scale", "better"}, func(key string, v *yaml.Node) error {
			val, err := r.scalar(v, "metrics."+key)
			if err != nil {
				return err
			}
			switch key {
			case "name":
				if !metricName.MatchString(val.Text) {
					return val.Pos.Errorf("metrics.name %q: want lower-case letters, digits, _ and ., starting with a letter (ingest_s)", val.Text)
				}
				m.Name = val.Text
			case "regex":
				if m.Regex, err = regexp.Compile(val.Text); err != nil {
					return val.Pos.Errorf("metrics.regex %q: %v", val.Text, err)
				}
				if m.Regex.NumSubexp() > 1 {
					return val.Pos.Errorf("metrics.regex %q: %d groups; the value is the first group, so give one (use (?:...) for the others)", val.Text, m.Regex.NumSubexp())
				}
			case "json":
				json = &val
				if val.Text != "" {
					k, v, ok := strings.Cut(val.Text, "=")
					if !ok || strings.TrimSpace(k) == "" {
						return val.Pos.Errorf("metrics.json %q: want key=value selecting the lines (msg=ingest phase complete), or \"\" for every JSON line", val.Text)
					}
					m.JSONKey, m.JSONValue = strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `"`)
				}
			case "field":
				m.Field = val.Text
			case "scale":
				if m.Scale, err = units.ParseFloat(val.Text, -1e300, 1e300); err != nil || m.Scale == 0 {
					return val.Pos.Errorf("metrics.scale %q: want a number other than 0 (0.001 turns ms into s)", val.Text)
				}
			case "better":
				if val.Text != "lower" && val.Text != "higher" {
					return val.Pos.Errorf("metrics.better %q: want lower (a cost: time, bytes) or higher (a rate)", val.Text)
				}
				m.LowerIsBetter = val.Text == "lower"
			}
			return nil
		})
		switch {
		case err != nil:
			return err
		case m.Name == "":
			return m.Pos.Errorf("a metric without a name; %s", example)
		case (m.Regex == nil) == (json == nil):
			return m.Pos.Errorf("metric %s: give one of regex or json; %s", m.Name, example)
		case json != nil && m.Field == "":
			return m.Pos.Errorf("metric %s: json needs field: the JSON field that holds the value", m.Name)
		case m.Regex != nil && m.Field != "":
			return m.Pos.Errorf("metric %s: field goes with json, not regex (the regex's first group is the value)", m.Name)
		}
		for _, o := range w.Metrics {
			if o.Name == m.Name {
				return m.Pos.Errorf("metric %s defined twice", m.Name)
			}
		}
		w.Metrics = append(w.Metrics, m)
	}
	return nil
}

// scale reads scale: {field: [numbers]}: one axis, numeric, put first in
// the matrix (ascending), so its cells are named by it first.
func (r reader) scale(n *yaml.Node, w *Workload) error {
	axes, err := r.matrix(n)
	if err != nil {
		return fmt.Errorf("%w (scale: {objects: [10000, 100000, 1000000]})", err)
	}
	if len(axes) != 1 {
		return r.pos(n).Errorf("scale: want one field, such as scale: {objects: [10000, 100000, 1000000]}; other fields go under matrix:")
	}
	ax := axes[0]
	for _, m := range w.Matrix {
		if m.Field == ax.Field {
			return ax.Values[0].KeyPos.Errorf("scale.%s: also a matrix field; give it once", ax.Field)
		}
	}
	if ax.Field == ScaleParam {
		return ax.Values[0].KeyPos.Errorf("scale.%s: a name iolab keeps for itself; call it what it counts (objects, files, bytes)", ax.Field)
	}
	num := make([]float64, len(ax.Values))
	for i, v := range ax.Values {
		if num[i], err = ScaleValue(v.Text); err != nil {
			return v.Pos.Errorf("scale.%s %q: want a number above 0 (a count such as 100000 or 1e6, or a size such as 64m)", ax.Field, v.Text)
		}
		if i > 0 && num[i] <= num[i-1] {
			return v.Pos.Errorf("scale.%s: %s after %s; list the scales in ascending order, each once", ax.Field, v.Text, ax.Values[i-1].Text)
		}
	}
	if len(ax.Values) < 3 {
		return r.pos(n).Errorf("scale.%s: %d scales; a fit of start-up cost, rate and exponent needs 3 or more", ax.Field, len(ax.Values))
	}
	w.Scale = ax.Field
	w.Matrix = append([]Axis{ax}, w.Matrix...)
	return nil
}

// curve reads a workload's curve: loads in percent of its flat-out rate,
// ascending, each once.
func (r reader) curve(n *yaml.Node, w *Workload) error {
	const example = "such as curve: [10, 50, 70, 80, 90, 100]"
	items, err := r.list(n, "curve")
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return r.pos(n).Errorf("curve: an empty list; give the loads in percent of the flat-out rate, %s", example)
	}
	for i, item := range items {
		val, err := r.scalar(item, "curve")
		if err != nil {
			return err
		}
		pct, err := units.ParseFloat(strings.TrimSuffix(val.Text, "%"), 0, 100)
		if err != nil || pct <= 0 {
			return val.Pos.Errorf("curve: %q: want a load in percent of the flat-out rate, above 0 and at most 100, %s", val.Text, example)
		}
		if i > 0 && pct <= w.Curve[i-1] {
			return val.Pos.Errorf("curve: %s after %g; list the loads in ascending order, each once", val.Text, w.Curve[i-1])
		}
		w.Curve = append(w.Curve, pct)
	}
	for _, ax := range w.Matrix {
		if ax.Field == LoadParam {
			return ax.Values[0].KeyPos.Errorf("matrix.%s: a name a curve keeps for its loads; call the field something else", ax.Field)
		}
	}
	w.CurvePos = r.pos(n)
	return nil
}

// slo reads a workload's slo: {metric, below, precision}: a metric the
// catalogue declares, lower being better, and its bound.
func (r reader) slo(n *yaml.Node, w *Workload) error {
	const example = "such as slo: {metric: get.response_p99_ns, below: 20ms}"
	o := &SLO{Precision: 0.05, Pos: r.pos(n)}
	var below Value
	err := r.fields(n, "slo", SLOKeys, func(key string, v *yaml.Node) error {
		val, err := r.scalar(v, "slo."+key)
		if err != nil {
			return err
		}
		switch key {
		case "metric":
			o.Metric = val.Text
			def, ok := metrics.Describe(val.Text)
			switch {
			case !ok:
				hint := ""
				if _, ok := metrics.Describe(val.Text + "_ns"); ok {
					hint = "; did you mean " + val.Text + "_ns?"
				}
				return val.Pos.Errorf("slo.metric %q: no metric of that name%s; %s", val.Text, hint, example)
			case def.Better != metrics.LowerIsBetter:
				return val.Pos.Errorf("slo.metric %s: an objective keeps a metric below a bound, and lower %s is not better; give a latency, %s", val.Text, val.Text, example)
			}
		case "below":
			below = val
		case "precision":
			if o.Precision, err = units.ParseFloat(strings.TrimSuffix(val.Text, "%"), 0.1, 50); err != nil {
				return val.Pos.Errorf("slo.precision %q: want the bracket's width in percent, 0.1 to 50 (default 5)", val.Text)
			}
			o.Precision /= 100
		}
		return nil
	})
	if err != nil {
		return err
	}
	if o.Metric == "" || below.Text == "" {
		return o.Pos.Errorf("slo: give metric and below, %s", example)
	}
	def, _ := metrics.Describe(o.Metric)
	o.BelowText = below.Text
	if def.Unit == "ns" {
		d, err := units.ParseDuration(below.Text)
		if err != nil || d <= 0 {
			return below.Pos.Errorf("slo.below %q: %s is a time; want a duration above 0 such as 20ms", below.Text, o.Metric)
		}
		o.Below = float64(d.Nanoseconds())
	} else if o.Below, err = units.ParseFloat(below.Text, 0, math.MaxFloat64); err != nil || o.Below <= 0 {
		return below.Pos.Errorf("slo.below %q: want a number above 0, in %s", below.Text, def.Unit)
	}
	for _, ax := range w.Matrix {
		if ax.Field == LoadParam {
			return ax.Values[0].KeyPos.Errorf("matrix.%s: a name the SLO search keeps for its loads; call the field something else", ax.Field)
		}
	}
	w.SLO = o
	return nil
}

// PreconditionKeys are the keys of a plan's precondition:.
var PreconditionKeys = []string{"rounds", "window", "range", "slope"}

// precondition reads precondition: — true for SNIA's rule as it is, or
// {rounds, window, range, slope} to change it.
func (r reader) precondition(n *yaml.Node, p *Plan) error {
	pc := stats.DefaultPrecondition
	p.PreconditionPos = r.pos(n)
	if n.Kind == yaml.ScalarNode {
		switch n.Value {
		case "true":
			p.Precondition = &pc
		case "false":
		default:
			return r.pos(n).Errorf("precondition %q: want true (SNIA's rule: 5 rounds within 20%% of their mean, their slope within 10%%, at most 25 rounds) or {rounds, window, range, slope}", n.Value)
		}
		return nil
	}
	percent := func(v Value, dst *float64) error {
		f, err := units.ParseFloat(strings.TrimSuffix(v.Text, "%"), 0.1, 100)
		if err != nil {
			return v.Pos.Errorf("precondition: %q: want a percentage of the rounds' mean, 0.1%% to 100%%", v.Text)
		}
		*dst = f / 100
		return nil
	}
	err := r.fields(n, "precondition", PreconditionKeys, func(key string, v *yaml.Node) error {
		val, err := r.scalar(v, "precondition."+key)
		if err != nil {
			return err
		}
		switch key {
		case "rounds", "window":
			i, err := units.ParseInt(val.Text, 2, MaxRounds)
			if err != nil {
				return val.Pos.Errorf("precondition.%s %q: %v", key, val.Text, err)
			}
			if key == "rounds" {
				pc.Rounds = int(i)
			} else {
				pc.Window = int(i)
			}
		case "range":
			return percent(val, &pc.Range)
		case "slope":
			return percent(val, &pc.Slope)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if pc.Window > pc.Rounds {
		return p.PreconditionPos.Errorf("precondition: a window of %d rounds in at most %d; give rounds of at least the window", pc.Window, pc.Rounds)
	}
	p.Precondition = &pc
	return nil
}

// CurveLoad is the load param of a curve's cell at pct percent.
func CurveLoad(pct float64) string { return strconv.FormatFloat(pct, 'g', -1, 64) + "%" }

// ScaleValue is a scale as a number: a count (100000, 1e6) or a size in
// bytes (64m, as fs --size takes it).
func ScaleValue(text string) (float64, error) {
	f, err := units.ParseFloat(text, 0, 1e300)
	if err != nil {
		var b int64
		if b, err = units.ParseSize(text); err != nil {
			return 0, err
		}
		f = float64(b)
	}
	if f <= 0 {
		return 0, errors.New("not above 0")
	}
	return f, nil
}

// ScaleAdvice says what is wrong with a workload's scales for a fit: too
// few decades, or values spaced evenly rather than geometrically; "" when
// nothing is.
func (w Workload) ScaleAdvice() string {
	if w.Scale == "" {
		return ""
	}
	var v []float64
	for _, x := range w.Matrix[0].Values {
		f, _ := ScaleValue(x.Text)
		v = append(v, f)
	}
	lo, hi := v[0], v[len(v)-1]
	geometric := func() string {
		top := math.Max(hi, lo*1000)
		var out []string
		for i := range 5 {
			out = append(out, fmt.Sprintf("%.4g", lo*math.Pow(top/lo, float64(i)/4)))
		}
		return "[" + strings.Join(out, ", ") + "]"
	}
	if decades := math.Log10(hi / lo); decades < 2 {
		return fmt.Sprintf("workload %q: scale.%s spans %.1f decades; a fit tells n from n·log n, or finds an exponent, only over 2 or more: try %s", w.Name, w.Scale, decades, geometric())
	}
	// Evenly spaced: the middle step is as large as the first.
	if len(v) >= 4 && (v[2]-v[1]) > 0.8*(v[1]-v[0]) && (v[2]-v[1]) < 1.25*(v[1]-v[0]) {
		return fmt.Sprintf("workload %q: scale.%s is spaced evenly, which crowds the fit at the top; geometric spacing weighs every decade alike: try %s", w.Name, w.Scale, geometric())
	}
	return ""
}

func (r reader) matrix(n *yaml.Node) ([]Axis, error) {
	if n.Kind != yaml.MappingNode {
		return nil, r.pos(n).Errorf("matrix: want a mapping of field: [values]")
	}
	var axes []Axis
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		ax := Axis{Field: k.Value}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			return nil, r.pos(v).Errorf("matrix.%s: want a non-empty list of values", k.Value)
		}
		for _, x := range v.Content {
			val, err := r.scalar(x, "matrix."+k.Value)
			if err != nil {
				return nil, err
			}
			val.KeyPos = r.pos(k)
			ax.Values = append(ax.Values, val)
		}
		axes = append(axes, ax)
	}
	return axes, nil
}

// check validates the plan as a whole.
func (p *Plan) check(top Pos) error {
	if p.Name == "" {
		p.Name = strings.TrimSuffix(filepath.Base(p.Path), filepath.Ext(p.Path))
	}
	if pc := p.Precondition; pc != nil {
		switch {
		case p.warmupGiven:
			return p.PreconditionPos.Errorf("precondition: the warm-up rounds run until steady, up to precondition.rounds (%d); leave warmup: out", pc.Rounds)
		case p.Order == "sequential":
			return p.PreconditionPos.Errorf("precondition: steadiness is judged round by round, every cell in each; order: sequential runs a cell's rounds back to back")
		}
		p.Warmup = pc.Rounds
	}
	if len(p.Variants) == 0 {
		p.Variants = []Variant{{Name: "default", Pos: top, Stop: Stop{Signal: "TERM", Grace: 10 * time.Second}}}
	}
	names := map[string]bool{}
	for _, v := range p.Variants {
		switch {
		case v.Name == "":
			return v.Pos.Errorf("variant without a name")
		case names[v.Name]:
			return v.Pos.Errorf("variant %q defined twice", v.Name)
		case v.Git != nil && (v.Git.Repo == "" || v.Git.Ref == ""):
			return v.Pos.Errorf("variant %q: git needs repo and ref", v.Name)
		case v.Ready != nil && v.Start == "":
			return v.Pos.Errorf("variant %q: ready without start; ready checks a started server", v.Name)
		case v.Observe != nil && v.Start != "":
			return v.Pos.Errorf("variant %q: observe names a process iolab did not start; the server start: runs is watched already", v.Name)
		case v.Observe != nil && (v.Observe.PID.Text == "") == (v.Observe.PIDFile.Text == ""):
			return v.Pos.Errorf("variant %q: observe: give one of pid or pidfile", v.Name)
		case v.Observe != nil && v.Observe.PID.Text != "":
			if _, err := units.ParseInt(v.Observe.PID.Text, 1, 1<<22); err != nil {
				return v.Observe.PID.Pos.Errorf("observe.pid %q: %v; want the PID of a running process", v.Observe.PID.Text, err)
			}
		}
		if err := p.checkVars(v); err != nil {
			return err
		}
		texts := map[string]string{"build": v.Build, "workdir": v.Workdir}
		for k, x := range v.Env {
			texts["env."+k] = x
		}
		for _, field := range slices.Sorted(maps.Keys(texts)) {
			if err := variantWide(v, field, texts[field]); err != nil {
				return err
			}
		}
		if _, err := ParseSignal(v.Stop.Signal); err != nil {
			return v.Pos.Errorf("variant %q: stop.signal: %v", v.Name, err)
		}
		names[v.Name] = true
	}
	if p.Baseline == "" {
		p.Baseline = p.Variants[0].Name
	} else if !names[p.Baseline] {
		known := make([]string, 0, len(names))
		for n := range names {
			known = append(known, n)
		}
		sort.Strings(known)
		return top.Errorf("baseline %q is not a variant; variants: %s", p.Baseline, strings.Join(known, ", "))
	}
	if len(p.Workloads) == 0 {
		return top.Errorf("no workloads; add a workloads: list")
	}
	wnames := map[string]bool{}
	for i := range p.Workloads {
		w := &p.Workloads[i]
		if w.Name == "" {
			w.Name = w.Kind
		}
		if wnames[w.Name] {
			return w.Pos.Errorf("workload %q defined twice; give each a distinct name", w.Name)
		}
		wnames[w.Name] = true
	}
	return nil
}

// varName is what a variant's vars may be called: a template's name.
var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkVars refuses a variant's var that could not be told from another
// template — a variant's own, a matrix field, one a workload kind fills —
// or that holds a template itself. Every variant names the same vars, so
// every cell's workload is filled alike.
func (p *Plan) checkVars(v Variant) error {
	reserved := map[string]string{}
	for _, t := range VariantTemplates {
		reserved[t] = "a variant's own template"
	}
	for _, w := range p.Workloads {
		for _, ax := range w.Matrix {
			reserved[ax.Field] = fmt.Sprintf("a matrix field of workload %q", cmp.Or(w.Name, w.Kind))
		}
		if kind, ok := workload.Lookup(w.Kind); ok {
			for _, t := range kind.Templates {
				reserved[t] = fmt.Sprintf("a template the %s workload fills", w.Kind)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(v.Vars)) {
		switch {
		case !varName.MatchString(k):
			return v.Pos.Errorf("variant %q: vars.%s: a var's name is a template's: letters, digits and _", v.Name, k)
		case reserved[k] != "":
			return v.Pos.Errorf("variant %q: vars.%s: {{%s}} is %s; call the var something else", v.Name, k, k, reserved[k])
		case Template.MatchString(v.Vars[k]):
			return v.Pos.Errorf("variant %q: vars.%s: a var's value is filled in as it is; it cannot hold a template (%s)", v.Name, k, Template.FindString(v.Vars[k]))
		}
	}
	first := p.Variants[0]
	if !slices.Equal(slices.Sorted(maps.Keys(first.Vars)), slices.Sorted(maps.Keys(v.Vars))) {
		return v.Pos.Errorf("variant %q: vars %v, variant %q: vars %v: every variant gives the same vars, so each cell's load is filled in every variant",
			v.Name, slices.Sorted(maps.Keys(v.Vars)), first.Name, slices.Sorted(maps.Keys(first.Vars)))
	}
	return nil
}

// The keys a plan knows, at its top, in a variant, in hooks and in a
// workload (besides the kinds, each a key of its own): the parser's, and
// the reference's (docs/reference.md is made from them).
var (
	PlanKeys     = []string{"name", "rounds", "warmup", "warmup_per_variant", "cooldown", "seed", "baseline", "threshold", "order", "variants", "hooks", "workloads", "extrapolate", "ports", "precondition"}
	VariantKeys  = []string{"name", "git", "build", "start", "ready", "stop", "env", "vars", "workdir", "limits", "observe", "profile"}
	HookKeys     = []string{"before_run", "after_run", "before_round", "after_round"}
	WorkloadKeys = []string{"name", "matrix", "scale", "curve", "slo", "setup"}
)

// Template matches a {{template}} in a plan's text.
var Template = regexp.MustCompile(`\{\{[^}]*\}\}`)

// VariantTemplates are the templates every variant fills.
var VariantTemplates = []string{"variant", "workdir", "tmp", "port"}

// variantWide refuses, in a field set once per variant (its build, env,
// workdir), a template only a cell can fill (a matrix field's).
func variantWide(v Variant, field, text string) error {
	known := make([]string, len(VariantTemplates))
	for i, t := range VariantTemplates {
		known[i] = "{{" + t + "}}"
	}
	for _, m := range Template.FindAllString(text, -1) {
		if !slices.Contains(known, m) {
			return v.Pos.Errorf("variant %q: %s: unknown template %s; known here: %s (a matrix field differs between cells: use it in start:, hooks or workload keys)",
				v.Name, field, m, strings.Join(known, ", "))
		}
	}
	return nil
}

// Cells counts the cells the plan expands to — every matrix point of every
// workload, for every variant — without expanding it, saturating at
// math.MaxInt, so a schedule too large to build can be refused first.
func (p *Plan) Cells() int {
	total := 0
	for _, w := range p.Workloads {
		n := 1
		for _, ax := range w.Matrix {
			n = satMul(n, len(ax.Values))
		}
		total = satAdd(total, satMul(n, len(p.Variants)))
	}
	return total
}

func satMul(a, b int) int {
	if a != 0 && b > math.MaxInt/a {
		return math.MaxInt
	}
	return a * b
}

func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// Points expands the matrix: one map of field overrides per combination, in
// the order written (the last axis varies fastest).
func (w Workload) Points() []map[string]Value {
	points := []map[string]Value{{}}
	for _, ax := range w.Matrix {
		var next []map[string]Value
		for _, p := range points {
			for _, v := range ax.Values {
				q := map[string]Value{ax.Field: v}
				for k, x := range p {
					q[k] = x
				}
				next = append(next, q)
			}
		}
		points = next
	}
	return points
}

// ErrUnknownSignal is returned by ParseSignal.
var ErrUnknownSignal = errors.New("unknown signal")

// ParseSignal accepts TERM, SIGTERM, INT, KILL, HUP, QUIT, USR1, USR2.
func ParseSignal(s string) (syscall.Signal, error) {
	sigs := map[string]syscall.Signal{"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL,
		"HUP": syscall.SIGHUP, "QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2}
	if sig, ok := sigs[strings.TrimPrefix(strings.ToUpper(s), "SIG")]; ok {
		return sig, nil
	}
	return 0, fmt.Errorf("%q: %w; want TERM, INT, KILL, HUP, QUIT, USR1 or USR2", s, ErrUnknownSignal)
}

// didYouMean is "; did you mean KEY?" for the known key name is a slip
// away from, or "".
func didYouMean(name string, known []string) string {
	if near := suggest.Closest(name, known); near != "" {
		return "; did you mean " + near + "?"
	}
	return ""
}
