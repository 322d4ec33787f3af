package report

import (
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/store"
)

// fio's output formats, for tools that parse fio: FormatFio is fio's
// --output-format=json, FormatFioPlus json+ (with the latency histogram's
// bins).
const (
	FormatFio     = "fio"
	FormatFioPlus = "fio+"
)

// FioJSON writes an experiment as fio 3.x writes --output-format=json: one
// job per cell (and variant), its measured runs merged as fio's
// group_reporting merges a job's threads — operations and bytes summed,
// runtimes summed, latency histograms merged exactly. iolab times each
// operation from submission to completion: that is fio's lat, given as
// clat_ns and lat_ns both (slat_ns is empty). bw_*/iops_* come from the
// per-second series, for a job that only reads or only writes. An "iolab"
// object beside fio's fields says what was merged.
func FioJSON(w io.Writer, r *analysis.Report, bins bool, version string) error {
	doc := fioDoc{
		Version:     "iolab-" + version,
		Timestamp:   r.Created.Unix(),
		TimestampMs: r.Created.UnixMilli(),
		Time:        r.Created.Format("Mon Jan _2 15:04:05 2006"),
		Jobs:        []fioJob{},
		DiskUtil:    []any{},
	}
	for _, c := range r.Cells {
		var runs []*metrics.Result
		var ids []int64
		var cell store.Cell
		for _, run := range r.Runs {
			if run.Cell == c.Name && run.Variant == c.Variant {
				cell = run.StoredCell
				if !run.Warmup && run.Status == store.StatusOK {
					runs = append(runs, run.Result)
					ids = append(ids, run.ID)
				}
			}
		}
		if cell.Name == "" {
			cell = store.Cell{Name: c.Name, Variant: c.Variant, Workload: c.Workload, Params: c.Params}
		}
		name := c.Name
		if c.Variant != "" {
			name = c.Variant + "/" + c.Name
		}
		doc.Jobs = append(doc.Jobs, fioJobOf(name, cell, runs, ids, r.Experiment, bins))
		if util := fioDiskUtil(cell, runs); util > 0 {
			doc.DiskUtil = append(doc.DiskUtil, map[string]any{"name": "", "util": util,
				"iolab": "job " + name + ": the highest utilisation fio reported of a device over the runs; which device is not kept"})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

type fioDoc struct {
	Version     string   `json:"fio version"`
	Timestamp   int64    `json:"timestamp"`
	TimestampMs int64    `json:"timestamp_ms"`
	Time        string   `json:"time"`
	Jobs        []fioJob `json:"jobs"`
	DiskUtil    []any    `json:"disk_util"`
}

type fioJob struct {
	Jobname         string             `json:"jobname"`
	GroupID         int                `json:"groupid"`
	Error           int                `json:"error"`
	Eta             int                `json:"eta"`
	Elapsed         int64              `json:"elapsed"`
	JobOptions      map[string]string  `json:"job options"`
	Read            fioDir             `json:"read"`
	Write           fioDir             `json:"write"`
	Trim            fioDir             `json:"trim"`
	Sync            fioSync            `json:"sync"`
	JobRuntime      int64              `json:"job_runtime"`
	UsrCPU          float64            `json:"usr_cpu"`
	SysCPU          float64            `json:"sys_cpu"`
	Ctx             int64              `json:"ctx"`
	Majf            int64              `json:"majf"`
	Minf            int64              `json:"minf"`
	IODepthLevel    map[string]float64 `json:"iodepth_level"`
	IODepthSubmit   map[string]float64 `json:"iodepth_submit"`
	IODepthComplete map[string]float64 `json:"iodepth_complete"`
	LatencyNs       map[string]float64 `json:"latency_ns"`
	LatencyUs       map[string]float64 `json:"latency_us"`
	LatencyMs       map[string]float64 `json:"latency_ms"`
	LatencyDepth    int                `json:"latency_depth"`
	LatencyTarget   int                `json:"latency_target"`
	LatencyPct      float64            `json:"latency_percentile"`
	LatencyWindow   int                `json:"latency_window"`
	Iolab           fioIolab           `json:"iolab"`
}

type fioIolab struct {
	Experiment string  `json:"experiment"`
	Variant    string  `json:"variant,omitempty"`
	Cell       string  `json:"cell"`
	Runs       []int64 `json:"runs"`
	Latency    string  `json:"latency"`
	// Response is, for a paced job, each direction's response time in
	// fio's terms (lat_ns's shape): from each operation's place on the
	// schedule to its completion, which fio does not measure.
	Response map[string]fioLat `json:"response_ns,omitempty"`
}

type fioDir struct {
	IOBytes    int64   `json:"io_bytes"`
	IOKBytes   int64   `json:"io_kbytes"`
	BwBytes    int64   `json:"bw_bytes"`
	Bw         int64   `json:"bw"`
	IOPS       float64 `json:"iops"`
	Runtime    int64   `json:"runtime"`
	TotalIOs   int64   `json:"total_ios"`
	ShortIOs   int64   `json:"short_ios"`
	DropIOs    int64   `json:"drop_ios"`
	Slat       fioLat  `json:"slat_ns"`
	Clat       fioLat  `json:"clat_ns"`
	Lat        fioLat  `json:"lat_ns"`
	BwMin      int64   `json:"bw_min"`
	BwMax      int64   `json:"bw_max"`
	BwAgg      float64 `json:"bw_agg"`
	BwMean     float64 `json:"bw_mean"`
	BwDev      float64 `json:"bw_dev"`
	BwSamples  int     `json:"bw_samples"`
	IOPSMin    int64   `json:"iops_min"`
	IOPSMax    int64   `json:"iops_max"`
	IOPSMean   float64 `json:"iops_mean"`
	IOPSStddev float64 `json:"iops_stddev"`
	IOPSSample int     `json:"iops_samples"`
}

type fioSync struct {
	TotalIOs int64  `json:"total_ios"`
	Lat      fioLat `json:"lat_ns"`
}

type fioLat struct {
	Min        int64            `json:"min"`
	Max        int64            `json:"max"`
	Mean       float64          `json:"mean"`
	Stddev     float64          `json:"stddev"`
	N          int64            `json:"N"`
	Percentile map[string]int64 `json:"percentile,omitempty"`
	Bins       map[string]int64 `json:"bins,omitempty"`
}

// fioPercentiles are fio's default percentile_list.
var fioPercentiles = []float64{1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99}

func fioJobOf(name string, c store.Cell, runs []*metrics.Result, ids []int64, experiment string, bins bool) fioJob {
	j := fioJob{
		Jobname: name, JobOptions: c.Params, IODepthLevel: map[string]float64{}, IODepthSubmit: map[string]float64{},
		IODepthComplete: map[string]float64{}, LatencyPct: 100,
		Iolab: fioIolab{Experiment: experiment, Variant: c.Variant, Cell: c.Name, Runs: ids,
			Latency: "submission to completion, as fio's lat; clat_ns carries the same"},
	}
	if j.Iolab.Runs == nil {
		j.Iolab.Runs = []int64{}
	}
	if len(runs) == 0 {
		j.Error = 1 // no measured run finished
	}
	runtime, cpu, lat, response, all := mergeFioRuns(runs)
	ms := int64(math.Round(runtime * 1000))
	// fio's job_runtime under group_reporting is its jobs' runtimes
	// summed (numjobs=2 for 1 s: 2000); a direction's runtime the
	// longest (1001).
	j.JobRuntime, j.Elapsed = ms*int64(jobsOf(c.Params)), int64(math.Round(runtime))
	if runtime > 0 {
		j.UsrCPU, j.SysCPU = cpu[0]/runtime*100, cpu[1]/runtime*100
	}
	dirs := []*fioDir{&j.Read, &j.Write, &j.Trim}
	active := 0
	for i, d := range []metrics.Op{metrics.Read, metrics.Write, metrics.Trim} {
		out := dirs[i]
		var ops, bytes int64
		for _, r := range runs {
			ops += r.ByOp[d].Ops
			bytes += r.ByOp[d].Bytes
		}
		if ops > 0 {
			active++
		}
		*out = fioDir{IOBytes: bytes, IOKBytes: bytes >> 10, TotalIOs: ops, Clat: fioLatOf(lat[d], bins)}
		if ops > 0 {
			out.Runtime = ms // fio's: 0 for a direction the job did not do
		}
		out.Lat = out.Clat
		out.Lat.Percentile, out.Lat.Bins = nil, nil
		if runtime > 0 && ops > 0 {
			out.BwBytes = int64(float64(bytes) / runtime)
			out.Bw = out.BwBytes >> 10
			out.IOPS = float64(ops) / runtime
		}
	}
	if active == 1 { // the series is per run, not per direction: only a one-way job's is the direction's
		for _, out := range dirs {
			if out.TotalIOs > 0 {
				seriesStats(out, runs)
			}
		}
	}
	var syncs int64
	for _, r := range runs {
		syncs += r.ByOp[metrics.Sync].Ops
	}
	j.Sync = fioSync{TotalIOs: syncs, Lat: fioLatOf(lat[metrics.Sync], bins)}
	if depth, err := strconv.Atoi(c.Params["iodepth"]); err == nil {
		j.IODepthLevel[fioDepthBucket(depth)] = 100
	}
	j.LatencyNs, j.LatencyUs, j.LatencyMs = latencyBuckets(all)
	if isFioRun(c) {
		fioFigures(&j, runs)
	}
	for d, h := range response {
		if h != nil && h.TotalCount() > 0 {
			if j.Iolab.Response == nil {
				j.Iolab.Response = map[string]fioLat{}
				j.Iolab.Latency += "; response_ns: from each operation's place on the schedule to its completion (a late start's wait counts, as wrk2 measures it)"
			}
			j.Iolab.Response[metrics.Op(d).String()] = fioLatOf(h, bins)
		}
	}
	return j
}

// mergeFioRuns merges a job's runs as fio reports one job: their time and
// CPU added up, each direction's latencies and response times merged, and
// every latency but a sync's in one.
func mergeFioRuns(runs []*metrics.Result) (runtime float64, cpu [2]float64, lat, response [metrics.NumOps]*hdrhistogram.Histogram, all *hdrhistogram.Histogram) {
	all = metrics.NewHistogram()
	for _, r := range runs {
		runtime += r.Duration.Seconds()
		cpu[0] += r.CPUUserS
		cpu[1] += r.CPUSysS
		for d := range r.ByOp {
			response[d] = metrics.MergeHistogram(response[d], r.ByOp[d].Response)
			if h := r.ByOp[d].Lat; h != nil {
				if lat[d] == nil {
					lat[d] = metrics.NewHistogram()
				}
				lat[d].Merge(h)
				if metrics.Op(d) != metrics.Sync {
					all.Merge(h)
				}
			}
		}
	}
	return runtime, cpu, lat, response, all
}

func fioDepthBucket(depth int) string {
	for _, b := range []int{1, 2, 4, 8, 16, 32} {
		if depth <= b {
			return strconv.Itoa(b)
		}
	}
	return ">=64"
}

// fioLatOf is a latency histogram in fio's terms.
func fioLatOf(h *hdrhistogram.Histogram, bins bool) fioLat {
	if h == nil || h.TotalCount() == 0 {
		return fioLat{}
	}
	l := fioLat{Min: h.Min(), Max: h.Max(), Mean: h.Mean(), Stddev: h.StdDev(), N: h.TotalCount(), Percentile: map[string]int64{}}
	for _, p := range fioPercentiles {
		l.Percentile[strconv.FormatFloat(p, 'f', 6, 64)] = h.ValueAtQuantile(p)
	}
	if bins {
		l.Bins = map[string]int64{}
		for _, b := range h.Distribution() {
			if b.Count > 0 {
				l.Bins[strconv.FormatInt(b.To, 10)] += b.Count
			}
		}
	}
	return l
}

// seriesStats fills fio's bw_*/iops_* from the per-second series of the
// runs (fio samples every 500 ms by default; iolab's samples are seconds).
func seriesStats(out *fioDir, runs []*metrics.Result) {
	var ops, bw []float64
	for _, r := range runs {
		for _, s := range r.Series {
			ops = append(ops, float64(s.Ops))
			bw = append(bw, float64(s.Bytes)/1024)
		}
	}
	if len(ops) == 0 {
		return
	}
	min, max, mean, sd := describe(ops)
	out.IOPSMin, out.IOPSMax, out.IOPSMean, out.IOPSStddev, out.IOPSSample = int64(min), int64(max), mean, sd, len(ops)
	min, max, mean, sd = describe(bw)
	out.BwMin, out.BwMax, out.BwMean, out.BwDev, out.BwSamples, out.BwAgg = int64(min), int64(max), mean, sd, len(bw), 100
}

func describe(xs []float64) (lo, hi, mean, sd float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi, mean = math.Min(lo, x), math.Max(hi, x), mean+x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	if len(xs) > 1 {
		sd = math.Sqrt(sd / float64(len(xs)-1))
	}
	return lo, hi, mean, sd
}

// latencyBuckets are fio's latency_ns/us/ms: the percentage of operations
// whose latency falls at or below each bound and above the previous one.
func latencyBuckets(h *hdrhistogram.Histogram) (ns, us, ms map[string]float64) {
	ns, us, ms = map[string]float64{}, map[string]float64{}, map[string]float64{}
	bounds := []int64{2, 4, 10, 20, 50, 100, 250, 500, 750, 1000}
	total := float64(h.TotalCount())
	dist := h.Distribution()
	share := func(lo, hi int64) float64 { // (lo, hi] in ns
		if total == 0 {
			return 0
		}
		var n int64
		for _, b := range dist {
			if v := b.To; v > lo && v <= hi {
				n += b.Count
			}
		}
		return float64(n) / total * 100
	}
	for _, unit := range []struct {
		m     map[string]float64
		scale int64
		extra []int64
	}{{ns, 1, nil}, {us, 1000, nil}, {ms, 1000_000, []int64{2000}}} {
		prev := int64(0)
		if unit.scale > 1 {
			prev = unit.scale // below 1 unit is the finer map's
		}
		for _, b := range append(bounds, unit.extra...) {
			unit.m[strconv.FormatInt(b, 10)] = share(prev, b*unit.scale)
			prev = b * unit.scale
		}
		if unit.scale == 1000_000 {
			unit.m[">=2000"] = share(prev, math.MaxInt64)
		}
	}
	return ns, us, ms
}

// isFioRun says the cell's runs were fio's own (--ioengine fio): their
// latency histograms are fio's clat, their extras fio's other figures.
func isFioRun(c store.Cell) bool {
	e := c.Params["ioengine"]
	return e == "fio" || strings.HasPrefix(e, "fio:")
}

// fioFigures puts what fio itself reported of a job's runs under fio's
// names: clat_ns is fio's completion latency (the histogram of its bins,
// exact); slat_ns and lat_ns fio's means (weighted by each run's
// operations: fio's minimums, maximums and percentiles of those are not
// kept); ctx its context switches, summed over the runs; disk_util the
// highest utilisation fio reported of the devices, per run.
func fioFigures(j *fioJob, runs []*metrics.Result) {
	j.Iolab.Latency = "fio's own: clat_ns its completion latency (its bins, merged exactly), slat_ns and lat_ns the means it reported (weighted by operations; their percentiles are not kept); ctx summed over the runs"
	for d, out := range [2]*fioDir{&j.Read, &j.Write} {
		op := metrics.Op(d).String() + "."
		var slat, lat, n float64
		for _, r := range runs {
			ops := float64(r.ByOp[d].Ops)
			slat += r.Extra[op+"fio_slat_mean_ns"] * ops
			lat += r.Extra[op+"fio_lat_mean_ns"] * ops
			n += ops
		}
		if n > 0 {
			out.Slat = fioLat{Mean: slat / n, N: int64(n)}
			out.Lat = fioLat{Mean: lat / n, N: int64(n)}
		}
	}
	j.Ctx = 0
	for _, r := range runs {
		j.Ctx += int64(r.Extra["fio_ctx"])
	}
}

// fioDiskUtil is the highest disk utilisation fio reported in a fio-run
// cell's runs (0: none).
func fioDiskUtil(c store.Cell, runs []*metrics.Result) float64 {
	top := 0.0
	if isFioRun(c) {
		for _, r := range runs {
			top = max(top, r.Extra["fio_disk_util_pct"])
		}
	}
	return top
}

// jobsOf is how many of fio's jobs a cell ran: numjobs, times the jobs of
// a group (a jobs parameter names them; numjobs, when they share it).
func jobsOf(params map[string]string) int {
	n, err := strconv.Atoi(params["numjobs"])
	if err != nil || n < 1 {
		n = 1
	}
	if names := params["jobs"]; names != "" {
		n *= strings.Count(names, ",") + 1
	}
	return n
}
