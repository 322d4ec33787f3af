package fs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/metrics"
)

// jobProcesses lists the job processes this process started that are
// alive now, with their session IDs.
func jobProcesses(t *testing.T) map[int]int {
	t.Helper()
	me := strconv.Itoa(os.Getpid())
	found := map[int]int{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session ...
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 4 || fields[1] != me {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if !bytes.Contains(env, []byte(jobEnv+"=1\x00")) {
			continue
		}
		sid, _ := strconv.Atoi(fields[3])
		found[pid] = sid
	}
	return found
}

// Each job runs as a process of its own, the leader of a session of its
// own, as fio's jobs are; --thread runs none. What they measured merges
// exactly: the jobs' budgets, operation for operation, with a latency for
// each. Not parallel: the job processes of other tests are this binary's
// children too.
func TestJobsRunAsProcessesInSessionsOfTheirOwn(t *testing.T) {
	for _, thread := range []bool{false, true} {
		o := DefaultOptions()
		o.Directory, o.Size, o.NumJobs, o.RW, o.Engine = t.TempDir(), 1<<20, 3, RandRead, EnginePsync
		o.Runtime, o.Thread = 1500*time.Millisecond, thread
		w := prepared(t, o)
		// Every job process seen while the run goes: looked for all along
		// (not at its progress calls, which a loaded machine may make
		// before the last job's exec), each lives from its exec to its
		// result, which the run waits for.
		seen := map[int]int{}
		stop, looked := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(looked)
			for {
				maps.Copy(seen, jobProcesses(t))
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
		res, err := w.Run(context.Background(), nil)
		close(stop)
		<-looked
		if err != nil {
			t.Fatal(err)
		}
		mySid, _ := unix.Getsid(0)
		if thread {
			if len(seen) != 0 {
				t.Errorf("--thread: job processes %v ran", seen)
			}
			if w.Params()["thread"] != "1" {
				t.Errorf("--thread is not in the cell's parameters: %v", w.Params())
			}
			continue
		}
		if len(seen) != 3 {
			t.Fatalf("%d job processes seen during the run (%v), want 3", len(seen), seen)
		}
		for pid, sid := range seen {
			if sid != pid || sid == mySid {
				t.Errorf("job process %d is in session %d (this test's: %d), want a session of its own", pid, sid, mySid)
			}
		}
		if n := res.ByOp[metrics.Read].Ops; n == 0 || res.ByOp[metrics.Read].Lat.TotalCount() != n || res.ByOp[metrics.Read].Bytes != n*4096 {
			t.Errorf("merged: %d reads, %d latencies, %d bytes", n, res.ByOp[metrics.Read].Lat.TotalCount(), res.ByOp[metrics.Read].Bytes)
		}
		var secs int64
		for _, s := range res.Series {
			secs += s.Ops
		}
		if secs != res.ByOp[metrics.Read].Ops || res.CPUUserS+res.CPUSysS <= 0 || res.Duration < o.Runtime {
			t.Errorf("seconds add to %d of %d ops; CPU %v+%v s; duration %v", secs, res.ByOp[metrics.Read].Ops, res.CPUUserS, res.CPUSysS, res.Duration)
		}
	}
}

// A job process's budget is its own, and a job's latency log lines are
// its operations: three jobs of a fixed size move exactly three sizes,
// each operation one line of the log they share.
func TestJobProcessesKeepBudgetsAndTheLog(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.Directory, o.Size, o.NumJobs, o.RW, o.Engine, o.IODepth = t.TempDir(), 512<<10, 3, RandWrite, EngineIOUring, 4
	logPath := filepath.Join(t.TempDir(), "lat.csv")
	log, err := metrics.CreateLatencyLog(logPath, false)
	if err != nil {
		t.Fatal(err)
	}
	w := prepared(t, o)
	res, err := w.Run(metrics.WithLatencyLog(context.Background(), log, 7), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	if got := res.ByOp[metrics.Write].Bytes; got != 3*512<<10 {
		t.Errorf("%d bytes written, want 3 jobs x 512 KiB", got)
	}
	text, _ := os.ReadFile(logPath)
	lines := strings.Split(strings.TrimSpace(string(text)), "\n")
	if lines[0]+"\n" != metrics.LatencyLogHeader || int64(len(lines)-1) != res.ByOp[metrics.Write].Ops {
		t.Errorf("the log has %d lines after %q for %d writes", len(lines)-1, lines[0], res.ByOp[metrics.Write].Ops)
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "7,write,") || !strings.HasSuffix(l, ",4096") {
			t.Fatalf("line %q: want run 7's write of 4096 bytes", l)
		}
	}
}

// Interrupted, every job process ends its run as a run ends when
// interrupted: what it measured comes back, with the interruption.
func TestJobProcessesInterrupted(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.Size, o.NumJobs, o.Engine, o.RW, o.Runtime = 1<<20, 2, EngineNull, RandRead, time.Minute
	w := prepared(t, o)
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	start := time.Now()
	res, err := w.Run(ctx, func(ops, _ int64) {
		if ops > 0 {
			once.Do(cancel)
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v, want it said", err)
	}
	if res == nil || res.ByOp[metrics.Read].Ops == 0 || time.Since(start) > 30*time.Second {
		t.Fatalf("interrupted after %v: result %v, want what was measured, at once", time.Since(start), res)
	}
}

// A job process that fails says why, as the job would in this process:
// a verify error stays one, whatever process found it.
func TestJobErrorsCrossAsWhatTheyAre(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ve := &VerifyError{Kind: "md5", Path: "/x", Offset: 4096, BlockSize: 4096, Reason: "checksum mismatch", FirstBad: 4100, Got: 1, Want: 2, Differ: 1}
	var got *VerifyError
	if err := decodeJobError(ctx, encodeJobError(ctx, ve)); !errors.As(err, &got) || *got != *ve || err.Error() != ve.Error() {
		t.Errorf("a verify error came back as %v", err)
	}
	cancel()
	if err := decodeJobError(ctx, encodeJobError(ctx, ctx.Err())); !errors.Is(err, context.Canceled) {
		t.Errorf("an interruption came back as %v", err)
	}
	if err := decodeJobError(ctx, "progress 1 2"); err != nil {
		t.Errorf("a line that is no error: %v", err)
	}
}

// The jobs' seconds reach the run's sink as the run goes, added up, each
// second once: those handed over and those the result keeps are every
// operation, and no second is in both.
func TestJobProcessesHandOverTheirSeconds(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.Size, o.NumJobs, o.Engine, o.RW, o.Runtime = 1<<20, 2, EngineNull, RandRead, 3500*time.Millisecond
	o.RateIOPS = [2]int64{2000, 0}
	w := prepared(t, o)
	var mu sync.Mutex
	var handed []metrics.Second
	ctx := metrics.WithSecondSink(context.Background(), func(secs []metrics.Second) {
		mu.Lock()
		defer mu.Unlock()
		handed = append(handed, secs...)
	}, 500*time.Millisecond)
	res, err := w.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(handed) < 2 {
		t.Fatalf("%d seconds handed over during a 3.5 s run, want its first ones", len(handed))
	}
	seen := map[int64]bool{}
	var ops int64
	for _, s := range append(slices.Clone(handed), res.Series...) {
		if seen[s.T] {
			t.Errorf("second %d twice", s.T)
		}
		seen[s.T] = true
		ops += s.Ops
	}
	if want := res.ByOp[metrics.Read].Ops; ops != want {
		t.Errorf("the seconds hold %d ops, the run %d", ops, want)
	}
	if handed[0].T != 0 {
		t.Errorf("the first second handed over: %+v, want second 0", handed[0])
	}
}

// The load's second goes on once every job has handed its own over, the
// jobs' operations added up, the worst job's percentiles; what comes
// after stays for the result.
func TestSecondsMerge(t *testing.T) {
	var got []metrics.Second
	m := &secondsMerge{sink: func(s []metrics.Second) { got = append(got, s...) }, sums: map[int64]*metrics.Second{}, upTo: make([]int64, 2)}
	m.add(0, []metrics.Second{{T: 0, Ops: 10, P99Ns: 5}, {T: 1, Ops: 11, P99Ns: 1}})
	if len(got) != 0 {
		t.Fatalf("handed on %v before job 1 handed anything", got)
	}
	m.add(1, []metrics.Second{{T: 0, Ops: 20, P99Ns: 3}})
	if len(got) != 1 || got[0] != (metrics.Second{T: 0, Ops: 30, P99Ns: 5}) {
		t.Fatalf("handed on %v, want second 0 of both: 30 ops, p99 5", got)
	}
	rest := m.rest([]*metrics.Result{{Series: []metrics.Second{{T: 2, Ops: 1}}}, {Series: []metrics.Second{{T: 1, Ops: 4, P99Ns: 9}}}})
	if len(rest) != 2 || rest[0] != (metrics.Second{T: 1, Ops: 15, P99Ns: 9}) || rest[1] != (metrics.Second{T: 2, Ops: 1}) {
		t.Errorf("the rest %v, want seconds 1 (15 ops, p99 9) and 2", rest)
	}
}

// A job process is told its options in JSON: every exported field of
// Options crosses unchanged (a field of a type JSON cannot carry would
// silently run the job with its zero value). Each is set to a value not
// its zero by reflection, so a field added later is covered too.
func TestJobSpecCarriesTheOptions(t *testing.T) {
	var o Options
	fill(t, reflect.ValueOf(&o).Elem())
	b, err := json.Marshal(jobSpec{Options: o})
	if err != nil {
		t.Fatal(err)
	}
	var got jobSpec
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Options, o) {
		t.Errorf("sent %+v\ngot  %+v", o, got.Options)
	}
}

// fill sets every exported field of v, recursively, to a value not its
// zero.
func fill(t *testing.T, v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		if !v.Type().Field(i).IsExported() {
			continue
		}
		if f.Type() == reflect.TypeOf(Distribution{}) { // carried as fio writes it
			d, err := ParseDistribution("zoned_abs:60/20g:40/100g")
			if err != nil {
				t.Fatal(err)
			}
			f.Set(reflect.ValueOf(d))
			continue
		}
		switch f.Kind() {
		case reflect.Struct:
			fill(t, f)
		case reflect.String:
			f.SetString("x" + v.Type().Field(i).Name)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(uint64(i%2 + 1))
		case reflect.Float32, reflect.Float64:
			f.SetFloat(float64(i) + 0.5)
		case reflect.Array:
			for k := range f.Len() {
				if f.Index(k).Kind() == reflect.Struct {
					fill(t, f.Index(k))
					continue
				}
				f.Index(k).SetInt(int64(k + 7))
			}
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 2, 2))
			for k := range f.Len() {
				if e := f.Index(k); e.CanUint() {
					e.SetUint(uint64(k + 3))
				} else {
					e.SetInt(int64(k + 3))
				}
			}
		default:
			t.Fatalf("field %s of %s: kind %s the test cannot fill; teach it, and check JSON carries it", v.Type().Field(i).Name, v.Type(), f.Kind())
		}
	}
}

// Past maxJobProcesses, the jobs are shared out among that many
// processes, each job still its own: five jobs of 64 blocks, capped at 80
// a second so the run lasts long enough to be seen, run in two processes
// and move five jobs' bytes. Not parallel: it lowers the bound for its run.
func TestJobsSharedOutPastTheBound(t *testing.T) {
	defer func(n int) { maxJobProcesses = n }(maxJobProcesses)
	maxJobProcesses = 2
	o := DefaultOptions()
	o.Directory, o.Size, o.NumJobs, o.RW, o.Engine = t.TempDir(), 256<<10, 5, Write, EnginePsync
	o.RateIOPS = [2]int64{0, 80}
	w := prepared(t, o)
	most := 0
	res, err := w.Run(context.Background(), func(int64, int64) { most = max(most, len(jobProcesses(t))) })
	if err != nil {
		t.Fatal(err)
	}
	if got := res.ByOp[metrics.Write].Bytes; got != 5*256<<10 {
		t.Errorf("%d bytes written, want 5 jobs x 256 KiB", got)
	}
	if most != 2 {
		t.Errorf("%d job processes at once during the run, want 2", most)
	}
}

// A steady-state run keeps its jobs as threads, and says so unless
// --thread asked for them.
func TestSteadyStateSaysItRanThreads(t *testing.T) {
	t.Parallel()
	for _, thread := range []bool{false, true} {
		o := DefaultOptions()
		o.Size, o.Engine, o.RW, o.Runtime, o.Thread = 1<<20, EngineNull, RandRead, 3*time.Second, thread
		o.Steady = driver.SteadyState{Criterion: "iops", Limit: 50, Percent: true, Window: 2 * time.Second}
		res, err := run(t, o)
		if err != nil {
			t.Fatal(err)
		}
		if said := slices.Contains(noteCodes(res), "jobs-as-threads"); said == thread {
			t.Errorf("--thread %v: jobs-as-threads said %v; want it said only when threads were not asked for", thread, said)
		}
	}
}
