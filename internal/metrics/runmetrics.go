package metrics

import "maps"

func init() {
	Declare(
		Def{Name: "ops_per_s", Label: "IOPS", OpLabel: "ops/s", OpLabels: map[string]string{"read": "read IOPS", "write": "write IOPS", "sync": "syncs/s"},
			Unit: "ops/s", Bench: "ops/s", Better: HigherIsBetter, Merge: MergeRecompute, PerOp: true},
		Def{Name: "bytes_per_s", Label: "MiB/s", Unit: "B/s", Bench: "B/s", Better: HigherIsBetter, PerOp: true}, // a command's adds up
		Def{Name: "cpu_s", Unit: "s", Better: LowerIsBetter, Merge: MergeRecompute},
		Def{Name: "cpu_us_per_op", Label: "CPU µs/op", Unit: "µs/op", Better: LowerIsBetter, Merge: MergeRecompute},
		Def{Name: "lat_p50_ns", Label: "lat p50", Unit: "ns", Better: LowerIsBetter, Merge: MergeRecompute, PerOp: true},
		Def{Name: "lat_p99_ns", Label: "lat p99", OpLabels: map[string]string{"open": "open p99", "close": "close p99"},
			Unit: "ns", Better: LowerIsBetter, Merge: MergeRecompute, PerOp: true},
		Def{Name: "lat_p999_ns", Label: "lat p99.9", Unit: "ns", Better: LowerIsBetter, Merge: MergeRecompute, PerOp: true},
		Def{Name: "ttfb_p50_ns", Label: "TTFB p50", Unit: "ns", Better: LowerIsBetter, Merge: MergeRecompute, PerOp: true},
		Def{Name: "ttfb_p99_ns", Label: "TTFB p99", Unit: "ns", Better: LowerIsBetter, Merge: MergeRecompute, PerOp: true},
		Def{Name: "response_p50_ns", Label: "response p50", Unit: "ns", Better: LowerIsBetter, Merge: MergeRecompute, PerOp: true},
		Def{Name: "response_p99_ns", Label: "response p99", Unit: "ns", Better: LowerIsBetter, Merge: MergeRecompute, PerOp: true},
		Def{Name: "response_p999_ns", Label: "response p99.9", Unit: "ns", Better: LowerIsBetter, Merge: MergeRecompute, PerOp: true},
		// Of a paced run: the operations that started over a millisecond
		// after their time on the schedule, and their share of all.
		Def{Name: "late_starts", Unit: "operations", Better: LowerIsBetter, Zeroable: true},
		// Of a run with a steady-state criterion: whether it was steady
		// (1) or ran to its runtime (0), and after how many seconds.
		Def{Name: "steady", Unit: "flag", Better: HigherIsBetter, Zeroable: true, Merge: MergeMin},
		Def{Name: "steady_at_s", Label: "steady after s", Unit: "s"},
		// The most workers a paced run grew to (--max-concurrency).
		Def{Name: "workers_peak", Label: "workers at most", Unit: "workers"},
		Def{Name: "late_start_pct", Label: "late starts %", Unit: "%", Better: LowerIsBetter, Zeroable: true, Merge: MergeRecompute},
		// The server's cost of the work: less CPU per run can be more per
		// operation (a server capped to a tenth of the I/O).
		Def{Name: "server_cpu_us_per_op", Label: "server CPU µs/op", Unit: "µs/op", Better: LowerIsBetter, Zeroable: true, Merge: MergeRecompute},
		Def{Name: "server_cpu_ns_per_byte", Label: "server CPU ns/B", Unit: "ns/B", Better: LowerIsBetter, Zeroable: true, Merge: MergeRecompute},
	)
}

// RunMetrics derives a run's metrics, keyed by the names summaries use.
func RunMetrics(res *Result) map[string]float64 {
	if res.Derived != nil {
		return maps.Clone(res.Derived) // read without its measurements: as stored
	}
	m := map[string]float64{"cpu_s": res.CPUUserS + res.CPUSysS}
	if ops := res.Ops(); ops > 0 {
		m["ops_per_s"] = res.PerSecond(ops)
		m["bytes_per_s"] = res.PerSecond(res.Bytes())
		m["cpu_us_per_op"] = 1e6 * (res.CPUUserS + res.CPUSysS) / float64(ops)
	}
	for k, v := range res.Extra {
		m[k] = v
	}
	// The server's cost of the work, not only its total: a server capped
	// to a tenth of the I/O uses less CPU per run and more per operation.
	if cpu, ok := res.Extra["server_cpu_s"]; ok {
		if ops := res.Ops(); ops > 0 {
			m["server_cpu_us_per_op"] = 1e6 * cpu / float64(ops)
		}
		if b := res.Bytes(); b > 0 {
			m["server_cpu_ns_per_byte"] = 1e9 * cpu / float64(b)
		}
	}
	if late, ok := res.Extra["late_starts"]; ok {
		if ops := res.Ops(); ops > 0 {
			m["late_start_pct"] = 100 * late / float64(ops)
		}
	}
	for d := Op(0); d < NumOps; d++ {
		ds := res.ByOp[d]
		if ds.Ops == 0 {
			continue
		}
		p := d.String() + "."
		m[p+"ops_per_s"] = res.RateOf(d, ds.Ops)
		if d != Sync {
			m[p+"bytes_per_s"] = res.RateOf(d, ds.Bytes)
		}
		lat := PercentilesOf(ds.Lat)
		m[p+"lat_p50_ns"] = float64(lat.P50)
		m[p+"lat_p99_ns"] = float64(lat.P99)
		m[p+"lat_p999_ns"] = float64(lat.P999)
		if ds.TTFB != nil {
			ttfb := PercentilesOf(ds.TTFB)
			m[p+"ttfb_p50_ns"] = float64(ttfb.P50)
			m[p+"ttfb_p99_ns"] = float64(ttfb.P99)
		}
		if ds.Response != nil && ds.Response.TotalCount() > 0 {
			r := PercentilesOf(ds.Response)
			m[p+"response_p50_ns"] = float64(r.P50)
			m[p+"response_p99_ns"] = float64(r.P99)
			m[p+"response_p999_ns"] = float64(r.P999)
		}
	}
	return m
}
