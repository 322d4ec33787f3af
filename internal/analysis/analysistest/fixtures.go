// Package analysistest holds stored experiments with known numbers, for
// the tests of the analysis and of every format that renders it.
package analysistest

import (
	"encoding/json"
	"time"

	"github.com/iolab/iolab/internal/envinfo"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/store"
)

// Experiment is a stored fs experiment with known numbers: a warm-up run,
// six measured runs whose first is cold, and one failed run.
func Experiment() *store.Data {
	t0 := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	rot := true
	snap, _ := json.Marshal(envinfo.Snapshot{TakenAt: t0, Hostname: "lab", Kernel: "6.1.0", CPUs: 2, CPUModel: "Test CPU",
		MemTotalBytes: 8 << 30, MemAvailableBytes: 6 << 30, Load1: 0.5, IolabVersion: "dev",
		Target: &envinfo.Target{Path: "/data", FSType: "ext4", Device: "vda", Rotational: &rot}})
	d := &store.Data{
		Experiment: store.Experiment{ID: "20261122-080000-abcd", Name: "fs", Command: "iolab fs --rw=randread", Status: "done"},
		Cells: []store.Cell{{ID: 1, Name: "randread-4k-direct", Workload: "fs",
			Params: map[string]string{"rw": "randread", "bs": "4k", "direct": "1", "iodepth": "1", "numjobs": "1", "ioengine": "psync"}}},
		Env: []store.EnvSnapshot{{Round: 0, Phase: "before", TakenAt: t0, Snapshot: snap}},
	}
	iops := []float64{9000, 5000, 10000, 10100, 9900, 10050, 9950, 0}
	for i, v := range iops {
		h := metrics.NewHistogram()
		lat := int64(1e9 / max(v, 1))
		for k := int64(0); k < 100; k++ {
			metrics.RecordLatency(h, lat+k*1000)
		}
		res := &metrics.Result{Start: t0.Add(time.Duration(i) * time.Minute), Duration: 10 * time.Second,
			CPUUserS: 0.5, CPUSysS: 1.5, TimingOverheadNs: 40}
		res.ByOp[metrics.Read] = metrics.OpStats{Ops: int64(v * 10), Bytes: int64(v*10) * 4096, Lat: h}
		run := store.Run{ID: int64(i + 1), CellID: 1, Round: i - 1, Slot: 0, Status: store.StatusOK, Result: res}
		switch i {
		case 0:
			run.Warmup, run.Round = true, 0
		case 7:
			run.Status, run.Error, res.Errors, res.FirstError = store.StatusFailed, "read /data/iolab.0.0: input/output error", 1, "read /data/iolab.0.0: input/output error"
		}
		d.Runs = append(d.Runs, run)
	}
	return d
}

// TwoVariants is Experiment() run by two variants, b 20% slower, in
// interleaved rounds, with a plan's record.
func TwoVariants() *store.Data {
	d := Experiment()
	d.Experiment.Plan = []byte(`{"plan_text": "x", "baseline": "a", "threshold": 0.02, "order": "random", "commits": {"b": "2222222"}}`)
	d.Cells[0].Variant = "a"
	b := d.Cells[0]
	b.ID, b.Index, b.Variant = 2, 1, "b"
	d.Cells = append(d.Cells, b)
	n := len(d.Runs)
	for i := range n {
		r := d.Runs[i]
		res := *r.Result
		res.ByOp[metrics.Read].Ops = res.ByOp[metrics.Read].Ops * 8 / 10
		res.Start = res.Start.Add(30_000_000_000)
		r.ID, r.CellID, r.Slot, r.Result = int64(n+i+1), 2, 1, &res
		d.Runs = append(d.Runs, r)
	}
	return d
}
