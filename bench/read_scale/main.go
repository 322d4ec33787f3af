// Command read_scale measures what reading a large store costs: show and
// report of one load of 100 segments x 20 runs, and history and report
// across 1,000 experiments — the wall time and peak memory (RSS) of the
// iolab binary doing each, against the targets the README states. The
// store is a real PostgreSQL (Debian's, started as the tests start it) or,
// with -sqlite, a SQLite file; its runs carry what real ones do: two
// operation kinds' HDR histograms and time to first byte, a series of a
// second each, the machine's seconds, derived metrics, and environment
// snapshots before and after each round.
//
//	go run ./bench/read_scale [-segments 100] [-runs 20] [-experiments 1000] [-sqlite]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/iolab/iolab/bench/internal/harness"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/pgtest"
	"github.com/iolab/iolab/internal/store"
)

func main() { harness.Main(bench) }

func bench() {
	segments := flag.Int("segments", 100, "segments of the one load")
	runs := flag.Int("runs", 20, "runs per segment")
	experiments := flag.Int("experiments", 1000, "experiments for history")
	sqlite := flag.Bool("sqlite", false, "a SQLite file instead of PostgreSQL")
	keep := flag.String("keep", "", "with -sqlite, fill this SQLite file and keep it (to profile a command on it)")
	flag.Parse()
	ctx := context.Background()
	tmp := harness.WorkDir("", "read-scale-")
	url := filepath.Join(tmp, "x.db")
	if *keep != "" {
		url, *sqlite = *keep, true
	}
	if !*sqlite {
		var err error
		if url, err = pgtest.NewDatabase(); err != nil {
			harness.Fatal(err)
		}
	}
	bin := filepath.Join(tmp, "iolab")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/iolab").CombinedOutput(); err != nil {
		harness.Fatalf("build iolab (run from the repository's root): %v\n%s", err, out)
	}
	st, err := store.Open(ctx, url)
	if err != nil {
		harness.Fatal(err)
	}
	t0 := time.Now()
	fill(ctx, st, *segments, *runs, *experiments)
	st.Close()
	fmt.Printf("store: %s; filled in %v: one load of %d segments x %d runs, %d experiments of 10 runs\n\n",
		map[bool]string{true: "SQLite", false: "PostgreSQL"}[*sqlite], time.Since(t0).Round(time.Second), *segments, *runs, *experiments)
	fmt.Println("| command | wall time | peak RSS | target |")
	fmt.Println("|---|---|---|---|")
	for _, c := range []struct {
		args   []string
		target string
	}{
		{[]string{"show", "seg-000", "--json"}, "10 s, 300 MB"},
		{[]string{"report", "seg-000", "-o", filepath.Join(tmp, "load.html")}, "10 s, 300 MB"},
		{[]string{"history"}, "5 s"},
		{[]string{"report", "exp-0000", "-o", filepath.Join(tmp, "history.html")}, "5 s"},
	} {
		cmd := exec.Command(bin, append(c.args, "--db", url)...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = nil, &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			harness.Fatalf("%v: %v\n%s", c.args, err, stderr.Bytes())
		}
		took := time.Since(start)
		rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB
		fmt.Printf("| `iolab %s` | %.1f s | %.0f MB | %s |\n", strings.Join(c.args[:min(2, len(c.args))], " "), took.Seconds(), float64(rss)*1024/1e6, c.target)
	}
}

// fill stores the load's segments and the history's experiments, from as
// many goroutines as segments write at once in a real load (8 here).
func fill(ctx context.Context, st *store.Store, segments, runs, experiments int) {
	type job struct {
		exp          *store.Experiment
		runs, rounds int
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for j := range jobs {
				cells := []store.Cell{{Name: "s3 put=50,get=50 size=64k", Workload: "s3", Params: map[string]string{"mix": "put=50,get=50", "size": "64k"}}}
				if err := st.CreateExperiment(ctx, j.exp, cells); err != nil {
					harness.Fatal(err)
				}
				for k := range j.runs {
					if k%2 == 0 {
						for _, phase := range []string{"before", "after"} {
							snap := store.EnvSnapshot{Round: k / 2, Phase: phase, TakenAt: time.Now(), Snapshot: snapshot}
							if err := st.SaveEnv(ctx, j.exp.ID, snap); err != nil {
								harness.Fatal(err)
							}
						}
					}
					res := result(rng, j.exp.CreatedAt.Add(time.Duration(k)*30*time.Second), j.rounds)
					run := &store.Run{CellID: cells[0].ID, Round: k, Status: store.StatusOK, EndedAt: res.Start.Add(res.Duration), Result: res}
					if err := st.BeginRun(ctx, j.exp.ID, run); err != nil {
						harness.Fatal(err)
					}
					if err := st.AppendEnvSeries(ctx, run.ID, envSeconds(res)); err != nil {
						harness.Fatal(err)
					}
					if err := st.SaveRun(ctx, j.exp.ID, run, map[string]float64{"ops_per_s": 1e4, "bytes_per_s": 1e8, "get.lat_p99_ns": 1e6}); err != nil {
						harness.Fatal(err)
					}
				}
				if err := st.FinishExperiment(ctx, j.exp.ID, "done"); err != nil {
					harness.Fatal(err)
				}
			}
		})
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range segments {
		jobs <- job{exp: &store.Experiment{ID: fmt.Sprintf("seg-%03d", i), Name: "s3", Command: "iolab s3", Plan: json.RawMessage(`{}`),
			CreatedAt: start.Add(time.Duration(experiments) * time.Hour), Status: "running", SegmentGroup: "load", Segment: fmt.Sprintf("%d/%d", i, segments)},
			runs: runs, rounds: 20}
	}
	for i := range experiments {
		jobs <- job{exp: &store.Experiment{ID: fmt.Sprintf("exp-%04d", i), Name: "s3", Command: "iolab s3", Plan: json.RawMessage(`{}`),
			CreatedAt: start.Add(time.Duration(i) * time.Hour), Status: "running"}, runs: 10, rounds: 10}
	}
	close(jobs)
	wg.Wait()
}

// result is a run of seconds seconds of 2 operation kinds with realistic
// histograms, its series a second each.
func result(rng *rand.Rand, at time.Time, seconds int) *metrics.Result {
	res := &metrics.Result{Start: at, Duration: time.Duration(seconds) * time.Second, CPUUserS: 0.2, CPUSysS: 0.1,
		Extra: map[string]float64{"connections_opened": 32}}
	for _, op := range []metrics.Op{metrics.Get, metrics.Put} {
		h := metrics.NewHistogram()
		for range 2000 {
			metrics.RecordLatency(h, int64(200e3*rng.ExpFloat64()+50e3))
		}
		res.ByOp[op] = metrics.OpStats{Ops: h.TotalCount(), Bytes: 65536 * h.TotalCount(), Lat: h, TTFB: h}
	}
	for s := range seconds {
		res.Series = append(res.Series, metrics.Second{T: int64(s), Ops: 400, Bytes: 400 * 65536, P50Ns: 190e3, P99Ns: 900e3, MaxNs: 3e6})
	}
	return res
}

// snapshot is an environment snapshot of about the size a real one has
// (2 KiB: kernel, CPU, memory, the target's device and mount, tunables).
var snapshot = func() json.RawMessage {
	m := map[string]string{"kernel": "6.1.0-27-cloud-amd64", "cpu": "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz"}
	for i := range 40 {
		m[fmt.Sprintf("tunable_%02d", i)] = "/sys/block/vda/queue/some_setting=value-of-forty-bytes"
	}
	b, _ := json.Marshal(m)
	return b
}()

func envSeconds(res *metrics.Result) []metrics.EnvSecond {
	var out []metrics.EnvSecond
	for s := range int(res.Duration.Seconds()) {
		out = append(out, metrics.EnvSecond{T: res.Start.Unix() + int64(s), CPUStall: 0.1, Load1: 1})
	}
	return out
}
