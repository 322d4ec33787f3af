// Command report_size measures the HTML report of a large experiment: it
// stores a synthetic experiment (by default 1,000 runs: 2 variants x 5
// cells x 100 rounds, each run 10 seconds of per-second series and an HDR
// histogram of 2,000 latencies), writes its report with `iolab report`,
// and loads it in headless Chromium, printing the file's size, the time
// iolab took, and the time Chromium took to load and lay it out.
//
//	go run ./bench/report_size [-rounds 100] [-cells 5] [-seconds 10] [-chromium /usr/bin/chromium] [-keep]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/iolab/iolab/bench/internal/harness"
	"github.com/iolab/iolab/internal/cli"
	"github.com/iolab/iolab/internal/envinfo"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/store"
)

func main() { harness.Main(bench) }

func bench() {
	rounds := flag.Int("rounds", 100, "measured rounds")
	cells := flag.Int("cells", 5, "cells per variant")
	seconds := flag.Int("seconds", 10, "seconds per run")
	chromium := flag.String("chromium", "/usr/bin/chromium", "the browser to load the report in (empty: skip)")
	keep := flag.Bool("keep", false, "keep the database and the report")
	flag.Parse()
	dir, err := os.MkdirTemp("", "iolab-report-size-")
	if err != nil {
		harness.Fatal(err)
	}
	if *keep {
		defer fmt.Println("kept the database and the report in", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	db := filepath.Join(dir, "big.db")
	ctx := context.Background()
	start := time.Now()
	runs, err := populate(ctx, db, *rounds, *cells, *seconds)
	if err != nil {
		harness.Fatal(err)
	}
	fmt.Printf("stored %d runs (%d cells x 2 variants x %d rounds, %d s of series each) in %.1fs\n", runs, *cells, *rounds, *seconds, time.Since(start).Seconds())

	out := filepath.Join(dir, "report.html")
	start = time.Now()
	var stdout, stderr bytes.Buffer
	if err := cli.Execute(ctx, []string{"report", "--db", db, "-o", out}, &stdout, &stderr); err != nil {
		harness.Fatalf("iolab report: %v\n%s", err, stderr.String())
	}
	took := time.Since(start)
	st, err := os.Stat(out)
	if err != nil {
		harness.Fatal(err)
	}
	fmt.Printf("iolab report: %.0f KiB (%.2f MiB) in %.2fs\n", float64(st.Size())/1024, float64(st.Size())/(1<<20), took.Seconds())
	if *chromium == "" {
		return
	}
	load, layout, err := render(ctx, *chromium, out)
	if err != nil {
		harness.Fatal(err)
	}
	fmt.Printf("Chromium (headless): load event %.0f ms after navigation began; %.0f ms until the page was laid out and its plots measured\n",
		load, layout)
}

// populate stores one experiment of 2 variants x cells x rounds runs.
func populate(ctx context.Context, db string, rounds, cells, seconds int) (int, error) {
	st, err := store.Open(ctx, db)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	t0 := time.Now().Add(-time.Duration(rounds*cells*2*seconds) * time.Second)
	plan, _ := json.Marshal(map[string]any{"baseline": "main", "threshold": 0.02, "order": "random"})
	exp := &store.Experiment{ID: "20261123-000000-b1g0", Name: "big", Command: "go run ./bench/report_size", Plan: plan, CreatedAt: t0, Status: "done"}
	var cs []store.Cell
	for _, v := range []string{"main", "feature"} {
		for c := range cells {
			bs := 4096 << c
			cs = append(cs, store.Cell{Index: len(cs), Name: fmt.Sprintf("randread-%dk", bs/1024), Variant: v, Workload: "fs",
				Params: map[string]string{"rw": "randread", "bs": fmt.Sprint(bs), "iodepth": "8"}})
		}
	}
	if err := st.CreateExperiment(ctx, exp, cs); err != nil {
		return 0, err
	}
	snap, _ := json.Marshal(envinfo.Capture(os.TempDir()))
	if err := st.SaveEnv(ctx, exp.ID, store.EnvSnapshot{Phase: "before", TakenAt: t0, Snapshot: snap}); err != nil {
		return 0, err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	at, n := t0, 0
	for r := range rounds {
		for _, i := range rng.Perm(len(cs)) {
			c := cs[i]
			// The disk slows 3x over the experiment, as in the 26-hour run;
			// the feature is 5% faster.
			rate := 20000 / math.Pow(3, float64(n)/float64(rounds*len(cs))) * float64(c.Index%cells+1)
			if c.Variant == "feature" {
				rate *= 1.05
			}
			res := &metrics.Result{Start: at, Duration: time.Duration(seconds) * time.Second, CPUUserS: 1, CPUSysS: 2}
			h := metrics.NewHistogram()
			var ops int64
			for s := range seconds {
				k := int64(rate * math.Exp(0.05*rng.NormFloat64()))
				res.Series = append(res.Series, metrics.Second{T: int64(s), Ops: k, Bytes: k * 4096, P50Ns: int64(1e9 / rate), P99Ns: int64(3e9 / rate)})
				ops += k
			}
			for range 2000 {
				metrics.RecordLatency(h, int64(1e9/rate*math.Exp(0.5*rng.NormFloat64())))
			}
			res.ByOp[metrics.Read] = metrics.OpStats{Ops: ops, Bytes: ops * 4096, Lat: h}
			run := &store.Run{CellID: c.ID, Round: r, Status: store.StatusOK, Result: res, EndedAt: at.Add(res.Duration)}
			if err := st.SaveRun(ctx, exp.ID, run, nil); err != nil {
				return n, err
			}
			at = at.Add(res.Duration + time.Second)
			n++
		}
	}
	return n, st.FinishExperiment(ctx, exp.ID, "done")
}

// render loads the report in headless Chromium: the load event's time
// after navigation began (the browser's own clock), and the wall time
// until the page was laid out and every plot measured.
func render(ctx context.Context, bin, path string) (load, layout float64, err error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU)
	actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil { // the browser's start-up, not timed
		return 0, 0, err
	}
	start := time.Now()
	if err := chromedp.Do(bctx, chromedp.Navigate("file://"+path)); err != nil {
		return 0, 0, err
	}
	plots, err := chromedp.Run(bctx, chromedp.Evaluate[int](`[...document.querySelectorAll('figure.plot svg')].filter(s => s.getBoundingClientRect().width > 0).length`))
	if err != nil {
		return 0, 0, err
	}
	layout = float64(time.Since(start).Milliseconds())
	load, err = chromedp.Run(bctx, chromedp.Evaluate[float64](`(() => { const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime; })()`))
	if plots == 0 {
		return 0, 0, fmt.Errorf("no plot was laid out")
	}
	return load, layout, err
}
