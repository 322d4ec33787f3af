package plan

import (
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	_ "github.com/iolab/iolab/internal/workload/all"
)

func TestParseDefaultsAndMatrix(t *testing.T) {
	t.Parallel()
	p, err := Parse("dir/x.yaml", []byte(`
variants:
  - name: a
    env: {MODE: fast}
  - name: b
workloads:
  - name: w
    cmd: {run: "./run {{n}} {{m}}"}
    matrix:
      n: [1, 2]
      m: [x, y, z]
`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "x" || p.Rounds != 6 || p.Warmup != 1 || p.Threshold != 0.02 || p.Order != "random" || p.Baseline != "a" {
		t.Fatalf("defaults: %+v", p)
	}
	if p.Variants[0].Env["MODE"] != "fast" || p.Variants[1].Stop.Signal != "TERM" || p.Variants[1].Stop.Grace != 10*time.Second {
		t.Fatalf("variants: %+v", p.Variants)
	}
	pts := p.Workloads[0].Points()
	if len(pts) != 6 || pts[0]["n"].Text != "1" || pts[0]["m"].Text != "x" || pts[5]["n"].Text != "2" || pts[5]["m"].Text != "z" {
		t.Fatalf("points: %v", pts)
	}
	if pos := pts[0]["m"].Pos; pos.Line != 11 || pos.Col != 11 {
		t.Fatalf("position of matrix value: %v", pos)
	}
	if p.MinRounds != 0 || p.WarmupPerVariant != 0 || p.AutoWarmup {
		t.Fatalf("stop when decided or variant warm-up by default: %+v", p)
	}
	p, err = Parse("x.yaml", []byte("rounds: {min: 6, max: 60}\nwarmup_per_variant: auto\nworkloads:\n  - cmd: {run: x}\n"))
	if err != nil || p.MinRounds != 6 || p.Rounds != 60 || !p.AutoWarmup {
		t.Fatalf("%v: %+v", err, p)
	}
	p, err = Parse("x.yaml", []byte("extrapolate: {at: [1e9, 1.4e10], caps: {max_rss_bytes: 1g}}\nworkloads:\n  - cmd: {run: x}\n    matrix: {m: [a]}\n    scale: {n: [10, 20, 30, 40]}\n"))
	if err != nil || p.Workloads[0].Scale != "n" || p.Workloads[0].Matrix[0].Field != "n" || p.Extrapolate.At[1] != 1.4e10 || p.Extrapolate.Caps["max_rss_bytes"] != 1<<30 {
		t.Fatalf("%v: %+v", err, p)
	}
	if a := p.Workloads[0].ScaleAdvice(); !strings.Contains(a, "spans 0.6 decades") || !strings.Contains(a, "try [10, 56.23, 316.2, 1778, 1e+04]") {
		t.Errorf("advice: %q", a)
	}
	p, err = Parse("x.yaml", []byte("workloads:\n  - cmd: {run: x}\n    scale: {n: [1000, 2000, 3000, 100000]}\n"))
	if a := p.Workloads[0].ScaleAdvice(); err != nil || !strings.Contains(a, "spaced evenly") {
		t.Errorf("%v: advice %q", err, a)
	}
	p, err = Parse("x.yaml", []byte("workloads:\n  - fs: {bs: 4k}\n    scale: {size: [1m, 10m, 50m]}\n"))
	if err != nil || p.Workloads[0].Scale != "size" || p.Workloads[0].ScaleAdvice() == "" {
		t.Fatalf("sizes as scales: %v %+v", err, p)
	}
	p, err = Parse("x.yaml", []byte("workloads:\n  - cmd: {run: x}\n    scale: {n: [1000, 10000, 100000]}\n"))
	if a := p.Workloads[0].ScaleAdvice(); err != nil || a != "" {
		t.Errorf("%v: advice %q", err, a)
	}
	p, err = Parse("x.yaml", []byte("warmup_per_variant: 4\nworkloads:\n  - cmd: {run: x}\n"))
	if err != nil || p.WarmupPerVariant != 4 || p.AutoWarmup {
		t.Fatalf("%v: %+v", err, p)
	}
}

func TestParseErrorsAreLocated(t *testing.T) {
	t.Parallel()
	tests := []struct{ text, want string }{
		{"variants:\n  - name: a\n    git: {repo: .}\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:2:5: variant \"a\": git needs repo and ref"},
		{"variants:\n  - name: a\n  - name: a\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:3:5: variant \"a\" defined twice"},
		{"variants:\n  - name: a\n    vars: {port: 1}\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:2:5: variant \"a\": vars.port: {{port}} is a variant's own template"},
		{"variants:\n  - name: a\n    vars: {n: 1}\nworkloads:\n  - cmd: {run: x}\n    matrix: {n: [1, 2]}\n", "vars.n: {{n}} is a matrix field of workload \"cmd\""},
		{"variants:\n  - name: a\n    vars: {x-y: 1}\nworkloads:\n  - cmd: {run: x}\n", "vars.x-y: a var's name is a template's"},
		{"variants:\n  - name: a\n    vars: {x: '{{port}}'}\nworkloads:\n  - cmd: {run: x}\n", "vars.x: a var's value is filled in as it is"},
		{"variants:\n  - name: a\n    vars: {x: 1}\n  - name: b\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:4:5: variant \"b\": vars [], variant \"a\": vars [x]: every variant gives the same vars"},
		{"variants:\n  - name: a\n    stop: {signal: BOOM}\nworkloads:\n  - cmd: {run: x}\n", "stop.signal"},
		{"variants:\n  - name: a\n    ready: {http: x}\nworkloads:\n  - cmd: {run: x}\n", "ready without start"},
		{"order: shuffled\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:1:8: order: \"shuffled\": want random or sequential"},
		{"hooks: {cleanup: 'rm -r {{port}}'}\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:1:18: hooks.cleanup: {{port}} has no value there"},
		{"hooks: {cleanup: 'rm {{n}}'}\nworkloads:\n  - cmd: {run: x}\n    matrix: {n: [1, 2]}\n", "hooks.cleanup: {{n}} has no value there"},
		{"workloads:\n  - cmd: {run: x}\n    fs: {bs: 4k}\n", "both cmd and fs"},
		{"workloads:\n  - cmd: {run: x}\n    matrix: {n: []}\n", "p.yaml:3:17: matrix.n: want a non-empty list"},
		{"hooks: {before_all: x}\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:1:9: unknown key \"before_all\" in hooks; known: before_run, after_run, before_round, after_round"},
		{"rounds: {min: 6}\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:1:9: rounds: give both min and max"},
		{"rounds: {min: 20, max: 10}\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:1:9: rounds: max 10 is below min 20"},
		{"rounds: {min: 2, max: 10}\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:1:15: rounds.min \"2\""},
		{"rounds: {min: 6, most: 10}\nworkloads:\n  - cmd: {run: x}\n", "unknown key \"most\" in rounds; known: min, max"},
		{"warmup_per_variant: lots\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:1:21: warmup_per_variant \"lots\""},
		{"workloads:\n  - cmd: {run: x}\n    scale: {n: [10, 100, many]}\n", "p.yaml:3:26: scale.n \"many\": want a number above 0"},
		{"workloads:\n  - cmd: {run: x}\n    scale: {n: [10, 1000, 100]}\n", "p.yaml:3:27: scale.n: 100 after 1000; list the scales in ascending order"},
		{"workloads:\n  - cmd: {run: x}\n    scale: {n: [10, 100]}\n", "p.yaml:3:12: scale.n: 2 scales; a fit of start-up cost, rate and exponent needs 3 or more"},
		{"workloads:\n  - cmd: {run: x}\n    scale: {n: [1, 10, 100], m: [1, 2, 3]}\n", "p.yaml:3:12: scale: want one field"},
		{"workloads:\n  - cmd: {run: x}\n    matrix: {n: [1]}\n    scale: {n: [1, 10, 100]}\n", "p.yaml:4:13: scale.n: also a matrix field"},
		{"extrapolate: [1e9, lots]\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:1:20: extrapolate \"lots\""},
		{"extrapolate: {at: [1e9], caps: {max_rss_bytes: big}}\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:1:48: extrapolate.caps.max_rss_bytes \"big\": want a positive size"},
		{"extrapolate: {caps: {wall_s: 5}}\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:1:14: extrapolate: give at:"},
		{"workloads:\n  - cmd: {run: x, metrics: [{name: a_s, regex: '(+'}]}\n", "p.yaml:2:48: metrics.regex \"(+\": error parsing regexp"},
		{"workloads:\n  - cmd: {run: x, metrics: [{name: a_s, regex: '(a)(b)'}]}\n", "p.yaml:2:48: metrics.regex \"(a)(b)\": 2 groups"},
		{"workloads:\n  - cmd: {run: x, metrics: [{name: a_s, json: 'msg=x'}]}\n", "p.yaml:2:29: metric a_s: json needs field"},
		{"workloads:\n  - cmd: {run: x, metrics: [{name: a_s}]}\n", "p.yaml:2:29: metric a_s: give one of regex or json"},
		{"workloads:\n  - cmd: {run: x, metrics: [{name: A-s, regex: x}]}\n", "p.yaml:2:36: metrics.name \"A-s\": want lower-case"},
		{"workloads:\n  - cmd: {run: x, metrics: [{regex: x}]}\n", "p.yaml:2:29: a metric without a name"},
		{"workloads:\n  - cmd: {run: x, metrics: [{name: a, regex: x, better: up}]}\n", "p.yaml:2:57: metrics.better \"up\": want lower"},
		{"workloads:\n  - cmd: {run: x, metrics: [{name: a, regex: x}, {name: a, regex: y}]}\n", "p.yaml:2:50: metric a defined twice"},
		{"workloads:\n  - cmd: {run: x, metrics: [{name: a, regex: x, unit: sec}]}\n", "p.yaml:2:55: metrics.unit \"sec\": want what the value (after scale) counts: a duration (ns, us, ms, s), bytes (B)"},
		{"hooks: {after_round: 'echo {{port}}'}\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:1:22: hooks.after_round: {{port}} has no value in a round hook"},
		{"workloads:\n  - fs: {bs: 4k}\n    curve: [10, 0]\n", "p.yaml:3:17: curve: \"0\": want a load in percent of the flat-out rate, above 0 and at most 100"},
		{"workloads:\n  - fs: {bs: 4k}\n    curve: [10, 150]\n", "p.yaml:3:17: curve: \"150\""},
		{"workloads:\n  - fs: {bs: 4k}\n    curve: [50, 10]\n", "p.yaml:3:17: curve: 10 after 50; list the loads in ascending order"},
		{"workloads:\n  - fs: {bs: 4k}\n    curve: []\n", "p.yaml:3:12: curve: an empty list"},
		{"workloads:\n  - fs: {bs: 4k}\n    curve: 50\n", "p.yaml:3:12: curve"},
		{"workloads:\n  - fs: {bs: 4k}\n    matrix: {load: [1, 2]}\n    curve: [50]\n", "p.yaml:3:14: matrix.load: a name a curve keeps for its loads"},
		{"workloads:\n  - fs: {bs: 4k}\n    slo: {metric: read.response_p99, below: 20ms}\n", "p.yaml:3:19: slo.metric \"read.response_p99\": no metric of that name; did you mean read.response_p99_ns?"},
		{"workloads:\n  - fs: {bs: 4k}\n    slo: {metric: ops_per_s, below: 20}\n", "p.yaml:3:19: slo.metric ops_per_s: an objective keeps a metric below a bound, and lower ops_per_s is not better"},
		{"workloads:\n  - fs: {bs: 4k}\n    slo: {metric: read.response_p99_ns, below: soon}\n", "p.yaml:3:48: slo.below \"soon\": read.response_p99_ns is a time; want a duration above 0 such as 20ms"},
		{"workloads:\n  - fs: {bs: 4k}\n    slo: {metric: read.response_p99_ns}\n", "p.yaml:3:10: slo: give metric and below"},
		{"workloads:\n  - fs: {bs: 4k}\n    slo: {metric: read.response_p99_ns, below: 2ms, precision: 90%}\n", "slo.precision \"90%\": want the bracket's width in percent, 0.1 to 50"},
		{"workloads:\n  - fs: {bs: 4k}\n    slo: {metric: read.response_p99_ns, under: 2ms}\n", "unknown key \"under\" in slo; known: metric, below, precision"},
		{"precondition: maybe\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:1:15: precondition \"maybe\": want true (SNIA's rule"},
		{"precondition: {rounds: 4, window: 5}\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:1:15: precondition: a window of 5 rounds in at most 4"},
		{"precondition: {range: 0}\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:1:23: precondition: \"0\": want a percentage of the rounds' mean"},
		{"order: sequential\nprecondition: true\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:2:15: precondition: steadiness is judged round by round"},
	}
	for _, tc := range tests {
		_, err := Parse("p.yaml", []byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.text, err, tc.want)
		}
	}
}

// The plan shown in the README parses.
func TestReadmePlanParses(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../docs/experiments.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("no yaml block in docs/experiments.md")
	}
	p, err := Parse("docs/experiments.md", m[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Variants) != 2 || len(p.Workloads) != 2 || p.Baseline != "main" || p.Variants[1].Env["BATCH_WRITE_ENABLED"] != "false" {
		t.Fatalf("%+v", p)
	}
}

// Every YAML syntax error names file:line:column where the fault is.
func TestSyntaxErrorsHavePositions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ text, want string }{
		{"name: x\nrounds: [1\n", "p.yaml:2:9: "},
		{"a: 1\nb: {c\n", "p.yaml:2:"},
		{"\xff\xfe", "p.yaml:1:1: invalid UTF-8"},
		{"name: x\nrounds: \xff\n", "p.yaml:2:9: invalid UTF-8"},
		{"a: 'x\n", "p.yaml:1:4: "},
		{"", "p.yaml:1:1: empty plan"},
		{"a: b: c\n", "p.yaml:1:4: "},
		{"a:\n\t- b\n", "p.yaml:2:1: "},
		{"name: x\nworkloads:\n  - cmd: {run: 'true'\n  - fs: {}\n", "p.yaml:4:"},
		{"a: &a {b: *a}\n", "p.yaml:1:"},
	} {
		_, err := Parse("p.yaml", []byte(tc.text))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v; want %q...", tc.text, err, tc.want)
		}
	}
}

// Anchors, aliases and merge keys are standard YAML: a server variant
// written once and merged into others.
func TestAnchorsAndMergeKeys(t *testing.T) {
	t.Parallel()
	p, err := Parse("p.yaml", []byte(`
x-server: &server
  build: make
  start: ./server --port {{port}}
  ready: {tcp: "127.0.0.1:{{port}}"}
variants:
  - name: main
    <<: *server
  - name: batch-off
    <<: *server
    env: {BATCH: "off"}
    build: make fast
workloads:
  - cmd: {run: 'true'}
`))
	if err == nil {
		t.Fatal("an unknown top-level key (x-server) was accepted")
	}
	p, err = Parse("p.yaml", []byte(`
variants:
  - &main
    name: main
    build: make
    start: ./server --port {{port}}
    ready: {tcp: "127.0.0.1:{{port}}"}
  - <<: *main
    name: batch-off
    env: {BATCH: "off"}
  - <<: [{name: other, build: make other}, *main]
workloads:
  - &w
    name: small
    cmd: {run: 'echo {{n}}'}
    matrix: {n: &ns [1, 2]}
  - <<: *w
    name: large
    matrix: {n: *ns}
`))
	if err != nil {
		t.Fatal(err)
	}
	v := p.Variants
	if len(v) != 3 || v[1].Name != "batch-off" || v[1].Build != "make" || v[1].Start != "./server --port {{port}}" ||
		v[1].Ready == nil || v[1].Env["BATCH"] != "off" || v[2].Name != "other" || v[2].Build != "make other" || v[2].Start == "" {
		t.Fatalf("variants: %+v", v)
	}
	if len(p.Workloads) != 2 || p.Workloads[1].Name != "large" || p.Workloads[1].Fields["run"].Text != "echo {{n}}" ||
		len(p.Workloads[1].Matrix[0].Values) != 2 {
		t.Fatalf("workloads: %+v", p.Workloads)
	}
	// A billion laughs is refused, not expanded.
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 'b'; i <= 'j'; i++ {
		bomb += fmt.Sprintf("%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	if _, err := Parse("p.yaml", []byte(bomb)); err == nil || !strings.Contains(err.Error(), "aliases expand the plan past") {
		t.Fatalf("billion laughs: %v", err)
	}
}

// FuzzParse: whatever the text, Parse does not panic, and an error is one
// line that starts with file:line:column.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"name: x\nrounds: 3\nworkloads:\n  - cmd: {run: 'true', items: 10}\n    matrix: {n: [1, 2]}\n",
		"variants:\n  - name: a\n    git: {repo: ., ref: main}\n    ready: {http: 'http://x', timeout: 5s}\nworkloads:\n  - fs: {bs: 4k}\n",
		"rounds: [1\n", "a: &a {b: *a}\n", "threshold: 2%\ncooldown: 1s\nseed: 7\norder: sequential\n", "- <<: *x\n",
		"hooks: {before_run: x}\nworkloads: [{s3: {mix: get}}]\n",
	} {
		f.Add([]byte(seed))
	}
	at := regexp.MustCompile(`^p\.yaml:\d+:\d+: `)
	f.Fuzz(func(t *testing.T, text []byte) {
		_, err := Parse("p.yaml", text)
		if err != nil && (!at.MatchString(err.Error()) || strings.Contains(err.Error(), "\n")) {
			t.Fatalf("%q: error without a position, or on several lines: %q", text, err)
		}
	})
}

// The scale example parses as the README describes it.
func TestScaleExampleParses(t *testing.T) {
	t.Parallel()
	p, err := Load("../../examples/scale.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w := p.Workloads[0]
	if w.Scale != "lines" || len(w.Matrix[0].Values) != 6 || len(w.Metrics) != 1 || w.Metrics[0].Name != "sort_s" || len(p.Extrapolate.At) != 2 || w.ScaleAdvice() != "" {
		t.Fatalf("%+v", p)
	}
}

// A plan of 100,000 nested brackets (200 KB) is refused before the YAML
// parser sees it — it took 15 GiB there — naming where it passed the
// cap, in bounded memory; so is one past the size cap, and brackets in
// quotes and comments do not count.
func TestNestingAndSizeCaps(t *testing.T) {
	bomb := "workloads: " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Parse("bomb.yaml", []byte(bomb))
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "bomb.yaml:1:76: brackets nested deeper than 64 levels") {
		t.Fatalf("%v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 100<<20 {
		t.Errorf("refusing the bomb allocated %d MiB", alloc>>20)
	}
	big := "# " + strings.Repeat("x", MaxPlanBytes) + "\nworkloads: []\n"
	if _, err := Parse("big.yaml", []byte(big)); err == nil || !strings.Contains(err.Error(), "a plan may hold at most") {
		t.Errorf("a plan past the size cap: %v", err)
	}
	quoted := "# [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n" +
		"workloads:\n  - cmd: {run: \"echo '" + strings.Repeat("[", 100) + "'\"}\n"
	if err := checkCaps("quoted.yaml", []byte(quoted)); err != nil {
		t.Errorf("brackets in quotes and comments counted: %v", err)
	}
	if err := checkCaps("apostrophe.yaml", []byte("note: it's\nx: "+strings.Repeat("[", 65)+"\n")); err == nil {
		t.Error("an apostrophe in a word hid the brackets after it")
	}
}

// A run at a search's load counts unless it missed the objective while
// iolab's own delay was past its share of the service time: then the
// client, not the target, missed it. A client short of CPU whose own delay
// was a small share of what it measured still measured the target.
func TestSLOOutcome(t *testing.T) {
	t.Parallel()
	o := SLO{Metric: "get.response_p99_ns", Below: 20e6}
	for _, c := range []struct {
		name          string
		m             map[string]float64
		ratio         float64
		found, counts bool
	}{
		{"held", map[string]float64{"get.response_p99_ns": 10e6}, 0.5, true, true},
		{"failed", map[string]float64{"get.response_p99_ns": 30e6, "gen_delay_pct": 2}, 1.5, true, true},
		{"failed by the client", map[string]float64{"get.response_p99_ns": 30e6, "gen_delay_pct": 40}, 1.5, true, false},
		{"held despite the client", map[string]float64{"get.response_p99_ns": 10e6, "gen_delay_pct": 40}, 0.5, true, true},
		{"not measured", map[string]float64{"ops_per_s": 1}, 0, false, false},
		// Ready on 1.5 of 2 CPUs for 2 s, two thirds of it waiting, its
		// own delay 2% of what it measured: the target missed.
		{"failed beside other work", map[string]float64{"get.response_p99_ns": 30e6, "gen_delay_pct": 2, "cpu_s": 1, "gen_cpu_wait_s": 2, "gen_cpu_wait_pct": 66.7}, 1.5, true, true},
	} {
		ratio, found, counts := o.Outcome(c.m)
		if ratio != c.ratio || found != c.found || counts != c.counts {
			t.Errorf("%s: %v %v %v, want %v %v %v", c.name, ratio, found, counts, c.ratio, c.found, c.counts)
		}
	}
}

// A metric read from a command's output has the unit it is given, else
// the one its name's ending says as iolab's own metrics are named, else
// none: the caveats that hold only for a duration read it.
func TestCmdMetricUnits(t *testing.T) {
	t.Parallel()
	p, err := Parse("p.yaml", []byte("workloads:\n  - cmd: {run: x, metrics: ["+
		"{name: phase, regex: x, unit: ms}, {name: index_bytes, regex: x}, {name: rows_per_s, regex: x}, {name: load_s, regex: x},"+
		"{name: merged, regex: x}, {name: written, regex: x, unit: pages/s}, {name: hits_count, regex: x}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"phase": "ms", "index_bytes": "B", "rows_per_s": "/s", "load_s": "s", "merged": "", "written": "pages/s", "hits_count": "count"}
	for _, m := range p.Workloads[0].Metrics {
		if m.Unit != want[m.Name] {
			t.Errorf("%s: unit %q, want %q", m.Name, m.Unit, want[m.Name])
		}
	}
	if !IsDuration("ms") || IsDuration("B") || IsDuration("") {
		t.Error("IsDuration")
	}
}
