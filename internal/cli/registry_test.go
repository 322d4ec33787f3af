package cli

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/workload"
)

// tick is a workload kind defined here and nowhere else: registered in
// this file, it must appear in plans, flags, help, reports, gates and the
// segment rules with no other file edited. Each run does --ticks
// operations of --every each, as reads of 4 KiB.
func init() {
	workload.Register(workload.Kind{
		Name:       "tick",
		Short:      "ticks of a test clock",
		NewOptions: func() workload.Options { return &tickOptions{} },
		Primary:    "ops_per_s",
		Metrics:    []string{"ops_per_s", "read.lat_p99_ns"},
	})
}

type tickOptions struct {
	ticks int
	every time.Duration
}

func (o *tickOptions) AddFlags(f *pflag.FlagSet) {
	f.IntVar(&o.ticks, "ticks", 10, "operations per run")
	f.DurationVar(&o.every, "every", time.Millisecond, "each operation's time")
}

func (o *tickOptions) Build(b workload.Build) (workload.Workload, string, error) {
	if o.ticks < 1 {
		return nil, "", errors.New("--ticks: want 1 or more")
	}
	return &tickWorkload{o: *o}, b.Dir, nil
}

type tickWorkload struct{ o tickOptions }

func (w *tickWorkload) Kind() string { return "tick" }
func (w *tickWorkload) Params() map[string]string {
	return map[string]string{"ticks": strings.Repeat("|", min(w.o.ticks, 3)), "every": w.o.every.String()}
}
func (w *tickWorkload) Prepare(context.Context) error { return nil }
func (w *tickWorkload) Close() error                  { return nil }

func (w *tickWorkload) Run(ctx context.Context, progress func(ops, bytes int64)) (*metrics.Result, error) {
	series := metrics.NewSeries()
	rec := series.NewRecorder()
	clock := metrics.NewClock()
	for range w.o.ticks {
		start := clock.Now()
		time.Sleep(w.o.every)
		end := clock.Now()
		rec.Record(metrics.Read, 4096, end, end-start)
	}
	rec.Close()
	return metrics.Merge([]*metrics.Recorder{rec}, series, clock.Start(), time.Duration(clock.Now())), ctx.Err()
}

func TestAKindRegisteredInATestIsEverywhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	// Help and the command line: a command of its own, its flags.
	help, _, err := iolab(t, context.Background(), "--help")
	if err != nil || !strings.Contains(help, "tick ") || !strings.Contains(help, "Ticks of a test clock") {
		t.Fatalf("help lacks the tick command (%v):\n%s", err, help)
	}
	out, _, err := iolab(t, context.Background(), "tick", "--ticks", "5", "--rounds", "2", "--warmup", "0", "--db", db, "--json")
	if err != nil || !strings.Contains(out, `"workload": "tick"`) {
		t.Fatalf("iolab tick: %v\n%s", err, out)
	}
	if _, _, err := iolab(t, context.Background(), "tick", "--ticks", "0", "--db", db); err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "--ticks") {
		t.Fatalf("iolab tick --ticks 0: %v", err)
	}
	// A plan: its keys, known and unknown; two variants compared on its
	// primary metric, which a gate judges.
	writeFiles(t, dir, map[string]string{
		"plan.yaml": `name: ticks
rounds: 3
warmup: 0
variants:
  - name: fast
  - name: slow
workloads:
  - name: t
    tick: {ticks: 20, every: "{{every}}"}
    matrix: {every: [1ms]}
`,
		"bad.yaml": "workloads:\n  - tick: {tocks: 3}\n",
	})
	r, err := runPlan(t, context.Background(), filepath.Join(dir, "plan.yaml"), "--db", db, "--json")
	if err != nil || len(r.Runs) != 6 {
		t.Fatalf("plan of ticks: %v %+v", err, r.Runs)
	}
	if c := verdictOf(r, "ops_per_s"); c.Cell != "t every=1ms" || c.Variant != "slow" {
		t.Fatalf("no comparison of the primary metric: %+v", r.Comparisons)
	}
	_, err = runPlan(t, context.Background(), filepath.Join(dir, "bad.yaml"), "--db", db)
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), `bad.yaml:2:12: unknown key "tocks" in tick workload "tick"; known: every, ticks`) {
		t.Fatalf("an unknown tick key: %v", err)
	}
	if _, _, err := iolab(t, context.Background(), "show", "--db", db, "--gate", "ops_per_s>1e12"); !errors.Is(err, analysis.ErrGate) {
		t.Fatalf("a gate on its primary metric did not fail: %v", err)
	}
	if _, _, err := iolab(t, context.Background(), "show", "--db", db, "--gate", "frames_fps>1"); err == nil || ExitCode(err) != 2 {
		t.Fatalf("a gate on a metric it does not measure: %v", err)
	}
	// Segments: it does not say it splits, so a load of it is refused.
	_, err = runPlan(t, context.Background(), filepath.Join(dir, "plan.yaml"), "--db", db, "--segment", "0/2", "--segment-group", "g")
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), `workload "t" is tick, which does not split its load`) {
		t.Fatalf("a plan of ticks in segments: %v", err)
	}
	if _, _, err := iolab(t, context.Background(), "tick", "--segment", "0/2", "--segment-group", "g", "--db", db); err == nil || !strings.Contains(err.Error(), "tick does not split its load") {
		t.Fatalf("iolab tick --segment: %v", err)
	}
}

func init() {
	kindFixtures["tick"] = func(*testing.T) kindFixture {
		return kindFixture{local: "ticks: 20, every: 5ms", args: []string{"--ticks", "20"}} // no server's target to measure
	}
}
