// Command store_load measures the store's write load of a load run in
// segments: S segments (goroutines, each with its own connection pool, as
// each pod has) each store one run a second — a 1-second run with two
// operation kinds' HDR histograms, its per-second series, its machine's
// seconds, its derived metrics — against a real
// PostgreSQL (Debian's, started as the tests start it; fsync off, as a
// test server runs).
// It prints runs/s achieved, SaveRun's latency, and rows/s and bytes/s per
// segment, from the server's own counters.
//
//	go run ./bench/store_load -segments 100 -seconds 30
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/iolab/iolab/bench/internal/harness"
	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/pgtest"
	"github.com/iolab/iolab/internal/store"
)

func main() { harness.Main(bench) }

func bench() {
	segments := flag.Int("segments", 100, "segments, each storing a run a second")
	seconds := flag.Int("seconds", 30, "how long")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the merge here")
	flag.Parse()
	url, err := pgtest.NewDatabase()
	if err != nil {
		harness.Fatal(err)
	}
	ctx := context.Background()
	admin, err := sql.Open("pgx", url)
	if err != nil {
		harness.Fatal(err)
	}
	defer admin.Close()
	stores := make([]*store.Store, *segments)
	for i := range stores {
		if stores[i], err = store.Open(ctx, url); err != nil {
			harness.Fatal(err)
		}
		e := &store.Experiment{ID: fmt.Sprintf("seg-%03d", i), Name: "s3", Command: "iolab s3", Plan: json.RawMessage(`{}`),
			CreatedAt: time.Now(), Status: "running", SegmentGroup: "bench", Segment: fmt.Sprintf("%d/%d", i, *segments)}
		cells := []store.Cell{{Name: "s3 put=50,get=50", Workload: "s3", Params: map[string]string{"concurrency": "64"}}}
		if err := stores[i].CreateExperiment(ctx, e, cells); err != nil {
			harness.Fatal(err)
		}
	}
	before, cpu0 := counters(ctx, admin), postgresCPU()
	start := time.Now()
	lat := storeRuns(ctx, stores, *seconds, start)
	elapsed := time.Since(start)
	after, cpu1 := counters(ctx, admin), postgresCPU()
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	runs := float64(len(lat))
	fmt.Printf("PostgreSQL %s, %d segments x 1 run/s for %ds\n", after.version, *segments, *seconds)
	fmt.Printf("runs stored: %.0f (%.1f/s; asked %d/s); one run's writes: p50 %v, p99 %v, max %v\n", runs, runs/elapsed.Seconds(), *segments,
		lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)*99/100].Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
	rows := float64(after.inserted - before.inserted)
	bytes := float64(after.size - before.size)
	fmt.Printf("rows inserted: %.0f/s in all, %.1f/s per segment; database growth: %.0f KiB/s in all, %.1f KiB/s per segment (%.1f KiB per run)\n",
		rows/elapsed.Seconds(), rows/elapsed.Seconds()/float64(*segments), bytes/elapsed.Seconds()/1024,
		bytes/elapsed.Seconds()/1024/float64(*segments), bytes/runs/1024)
	fmt.Printf("PostgreSQL's own CPU: %.2f s in %.0f s = %.0f%% of one core (its processes' user+system time from /proc); the rest of the machine's CPU was the %d segments' encoding\n",
		cpu1-cpu0, elapsed.Seconds(), 100*(cpu1-cpu0)/elapsed.Seconds(), *segments)

	mergeLoad(ctx, stores, len(lat), *profile)
}

// storeRuns has every segment store a run a second for seconds, from
// start, and returns how long each run's writes took.
func storeRuns(ctx context.Context, stores []*store.Store, seconds int, start time.Time) []time.Duration {
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	for i, st := range stores {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			d, _ := st.Load(ctx, fmt.Sprintf("seg-%03d", i))
			for k := range seconds {
				next := start.Add(time.Duration(k+1) * time.Second)
				res := result(rng)
				run := &store.Run{CellID: d.Cells[0].ID, Round: k, Status: store.StatusOK, EndedAt: time.Now(), Result: res}
				t0 := time.Now()
				if err := st.BeginRun(ctx, d.Experiment.ID, run); err != nil {
					harness.Fatal(err)
				}
				if err := st.AppendEnvSeries(ctx, run.ID, []metrics.EnvSecond{{T: time.Now().Unix(), CPUStall: 0.1, Load1: 1}}); err != nil {
					harness.Fatal(err)
				}
				if err := st.SaveRun(ctx, d.Experiment.ID, run, map[string]float64{"ops_per_s": 1e4, "bytes_per_s": 1e8, "get.lat_p99_ns": 1e6}); err != nil {
					harness.Fatal(err)
				}
				took := time.Since(t0)
				mu.Lock()
				lat = append(lat, took)
				mu.Unlock()
				time.Sleep(time.Until(next))
			}
		})
	}
	wg.Wait()
	return lat
}

// mergeLoad measures what show pays to merge the load: load every
// segment, merge (with a CPU profile of the merge to profile, if given).
func mergeLoad(ctx context.Context, stores []*store.Store, runs int, profile string) {
	t0 := time.Now()
	var parts []*store.Data
	for i := range stores {
		d, err := stores[0].Load(ctx, fmt.Sprintf("seg-%03d", i))
		if err != nil {
			harness.Fatal(err)
		}
		parts = append(parts, d)
	}
	loaded := time.Since(t0)
	if profile != "" {
		f, _ := os.Create(profile)
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	merged, _, err := analysis.MergeSegments(parts)
	if err != nil {
		harness.Fatal(err)
	}
	fmt.Printf("show's merge: loading the %d segments' %d runs took %v, merging them into %d runs %v\n", len(parts), runs,
		loaded.Round(time.Millisecond), len(merged.Runs), (time.Since(t0) - loaded).Round(time.Millisecond))
}

// postgresCPU is the CPU seconds every postgres process has used.
func postgresCPU() float64 {
	var total float64
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < 0 || s[open+1:end] != "postgres" {
			continue
		}
		f := strings.Fields(s[end+2:])
		utime, _ := strconv.ParseFloat(f[11], 64)
		stime, _ := strconv.ParseFloat(f[12], 64)
		total += (utime + stime) / 100 // clock ticks (USER_HZ 100)
	}
	return total
}

// result is a 1-second run of 2 operation kinds with realistic histograms.
func result(rng *rand.Rand) *metrics.Result {
	res := &metrics.Result{Start: time.Now(), Duration: time.Second, CPUUserS: 0.2, CPUSysS: 0.1,
		Extra: map[string]float64{"connections_opened": 32}}
	for _, op := range []metrics.Op{metrics.Get, metrics.Put} {
		h := metrics.NewHistogram()
		for range 5000 {
			metrics.RecordLatency(h, int64(200e3*rng.ExpFloat64()+50e3))
		}
		res.ByOp[op] = metrics.OpStats{Ops: h.TotalCount(), Bytes: 4096 * h.TotalCount(), Lat: h, TTFB: h}
	}
	res.Series = []metrics.Second{{T: 0, Ops: 10000, Bytes: 40960000, P50Ns: 190e3, P99Ns: 900e3, MaxNs: 3e6}}
	return res
}

type pgCounters struct {
	inserted, size int64
	version        string
}

func counters(ctx context.Context, db *sql.DB) pgCounters {
	var c pgCounters
	_ = db.QueryRowContext(ctx, `SELECT tup_inserted, pg_database_size(current_database()), current_setting('server_version')
		FROM pg_stat_database WHERE datname = current_database()`).Scan(&c.inserted, &c.size, &c.version)
	return c
}
