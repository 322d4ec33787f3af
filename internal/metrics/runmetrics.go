package metrics

import (
	"maps"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

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
		// How late paced operations started, from their place on the
		// schedule (whatever made them late): per operation kind and over
		// all of them.
		Def{Name: "start_lag_p50_ns", Label: "start lag p50", Unit: "ns", Better: LowerIsBetter, Zeroable: true, Merge: MergeRecompute, PerOp: true},
		Def{Name: "start_lag_p99_ns", Label: "start lag p99", Unit: "ns", Better: LowerIsBetter, Zeroable: true, Merge: MergeRecompute, PerOp: true},
		// How late a paced operation started on average: the lateness the
		// generator's own delay is weighed against (GeneratorBehind).
		Def{Name: "start_lag_mean_ns", Label: "start lag mean", Unit: "ns", Better: LowerIsBetter, Zeroable: true, Merge: MergeRecompute},
		// The generator's own part of it: operations late though a worker
		// was free (it woke late, or waited for a CPU), that delay per
		// paced operation, and the time iolab's threads waited for a CPU
		// while ready to run (schedstat), per operation and as a share of
		// their time ready to run.
		Def{Name: "gen_late_starts", Label: "late by iolab", Unit: "operations", Better: LowerIsBetter, Zeroable: true},
		Def{Name: "gen_late_start_pct", Label: "late by iolab %", Unit: "%", Better: LowerIsBetter, Zeroable: true, Merge: MergeRecompute},
		Def{Name: "gen_delay_s", Label: "iolab's delay", Unit: "s", Better: LowerIsBetter, Zeroable: true},
		Def{Name: "gen_delay_us_per_op", Label: "iolab's delay µs/op", Unit: "µs/op", Better: LowerIsBetter, Zeroable: true, Merge: MergeRecompute},
		Def{Name: "gen_cpu_wait_s", Label: "iolab's CPU wait", Unit: "s", Better: LowerIsBetter, Zeroable: true},
		Def{Name: "gen_cpu_wait_us_per_op", Label: "iolab's CPU wait µs/op", Unit: "µs/op", Better: LowerIsBetter, Zeroable: true, Merge: MergeRecompute},
		Def{Name: "gen_cpu_wait_pct", Label: "iolab's CPU wait %", Unit: "%", Better: LowerIsBetter, Zeroable: true, Merge: MergeRecompute},
		// The generator's delay per operation — the larger of its free
		// workers' late starts and its threads' wait for a CPU — as a
		// share of the median of what the run measured (a paced run's
		// response time, else its service time): past GenDelayShare the
		// run measured its client as much as its target.
		Def{Name: "gen_delay_pct", Label: "iolab's delay %", Unit: "%", Better: LowerIsBetter, Zeroable: true, Merge: MergeRecompute},
		// Of a run with a steady-state criterion: whether it was steady
		// (1) or ran to its runtime (0), and after how many seconds.
		Def{Name: "steady", Unit: "flag", Better: HigherIsBetter, Zeroable: true, Merge: MergeMin},
		Def{Name: "steady_at_s", Label: "steady after s", Unit: "s"},
		// The most workers a paced run grew to (--max-concurrency).
		Def{Name: "workers_peak", Label: "workers at most", Unit: "workers"},
		Def{Name: "workers_cap", Label: "workers allowed", Unit: "workers"},
		Def{Name: "late_start_pct", Label: "late starts %", Unit: "%", Better: LowerIsBetter, Zeroable: true, Merge: MergeRecompute},
		// The server's cost of the work: less CPU per run can be more per
		// operation (a server capped to a tenth of the I/O).
		Def{Name: "server_cpu_us_per_op", Label: "server CPU µs/op", Unit: "µs/op", Better: LowerIsBetter, Zeroable: true, Merge: MergeRecompute},
		Def{Name: "server_cpu_ns_per_byte", Label: "server CPU ns/B", Unit: "ns/B", Better: LowerIsBetter, Zeroable: true, Merge: MergeRecompute},
	)
}

// GenDelayShare is the share of what a run measured past which the
// generator's own delay spoils it (gen_delay_pct).
const GenDelayShare = 10.0 // percent

// Past these the generator was starved of CPU: its threads were ready to
// run (running, or waiting for a CPU: schedstat) on StarvedReadyShare of
// the machine's CPUs or more, and waited StarvedWaitPct of that time
// (half: longer than they ran; a client waking on a quiet VM waits 30-35%
// of its little time).
const (
	StarvedReadyShare = 0.5
	StarvedWaitPct    = 50.0
)

// ClientDelayed is whether a run of these metrics (RunMetrics) measured
// its client as much as its target: the generator's own delay per
// operation was past GenDelayShare of the median it measured
// (gen_delay_pct). The one rule by which a run's failure is not counted
// against its target: the SLO search and its replay, and the bisect, judge
// a run here; the generator-delayed flag says it too.
func ClientDelayed(m map[string]float64) bool {
	return m["gen_delay_pct"] > GenDelayShare
}

// Starved is whether a run of these metrics, lasting d on a machine of
// cpus CPUs, had a generator starved of CPU: ready to run on
// StarvedReadyShare of the CPUs or more, and waiting StarvedWaitPct of
// that time. It is said (the generator-delayed flag, generator-starved),
// and not held against the run for long: on a busy machine a generator
// waits as long as it runs and still measures a target that is slower
// than that delay (a server at its capacity beside stress-ng), so an SLO
// search sets aside only a load's first few misses of a starved run
// (stats.SLOSearch.SetAside) unless its own delay was past its share
// (ClientDelayed).
func Starved(m map[string]float64, d time.Duration, cpus int) bool {
	ready := (m["cpu_s"] + m["gen_cpu_wait_s"]) / max(d.Seconds(), 1e-9)
	return cpus > 0 && m["gen_cpu_wait_pct"] >= StarvedWaitPct && ready >= StarvedReadyShare*float64(cpus)
}

// GeneratorDelayed is whether a run of these metrics, lasting d on a
// machine of cpus CPUs, measured its client as much as its target: its
// own delay was past its share (ClientDelayed), or it was starved of CPU
// (Starved). The rule of the generator-delayed flag.
func GeneratorDelayed(m map[string]float64, d time.Duration, cpus int) bool {
	return ClientDelayed(m) || Starved(m, d, cpus)
}

// GeneratorBehind is whether the generator, not the target, kept a paced
// run from its schedule: it was delayed (GeneratorDelayed), and its own
// delay per operation accounts for half the operations' mean lateness or
// more — a target that stalled for a second makes starts late by far more
// than a client's 3 ms of CPU wait an operation. The one rule for who fell
// behind a schedule and for whom a rate not kept is said of (fs's
// rate-not-met). A run without start lags to weigh (none paced late, or
// stored figures from before start_lag_mean_ns) is judged by
// GeneratorDelayed alone, as before that figure.
func GeneratorBehind(m map[string]float64, d time.Duration, cpus int) bool {
	if !GeneratorDelayed(m, d, cpus) {
		return false
	}
	lag, ok := m["start_lag_mean_ns"]
	own := 1e3 * max(m["gen_delay_us_per_op"], m["gen_cpu_wait_us_per_op"])
	return !ok || own >= lag/2
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
	generatorMetrics(res, m)
	for d := Op(0); d < NumOps; d++ {
		if res.ByOp[d].Ops > 0 {
			opMetrics(res, d, m)
		}
	}
	return m
}

// generatorMetrics adds the generator's own figures: its late starts, its
// wait for a CPU, and its delay as a share of what the run measured.
func generatorMetrics(res *Result, m map[string]float64) {
	if late, ok := res.Extra["late_starts"]; ok {
		if ops := res.Ops(); ops > 0 {
			m["late_start_pct"] = 100 * late / float64(ops)
			m["gen_late_start_pct"] = 100 * res.Extra["gen_late_starts"] / float64(ops)
			m["gen_delay_us_per_op"] = 1e6 * res.Extra["gen_delay_s"] / float64(ops)
		}
		if lag := union(res, func(ds OpStats) *hdrhistogram.Histogram { return ds.StartLag }); lag != nil {
			m["start_lag_p50_ns"], m["start_lag_p99_ns"] = float64(lag.ValueAtQuantile(50)), float64(lag.ValueAtQuantile(99))
			m["start_lag_mean_ns"] = lag.Mean()
		}
	}
	if wait, ok := res.Extra["gen_cpu_wait_s"]; ok {
		if ops := res.Ops(); ops > 0 {
			m["gen_cpu_wait_us_per_op"] = 1e6 * wait / float64(ops)
		}
		if ready := wait + res.CPUUserS + res.CPUSysS; ready > 0 {
			m["gen_cpu_wait_pct"] = 100 * wait / ready
		}
	}
	_, waited := m["gen_cpu_wait_us_per_op"]
	_, lagged := m["gen_delay_us_per_op"]
	if !waited && !lagged {
		return
	}
	// Of what the run measured: a paced run's response time (its wait
	// before a start is in it), else its service time. A starved client's
	// own queue swells a response time too (50,000/s asked: 20 ms of CPU
	// wait per operation, 1% of a 2 s median): the analysis names that by
	// the CPUs it was ready to use.
	measured := union(res, func(ds OpStats) *hdrhistogram.Histogram { return ds.Response })
	if measured == nil {
		measured = union(res, func(ds OpStats) *hdrhistogram.Histogram { return ds.Lat })
	}
	if measured != nil && measured.ValueAtQuantile(50) > 0 {
		m["gen_delay_pct"] = 100 * 1e3 * max(m["gen_delay_us_per_op"], m["gen_cpu_wait_us_per_op"]) / float64(measured.ValueAtQuantile(50))
	}
}

// opMetrics adds one operation kind's rates and latencies (read.ops_per_s,
// read.lat_p99_ns, ...).
func opMetrics(res *Result, d Op, m map[string]float64) {
	ds := res.ByOp[d]
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
	if ds.StartLag != nil && ds.StartLag.TotalCount() > 0 {
		m[p+"start_lag_p50_ns"] = float64(ds.StartLag.ValueAtQuantile(50))
		m[p+"start_lag_p99_ns"] = float64(ds.StartLag.ValueAtQuantile(99))
	}
}

// union is one of the histograms of a run's operation kinds over all of
// them (the kind's own where one kind has any: no copy), nil where none
// has a value.
func union(res *Result, of func(OpStats) *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	var out *hdrhistogram.Histogram
	kinds := 0
	for _, ds := range res.ByOp {
		if h := of(ds); h != nil && h.TotalCount() > 0 {
			if kinds++; kinds == 1 {
				out = h
			} else {
				if kinds == 2 {
					out = out.Clone()
				}
				out = MergeHistogram(out, h)
			}
		}
	}
	return out
}
