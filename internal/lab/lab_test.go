package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/envinfo"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/store"
)

// countingWorkload is a trivial workload for testing the schedule: each run
// records one operation, and the n-th run fails when failAt says so.
type countingWorkload struct {
	name   string
	runs   int
	failAt int // 1-based run that fails; 0 never
}

func (w *countingWorkload) Kind() string                  { return "test" }
func (w *countingWorkload) Params() map[string]string     { return map[string]string{"name": w.name} }
func (w *countingWorkload) Prepare(context.Context) error { return nil }
func (w *countingWorkload) Close() error                  { return nil }
func (w *countingWorkload) Run(_ context.Context, _ func(int64, int64)) (*metrics.Result, error) {
	w.runs++
	if w.runs == w.failAt {
		return nil, errors.New("target vanished")
	}
	res := &metrics.Result{Start: time.Now(), Duration: time.Second}
	h := metrics.NewHistogram()
	metrics.RecordLatency(h, 1000)
	res.ByOp[metrics.Read] = metrics.OpStats{Ops: 1, Bytes: 1, Lat: h}
	return res, nil
}

// A round that lasts past envFresh has its environment read anew after
// it; a read less than that old is stored again.
func TestEnvironmentReadAnewOnceStale(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	slept := false
	plan := Plan{Name: "t", Rounds: 2, Seed: 1, AfterRound: func(context.Context) error {
		if !slept {
			slept = true
			time.Sleep(envFresh + 50*time.Millisecond)
		}
		return nil
	}}
	r := &Runner{Store: st}
	id, err := r.Run(context.Background(), plan, []Cell{{Name: "a", Workload: &countingWorkload{name: "a"}, Target: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := st.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Env) != 4 {
		t.Fatalf("%d snapshots, want 4", len(d.Env))
	}
	if gap := d.Env[1].TakenAt.Sub(d.Env[0].TakenAt); gap < envFresh {
		t.Errorf("after the round that lasted %v the environment is the one read %v before it", envFresh+50*time.Millisecond, gap)
	}
	for i := 2; i < 4; i++ {
		if gap := d.Env[i].TakenAt.Sub(d.Env[i-1].TakenAt); gap != 0 && gap < envFresh-10*time.Millisecond {
			t.Errorf("snapshot %d (%s of round %d) read anew %v after the one before it", i, d.Env[i].Phase, d.Env[i].Round, gap)
		}
	}
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestRoundsRunEveryCellOnceInSeededRandomOrder(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	dir := t.TempDir()
	var cells []Cell
	for _, n := range []string{"a", "b", "c"} {
		cells = append(cells, Cell{Name: n, Workload: &countingWorkload{name: n}, Target: dir})
	}
	r := &Runner{Store: st}
	id, err := r.Run(context.Background(), Plan{Name: "t", Rounds: 6, Warmup: 1, Seed: 7}, cells)
	if err != nil {
		t.Fatal(err)
	}
	d, err := st.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Runs) != 21 || d.Experiment.Status != "done" {
		t.Fatalf("%d runs, status %s", len(d.Runs), d.Experiment.Status)
	}
	orders := map[string]bool{}
	for i := 0; i < 7; i++ {
		round := d.Runs[i*3 : i*3+3]
		seen, order := map[int64]bool{}, ""
		for slot, run := range round {
			if run.Warmup != (i == 0) || run.Slot != slot || run.Round != max(i-1, 0) {
				t.Fatalf("run %d: warmup %v round %d slot %d", i*3+slot, run.Warmup, run.Round, run.Slot)
			}
			seen[run.CellID] = true
			order += fmt.Sprint(run.CellID)
		}
		if len(seen) != 3 {
			t.Fatalf("round %d ran cells %s", i, order)
		}
		orders[order] = true
	}
	if len(orders) < 2 {
		t.Fatalf("every round ran in the same order: %v", orders)
	}
	if len(d.Env) != 14 {
		t.Fatalf("%d environment snapshots, want one before and one after each of 7 rounds", len(d.Env))
	}
	// A read of the environment stands for envFresh: each stored
	// snapshot is the one before it, or read at least that much later.
	for i := 1; i < len(d.Env); i++ {
		prev, cur := d.Env[i-1], d.Env[i]
		same := cur.TakenAt.Equal(prev.TakenAt) && string(cur.Snapshot) == string(prev.Snapshot)
		if !same && cur.TakenAt.Sub(prev.TakenAt) < envFresh-10*time.Millisecond {
			t.Errorf("snapshot %d (%s of round %d) read anew %v after the one before it", i, cur.Phase, cur.Round, cur.TakenAt.Sub(prev.TakenAt))
		}
	}

	// The same seed gives the same schedule.
	id2, err := r.Run(context.Background(), Plan{Name: "t", Rounds: 6, Warmup: 1, Seed: 7}, cells)
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := st.Load(context.Background(), id2)
	for i := range d.Runs {
		if d.Runs[i].CellID-d.Cells[0].ID != d2.Runs[i].CellID-d2.Cells[0].ID {
			t.Fatalf("seed 7 gave a different order at run %d", i)
		}
	}
}

func TestFailedRunIsStoredAndStopsTheExperiment(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	cells := []Cell{{Name: "a", Workload: &countingWorkload{name: "a", failAt: 2}, Target: t.TempDir()}}
	id, err := (&Runner{Store: st}).Run(context.Background(), Plan{Rounds: 3}, cells)
	if err == nil || !strings.Contains(err.Error(), "target vanished") {
		t.Fatalf("err %v", err)
	}
	d, _ := st.Load(context.Background(), id)
	if len(d.Runs) != 2 || d.Runs[0].Status != "ok" || d.Runs[1].Status != "failed" || d.Runs[1].Error != "target vanished" || d.Experiment.Status != "failed" {
		t.Fatalf("runs %+v status %s", d.Runs, d.Experiment.Status)
	}
}

// overloadedWorkload is a workload whose second run the target could not
// keep up with: operations still in flight at the end of the grace period
// were cut, each counted as an error, as driver.Run reports them.
type overloadedWorkload struct{ countingWorkload }

func (w *overloadedWorkload) Run(ctx context.Context, p func(int64, int64)) (*metrics.Result, error) {
	res, err := w.countingWorkload.Run(ctx, p)
	if w.runs == 2 {
		res.Errors, res.FirstError = 3, "cut"
		return res, fmt.Errorf("run stopped after 1s, its operations still in flight cut: %w", driver.ErrGraceExceeded)
	}
	return res, err
}

// In a cell whose failures are findings (an SLO search's loads), a run
// whose operations were cut at the grace period is what that load
// measured: stored as failed, handed to the cell as a failed run, and the
// experiment goes on; in any other cell it stops the experiment.
func TestOverloadCutAtTheGraceIsAFinding(t *testing.T) {
	t.Parallel()
	for _, findings := range []bool{true, false} {
		st := openStore(t)
		var seen []bool
		cells := []Cell{{Name: "a", Workload: &overloadedWorkload{countingWorkload{name: "a"}}, Target: t.TempDir(), FailuresAreFindings: findings,
			Ran: func(_ *metrics.Result, ok bool) error { seen = append(seen, ok); return nil }}}
		id, err := (&Runner{Store: st}).Run(context.Background(), Plan{Rounds: 3}, cells)
		d, _ := st.Load(context.Background(), id)
		if !findings {
			if err == nil || !strings.Contains(err.Error(), driver.ErrGraceExceeded.Error()) || len(d.Runs) != 2 {
				t.Errorf("not a finding: %v, %d runs", err, len(d.Runs))
			}
			continue
		}
		if err != nil || len(d.Runs) != 3 || d.Runs[1].Status != store.StatusFailed || d.Runs[1].Result.Errors != 3 || d.Experiment.Status != "done" {
			t.Fatalf("%v: %+v, %s", err, d.Runs, d.Experiment.Status)
		}
		if len(seen) != 3 || !seen[0] || seen[1] || !seen[2] {
			t.Errorf("the cell was told %v, want the cut run as failed between good ones", seen)
		}
	}
}

// lockedBuffer is a bytes.Buffer the progress line's own goroutine may
// write while the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestProgressLine(t *testing.T) {
	t.Parallel()
	var buf lockedBuffer
	p := &Progress{W: &buf, RunTime: 10 * time.Second}
	defer p.Close()
	update := p.Start("randread-4k", RunPosition{Round: 1, Rounds: 6, Done: 3, Total: 14, Variant: "main"})
	// Shown at once, however short the run: where the experiment is.
	if line := buf.String(); !strings.Contains(line, "run 4/14  round 2/6  main / randread-4k  running") {
		t.Errorf("a run's first line: %q", line)
	}
	update(50000, 50000*4096)
	line := buf.String()
	for _, want := range []string{"round 2/6", "randread-4k", "ops/s", "B/s", "ETA 1m"} {
		if !strings.Contains(line, want) {
			t.Errorf("progress line %q lacks %q", line, want)
		}
	}
	// Between runs the line stays, saying what happens.
	p.End()
	if !strings.Contains(buf.String(), "run 4/14 done") {
		t.Errorf("after a run: %q", buf.String())
	}
	p.Phase("cooling down 2s")
	if !strings.Contains(buf.String(), "cooling down 2s  0s") {
		t.Errorf("a phase: %q", buf.String())
	}
	// What else is said goes above it: the line is cleared first.
	fmt.Fprintln(p.Above(&buf), "iolab: the store went away")
	if !strings.HasSuffix(buf.String(), "\r\033[Kiolab: the store went away\n") {
		t.Errorf("a notice: %q", buf.String())
	}
	p.Phase("cooling down 2s")
	p.Close()
	if !strings.HasSuffix(buf.String(), "\r\033[K") {
		t.Errorf("Close did not clear the line: %q", buf.String())
	}
	var nilProgress *Progress // draws nothing, and takes every call
	nilProgress.Phase("x")
	nilProgress.Start("x", RunPosition{})
	nilProgress.End()
	nilProgress.Close()
}

// The line never wraps: every draw is cut below the terminal's width, on
// a terminal of 40 columns as of 200, and a build's output line with
// control characters stays one line.
func TestProgressFitsTheTerminal(t *testing.T) {
	t.Parallel()
	for _, width := range []int{20, 40, 80, 200} {
		var buf lockedBuffer
		p := &Progress{W: &buf, Width: func() int { return width }}
		p.Phase("building variant 2/3 a-rather-long-variant-name-from-a-branch")
		p.Detail("\x1b[1mcompiling\tgithub.com/some/long/package/path/that/goes/on/and/on\r")
		p.Phase("building variant 3/3 x")
		p.Detail("ok")
		update := p.Start(strings.Repeat("s3 put=1,get=9 1k-10m c64 ", 4), RunPosition{Rounds: 12, Total: 48, Variant: "feature/batch-write"})
		update(123456789, 1<<40)
		p.Close()
		for _, draw := range strings.Split(buf.String(), "\r\033[K") {
			if n := utf8.RuneCountInString(draw); n >= width || strings.ContainsAny(draw, "\n\t\x1b\r") {
				t.Errorf("width %d: a draw of %d columns or with a control character: %q", width, n, draw)
			}
		}
	}
}

// A long variant or cell name is shortened in its middle, so that the rate
// and the ETA after it show on a terminal of 60 and 80 columns (at 60 the
// round gives way); a phase's elapsed time shows too.
func TestProgressKeepsTheFiguresOfLongNames(t *testing.T) {
	t.Parallel()
	for _, width := range []int{60, 80} {
		var buf lockedBuffer
		p := &Progress{W: &buf, Width: func() int { return width }, RunTime: time.Minute}
		p.Phase("building variant 1/2 compiled-" + strings.Repeat("long-name-", 6) + "end")
		p.Detail("go: downloading github.com/some/long/module/path v1.2.3")
		update := p.Start("disk size=256m "+strings.Repeat("rw=randrw ", 3), RunPosition{Rounds: 6, Total: 12, Variant: "a-35-character-variant-name-xxxxxxx"})
		update(2000, 8<<20)
		p.Close()
		draws := strings.Split(buf.String(), "\r\033[K")
		var phase, run string
		for _, d := range draws {
			switch {
			case strings.HasPrefix(d, "building variant"):
				phase = d
			case strings.HasPrefix(d, "run 1/12"):
				run = d
			}
		}
		if !regexp.MustCompile(`^building variant 1/2 compil.*….*-end  0s$`).MatchString(phase) {
			t.Errorf("width %d: the phase %q: its name shortened in the middle, its time whole", width, phase)
		}
		if !regexp.MustCompile(`^run 1/12  (round 1/6  )?a-35-.*….*=randrw  [0-9.]+[kM]? ops/s  [0-9.]+ [KMG]iB/s  ETA [0-9]+m`).MatchString(run) || utf8.RuneCountInString(run) >= width {
			t.Errorf("width %d: the run %q: its rate and ETA shown, in fewer than %d columns", width, run, width)
		}
	}
}

// sleepyWorkload's runs last a while, for what is watched per second.
type sleepyWorkload struct{ countingWorkload }

func (w *sleepyWorkload) Run(ctx context.Context, p func(int64, int64)) (*metrics.Result, error) {
	time.Sleep(2200 * time.Millisecond)
	return w.countingWorkload.Run(ctx, p)
}

// Every run stores the machine's seconds as it goes, and its worst second
// of waiting for a CPU, memory and I/O.
func TestRunStoresTheMachinesSeconds(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	cells := []Cell{{Name: "s", Workload: &sleepyWorkload{countingWorkload{name: "s"}}, Target: t.TempDir()}}
	id, err := (&Runner{Store: st}).Run(context.Background(), Plan{Name: "t", Rounds: 1, Seed: 1}, cells)
	if err != nil {
		t.Fatal(err)
	}
	d, err := st.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	res := d.Runs[0].Result
	if !envinfo.ReadStall().OK { // a kernel without PSI: nothing to watch
		if len(res.EnvSeries) > 0 {
			t.Fatalf("no PSI, yet %+v", res.EnvSeries)
		}
		return
	}
	if len(res.EnvSeries) < 2 {
		t.Fatalf("a run of 2.2 s stored %d seconds of the machine", len(res.EnvSeries))
	}
	peak := 0.0
	for _, s := range res.EnvSeries {
		peak = max(peak, s.CPUStall)
	}
	if got, ok := res.Extra["env_cpu_stall_peak"]; !ok || got != peak {
		t.Fatalf("worst second %v (stored: %v)", peak, res.Extra)
	}
}

// preparedWorkload notes, when prepared, what its calibration had said.
type preparedWorkload struct {
	countingWorkload
	calibrated *float64
	saw        float64
}

func (w *preparedWorkload) Prepare(context.Context) error { w.saw = *w.calibrated; return nil }

// A calibration runs after the variants' own warm-up runs, which skip the
// cells it paces, and before any other run; each variant's is stored as
// a warm-up run of the calibration round, handed what it measured, and a
// cell it paces is prepared only then. One it refuses is a failed run.
func TestCalibrationRunsFirstAndPacesWhatItCalibrates(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	var cells []Cell
	rates := map[string]*float64{}
	var paced []*preparedWorkload
	for _, v := range []string{"a", "b"} {
		rates[v] = new(float64)
		rate := rates[v]
		p := &preparedWorkload{countingWorkload: countingWorkload{name: "paced"}, calibrated: rate}
		paced = append(paced, p)
		cells = append(cells,
			Cell{Name: "flat", Variant: v, Workload: &countingWorkload{name: "flat"}, Calibrate: func(res *metrics.Result) error {
				*rate = res.PerSecond(res.Ops())
				return nil
			}},
			Cell{Name: "paced", Variant: v, Workload: p, Calibrated: true},
			Cell{Name: "other", Variant: v, Workload: &countingWorkload{name: "other"}})
	}
	r := &Runner{Store: st}
	id, err := r.Run(context.Background(), Plan{Name: "t", Rounds: 2, Warmup: 1, VariantWarmup: 2, Seed: 3}, cells)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := st.Load(context.Background(), id)
	name := map[int64]string{}
	for _, c := range d.Cells {
		name[c.ID] = c.Variant + "/" + c.Name
	}
	var phases, calibrations []string
	for _, run := range d.Runs {
		phase := "rounds"
		switch {
		case store.IsCalibration(run.Round):
			phase = "calibration"
			if !run.Warmup || !strings.HasSuffix(name[run.CellID], "/flat") {
				t.Errorf("calibration run of %s, warm-up %v", name[run.CellID], run.Warmup)
			}
			calibrations = append(calibrations, fmt.Sprintf("%d %s", run.Round-store.CalibrationRound, strings.TrimSuffix(name[run.CellID], "/flat")))
		case run.Round < 0:
			phase = "variant warm-up"
			if strings.HasSuffix(name[run.CellID], "/paced") {
				t.Errorf("a variant warm-up run of %s, before its calibration", name[run.CellID])
			}
		}
		if len(phases) == 0 || phases[len(phases)-1] != phase {
			phases = append(phases, phase)
		}
	}
	if strings.Join(phases, ", ") != "variant warm-up, calibration, rounds" || len(d.Runs) != 4+2*store.CalibrationRuns+18 {
		t.Fatalf("phases %v over %d runs", phases, len(d.Runs))
	}
	// Each variant's calibration runs, interleaved: every variant's
	// first, then every variant's second ...
	for k := range store.CalibrationRuns {
		pair := calibrations[2*k : 2*k+2]
		slices.Sort(pair)
		if want := []string{fmt.Sprintf("%d a", k), fmt.Sprintf("%d b", k)}; !slices.Equal(pair, want) {
			t.Errorf("calibration runs in the order %v, want each variant's k-th together", calibrations)
		}
	}
	for i, p := range paced {
		if p.saw != 1 {
			t.Errorf("variant %d's paced cell was prepared with rate %v, want its calibration's 1/s", i, p.saw)
		}
	}

	// A calibration that cannot pace anything fails its run.
	cells[0].Calibrate = func(*metrics.Result) error { return errors.New("no rate") }
	_, err = r.Run(context.Background(), Plan{Name: "t", Rounds: 1, Seed: 3}, cells[:3])
	if err == nil || !strings.Contains(err.Error(), "calibration: no rate") {
		t.Fatalf("a refused calibration: %v", err)
	}
}

// mountingServer is an Around whose server makes the cell's target
// another filesystem while it runs, as a server that mounts an export
// there does: here the target becomes a link into /dev/shm (tmpfs).
type mountingServer struct{ target, into string }

func (m mountingServer) BeforeRun(context.Context) error {
	if err := os.RemoveAll(m.target); err != nil {
		return err
	}
	return os.Symlink(m.into, m.target)
}

func (m mountingServer) AfterRun(context.Context) error { return nil }
func (m mountingServer) Serving() bool                  { return true }

// The target is read once more when the variant's server is ready — the
// target as the runs saw it — where the round's snapshots, taken with no
// server up, read what lies under it (an audit's target warnings described
// the disk under an NBD export's mount).
func TestTargetReadOnceTheServerIsReady(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	target, into := filepath.Join(t.TempDir(), "mnt"), filepath.Join("/dev/shm", fmt.Sprintf("iolab-ready-%d", time.Now().UnixNano()))
	if err := os.MkdirAll(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(into, 0o755); err != nil {
		t.Skipf("no /dev/shm to link to: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(into) })
	r := &Runner{Store: st}
	id, err := r.Run(context.Background(), Plan{Name: "t", Rounds: 2, Seed: 1},
		[]Cell{{Name: "a", Workload: &countingWorkload{name: "a"}, Target: target, Around: mountingServer{target, into}}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := st.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	mounts := map[string][]string{}
	for _, e := range d.Env {
		var s envinfo.Snapshot
		if err := json.Unmarshal(e.Snapshot, &s); err != nil || s.Target == nil {
			t.Fatalf("snapshot %s: %v", e.Phase, err)
		}
		mounts[e.Phase] = append(mounts[e.Phase], s.Target.MountPoint)
	}
	if ready := mounts[store.PhaseReady]; len(ready) != 1 || ready[0] != "/dev/shm" || mounts["before"][0] == "/dev/shm" {
		t.Errorf("mount points by phase: %v; want one read when ready, on /dev/shm, and the round's before it not", mounts)
	}
}
