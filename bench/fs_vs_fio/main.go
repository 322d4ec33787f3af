// Command fs_vs_fio runs iolab and fio on the same jobs and file, in
// alternation, and prints for each job the IOPS ratio iolab/fio and the
// CPU-seconds per million operations of each (whole process, user + sys).
//
//	go run ./bench/fs_vs_fio [-pairs 3] [-runtime 10s] [-dir /var/tmp]
//
// Jobs (issue 2, then issue 14's untuned ones; see jobs):
//
//	a  4K randread, psync, numjobs 4, 256 MiB file in the page cache
//	b  4K randrw 70/30, iodepth 32, numjobs 4, 256 MiB file, direct I/O (io_uring on both sides)
//	c  16K randwrite, iodepth 8, numjobs 2, direct    d  1M sequential read, iodepth 4, direct
//	e  4K sequential write, fsync after every write   f  4K randread QD1 in the page cache
//	m  4K randread QD1 beside 4K randwrite QD1, cached: one job file, its jobs at once (ratio of the sums, and per job)
//	n  fio's null engine: no I/O, the harness's ceiling
//	p, q, r  the null engine paced at 1k, 10k and 100k operations a second
//	         (rate_iops): the generator's own cost in open loop, per paced
//	         operation (iolab also times each from its place on the schedule)
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/iolab/iolab/bench/internal/harness"
	"github.com/iolab/iolab/internal/stats"
)

type job struct {
	name string
	// common holds the options both tools take in the same form.
	common []string
	engine string
	// warmCache reads the file first so it is in the page cache.
	warmCache bool
	// jobFile, when set, is a job file both tools run (its jobs at the
	// same time), of the file (%[1]s) and the runtime in ms (%[2]d):
	// the ratio is of the totals, and each job's is printed.
	jobFile string
}

var jobs = []job{
	{name: "a: 4k randread psync x4, cached", engine: "psync", warmCache: true,
		common: []string{"--rw=randread", "--bs=4k", "--numjobs=4", "--iodepth=1", "--invalidate=0"}},
	{name: "b: 4k randrw 70/30 QD32 x4, direct", engine: "io_uring",
		common: []string{"--rw=randrw", "--rwmixread=70", "--bs=4k", "--numjobs=4", "--iodepth=32", "--direct=1"}},
	// Job b with both tools' jobs as threads of one process (fio's thread
	// option): under contention threads share one session's CPU where
	// processes each have their own (docs/fs.md).
	{name: "t: job b, --thread (both)", engine: "io_uring",
		common: []string{"--rw=randrw", "--rwmixread=70", "--bs=4k", "--numjobs=4", "--iodepth=32", "--direct=1", "--thread"}},
	// Jobs at once (issue 46 item 1): a reader beside a writer on one
	// cached file, each a job of a job file, per job.
	{name: "m: 4k randread QD1 beside 4k randwrite QD1, cached, one job file", engine: "psync", warmCache: true,
		jobFile: "[global]\nfilename=%[1]s\nsize=256m\nioengine=psync\nbs=4k\ninvalidate=0\ntime_based\nruntime=%[2]dms\n" +
			"[reader]\nrw=randread\n[writer]\nrw=randwrite\n"},
	// Jobs iolab was never tuned for (issue 14).
	{name: "c: 16k randwrite QD8 x2, direct", engine: "io_uring",
		common: []string{"--rw=randwrite", "--bs=16k", "--numjobs=2", "--iodepth=8", "--direct=1"}},
	{name: "d: 1M sequential read QD4, direct", engine: "io_uring",
		common: []string{"--rw=read", "--bs=1m", "--numjobs=1", "--iodepth=4", "--direct=1"}},
	{name: "e: 4k sequential write, fsync=1", engine: "psync",
		common: []string{"--rw=write", "--bs=4k", "--numjobs=1", "--iodepth=1", "--fsync=1"}},
	{name: "f: 4k randread QD1, cached", engine: "psync", warmCache: true,
		common: []string{"--rw=randread", "--bs=4k", "--numjobs=1", "--iodepth=1", "--invalidate=0"}},
	// fio's null engine: no I/O at all, the harness's own ceiling.
	{name: "n: null engine, 4k randread QD1", engine: "null",
		common: []string{"--rw=randread", "--bs=4k", "--numjobs=1", "--iodepth=1"}},
	// Open loop: what pacing costs the generator itself, at three rates.
	{name: "p: null engine paced, rate_iops 1000", engine: "null",
		common: []string{"--rw=randread", "--bs=4k", "--numjobs=1", "--iodepth=1", "--rate_iops=1000"}},
	{name: "q: null engine paced, rate_iops 10000", engine: "null",
		common: []string{"--rw=randread", "--bs=4k", "--numjobs=1", "--iodepth=1", "--rate_iops=10000"}},
	{name: "r: null engine paced, rate_iops 100000", engine: "null",
		common: []string{"--rw=randread", "--bs=4k", "--numjobs=1", "--iodepth=1", "--rate_iops=100000"}},
}

type sample struct {
	ops  float64   // ops per second
	cpuS float64   // process CPU seconds
	ops0 float64   // operations done
	jobs []float64 // each job's ops per second, of a job file's jobs
	// responseP50Ns, of iolab's paced runs of the null engine, is how late
	// it starts what it paces: what the generator adds to a response time.
	responseP50Ns float64
}

func main() { harness.Main(bench) }

func bench() {
	pairs := flag.Int("pairs", 8, "alternating iolab/fio pairs per job (6 or more give a 95% CI of the median ratio)")
	runtime := flag.Duration("runtime", 5*time.Second, "duration of each run")
	dir := flag.String("dir", "/var/tmp", "directory on the disk under test")
	iolabBin := flag.String("iolab", "", "iolab binary (default: build ./cmd/iolab)")
	only := flag.String("job", "", "run only the jobs whose names start with one of these letters (e.g. cdef)")
	flag.Parse()

	work := harness.WorkDir(*dir, "fs_vs_fio-")
	bin := *iolabBin
	if bin == "" {
		bin = harness.BuildIolab(work)
	}
	file := filepath.Join(work, "bench.dat")
	run("fio", "--name=layout", "--filename="+file, "--size=256m", "--rw=write", "--bs=1m", "--output=/dev/null")
	fioVersion := strings.TrimSpace(string(run("fio", "--version")))
	fmt.Printf("iolab vs %s, %d pairs x %v per job, file %s (256 MiB)\n\n", fioVersion, *pairs, *runtime, file)

	for _, j := range jobs {
		if *only != "" && !strings.ContainsAny(j.name[:1], *only) {
			continue
		}
		var ratios []float64
		var fioS, iolabS []sample
		fmt.Printf("%s\n", j.name)
		for i := 0; i < *pairs; i++ {
			if j.warmCache {
				warm(file)
			}
			order := []string{"fio", "iolab"}
			if i%2 == 1 {
				order = []string{"iolab", "fio"}
			}
			var f, o sample
			for _, tool := range order {
				switch {
				case tool == "fio" && j.jobFile != "":
					f = runFioFile(j, file, *runtime, work)
				case tool == "fio":
					f = runFio(j, file, *runtime)
				case j.jobFile != "":
					o = runIolabFile(bin, j, file, *runtime, work)
				default:
					o = runIolab(bin, j, file, *runtime, work)
				}
			}
			fioS, iolabS = append(fioS, f), append(iolabS, o)
			ratios = append(ratios, o.ops/f.ops)
			fmt.Printf("  pair %d (%s first): fio %8.0f IOPS  iolab %8.0f IOPS  ratio %.3f", i+1, order[0], f.ops, o.ops, o.ops/f.ops)
			for k := range min(len(f.jobs), len(o.jobs)) {
				fmt.Printf("; job %d: fio %.0f iolab %.0f (%.3f)", k+1, f.jobs[k], o.jobs[k], o.jobs[k]/f.jobs[k])
			}
			fmt.Println()
		}
		sum := stats.Summarize(ratios)
		ci := "n/a (fewer than 6 pairs)"
		if sum.CI95 != nil {
			ci = fmt.Sprintf("[%.3f, %.3f]", sum.CI95[0], sum.CI95[1])
		}
		fmt.Printf("  => IOPS ratio iolab/fio: median %.3f, 95%% CI %s, min %.3f, max %.3f; CPU-s per M ops: iolab %.2f, fio %.2f\n",
			sum.Median, ci, sum.Min, sum.Max, cpuPerMillion(iolabS), cpuPerMillion(fioS))
		var lateness []float64
		for _, x := range iolabS {
			if x.responseP50Ns > 0 {
				lateness = append(lateness, x.responseP50Ns/1e3)
			}
		}
		if len(lateness) > 0 && j.engine == "null" {
			fmt.Printf("     iolab's response time p50 on the null engine (how late it starts what it paces): median %.0f µs over the pairs\n", stats.Summarize(lateness).Median)
		}
		fmt.Println()
	}
}

func run(name string, args ...string) []byte {
	out, err := harness.Output(exec.Command(name, args...))
	if err != nil {
		harness.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return out
}

func warm(file string) {
	f, err := os.Open(file)
	if err != nil {
		harness.Fatal(err)
	}
	defer f.Close()
	_, _ = io.Copy(io.Discard, f)
}

// measure runs a command and returns its stdout and CPU seconds.
func measure(name string, args ...string) ([]byte, float64) {
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := harness.Run(cmd); err != nil {
		harness.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return out.Bytes(), harness.CPUSeconds(cmd)
}

func runFio(j job, file string, runtime time.Duration) sample {
	args := append([]string{"--name=bench", "--filename=" + file, "--size=256m", "--ioengine=" + j.engine,
		"--group_reporting", "--time_based", fmt.Sprintf("--runtime=%dms", runtime.Milliseconds()), "--output-format=json"}, j.common...)
	out, cpu := measure("fio", args...)
	var r struct {
		Jobs []struct {
			Read, Write struct {
				IOPS     float64 `json:"iops"`
				TotalIOs float64 `json:"total_ios"`
			}
		}
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Jobs) != 1 {
		harness.Fatalf("fio output: %v", err)
	}
	jr := r.Jobs[0]
	return sample{ops: jr.Read.IOPS + jr.Write.IOPS, cpuS: cpu, ops0: jr.Read.TotalIOs + jr.Write.TotalIOs}
}

func runIolab(bin string, j job, file string, runtime time.Duration, work string) sample {
	args := append([]string{"fs", "--filename=" + file, "--size=256m", "--ioengine=" + j.engine,
		fmt.Sprintf("--runtime=%dms", runtime.Milliseconds()), "--rounds=1", "--warmup=0", "--json",
		"--db=" + filepath.Join(work, "bench.db")}, j.common...)
	out, cpu := measure(bin, args...)
	var r struct {
		Runs []struct {
			OpsPerS   float64 `json:"ops_per_s"`
			DurationS float64 `json:"duration_s"`
			Status    string  `json:"status"`
			Read      *struct {
				Response *struct{ P50 float64 } `json:"response_ns"`
			} `json:"read"`
		}
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Runs) != 1 || r.Runs[0].Status != "ok" {
		harness.Fatalf("iolab output: %v\n%s", err, out)
	}
	s := sample{ops: r.Runs[0].OpsPerS, cpuS: cpu, ops0: r.Runs[0].OpsPerS * r.Runs[0].DurationS}
	if rd := r.Runs[0].Read; rd != nil && rd.Response != nil {
		s.responseP50Ns = rd.Response.P50
	}
	return s
}

func cpuPerMillion(s []sample) float64 {
	var cpu, ops float64
	for _, x := range s {
		cpu += x.cpuS
		ops += x.ops0
	}
	return cpu / ops * 1e6
}

// writeJobFile writes j's job file for file and runtime into work.
func writeJobFile(j job, file string, runtime time.Duration, work string) string {
	path := filepath.Join(work, "bench.fio")
	if err := os.WriteFile(path, fmt.Appendf(nil, j.jobFile, file, runtime.Milliseconds()), 0o644); err != nil {
		harness.Fatal(err)
	}
	return path
}

// runFioFile runs j's job file by fio: each job's IOPS, and their sum.
func runFioFile(j job, file string, runtime time.Duration, work string) sample {
	out, cpu := measure("fio", "--output-format=json", writeJobFile(j, file, runtime, work))
	var r struct {
		Jobs []struct {
			Read, Write struct {
				IOPS     float64 `json:"iops"`
				TotalIOs float64 `json:"total_ios"`
			}
		}
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Jobs) == 0 {
		harness.Fatalf("fio output: %v", err)
	}
	s := sample{cpuS: cpu}
	for _, jr := range r.Jobs {
		s.ops, s.ops0 = s.ops+jr.Read.IOPS+jr.Write.IOPS, s.ops0+jr.Read.TotalIOs+jr.Write.TotalIOs
		s.jobs = append(s.jobs, jr.Read.IOPS+jr.Write.IOPS)
	}
	return s
}

// runIolabFile runs j's job file on iolab's own engine (its jobs at once).
func runIolabFile(bin string, j job, file string, runtime time.Duration, work string) sample {
	out, cpu := measure(bin, "fs", writeJobFile(j, file, runtime, work), "--rounds=1", "--warmup=0", "--json", "--db="+filepath.Join(work, "bench.db"))
	var r struct {
		Runs []struct {
			DurationS float64            `json:"duration_s"`
			Status    string             `json:"status"`
			Extra     map[string]float64 `json:"extra"`
		}
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Runs) != 1 || r.Runs[0].Status != "ok" {
		harness.Fatalf("iolab output: %v\n%s", err, out)
	}
	s := sample{cpuS: cpu}
	for n := 1; ; n++ {
		rate, ok := r.Runs[0].Extra[fmt.Sprintf("job.%d.ops_per_s", n)]
		if !ok {
			break
		}
		s.ops, s.ops0 = s.ops+rate, s.ops0+r.Runs[0].Extra[fmt.Sprintf("job.%d.ops", n)]
		s.jobs = append(s.jobs, rate)
	}
	return s
}
