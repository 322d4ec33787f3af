package cli

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// fsJobReport is what the job file tests read of `iolab fs --json`.
type fsJobReport struct {
	Cells []struct {
		Name   string            `json:"name"`
		Params map[string]string `json:"params"`
	} `json:"cells"`
	Runs []struct {
		Cell, Status string
		Read, Write  struct{ Ops int64 }
	} `json:"runs"`
}

// runFioJob runs `iolab fs JOBFILE` for one measured round with flags and
// returns the report and what went to stderr.
func runFioJob(t *testing.T, dir, job string, flags ...string) (fsJobReport, string) {
	t.Helper()
	args := append([]string{"fs", job, "--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(dir, "x.db")}, flags...)
	out, stderr, err := iolab(t, context.Background(), args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var r fsJobReport
	decodeInto(t, out, &r)
	return r, stderr
}

// A fio user's job file runs as written: [global] first, the job section
// over it, the command line over both, fio's aliases and engines mapped,
// ${VARS} expanded; what runs differently is said.
func TestFioJobFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("IOLAB_TEST_DIR", dir)
	job := filepath.Join(dir, "team.fio")
	writeFiles(t, dir, map[string]string{"team.fio": `; as the team runs it
[global]
ioengine=libaio
direct=0
blocksize=4k
size=2m
runtime=1
group_reporting
gtod_reduce=1

# the job
[randrw]
readwrite=randrw
rwmixwrite=30
bs=8k
iodepth=8
numjobs=2
directory=${IOLAB_TEST_DIR}
`})
	r, stderr := runFioJob(t, dir, job, "--iodepth=4")
	if len(r.Cells) != 1 || len(r.Runs) != 1 || r.Runs[0].Status != "ok" || r.Cells[0].Name != "randrw" {
		t.Fatalf("report %+v", r)
	}
	// runtime without time_based: a bound on a job that does its size,
	// as fio reads it.
	want := map[string]string{"rw": "randrw", "rwmixread": "70", "bs": "8k", "iodepth": "4", "numjobs": "2", "ioengine": "io_uring",
		"size": "2m", "runtime": "1s", "time_based": "0"}
	for k, v := range want {
		if got := r.Cells[0].Params[k]; got != v {
			t.Errorf("param %s = %q, want %q (all: %v)", k, got, v, r.Cells[0].Params)
		}
	}
	notes := []string{"ioengine=libaio runs as iolab's io_uring"}
	for _, note := range append(notes, "gtod_reduce=1: no effect in iolab (it times every operation)") {
		if strings.Count(stderr, note) != 1 {
			t.Errorf("stderr has %q %d times, want once:\n%s", note, strings.Count(stderr, note), stderr)
		}
	}
	// Options the command line overrides draw no note.
	_, stderr = runFioJob(t, dir, job, "--ioengine=psync", "--runtime=1s")
	for _, note := range notes {
		if strings.Contains(stderr, note) {
			t.Errorf("stderr has %q for an option the command line overrode:\n%s", note, stderr)
		}
	}
}

// Jobs fio runs one after another (stonewall) become the cells of one
// experiment, each named by its section; job flags on the command line go
// to every job.
func TestFioJobFileStonewalledJobs(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"seq.fio": `[global]
directory=` + dir + `
size=1m
timeout=1s	; fio's runtime
time_based
bs=64k # a comment after it

[seq-write]
rw=write

[seq-read]
stonewall
rw=read
buffered=0

[rand-read]
wait_for=seq-read
rw=randread
bs=4k

[rand-read-2]
wait_for_previous
rw=randread
bs=4k
`})
	job := filepath.Join(dir, "seq.fio")
	r, _ := runFioJob(t, dir, job, "--iodepth=2")
	// fio's timeout is its runtime, buffered=0 its direct=1.
	want := map[string][3]string{"seq-write": {"write", "64k", "0"}, "seq-read": {"read", "64k", "1"}, "rand-read": {"randread", "4k", "0"},
		"rand-read-2": {"randread", "4k", "0"}}
	if len(r.Cells) != 4 || len(r.Runs) != 4 {
		t.Fatalf("%d cells, %d runs; want 4 and 4", len(r.Cells), len(r.Runs))
	}
	for _, c := range r.Cells {
		w, ok := want[c.Name]
		if !ok || c.Params["rw"] != w[0] || c.Params["bs"] != w[1] || c.Params["direct"] != w[2] || c.Params["iodepth"] != "2" || c.Params["runtime"] != "1s" {
			t.Errorf("cell %s: %v", c.Name, c.Params)
		}
	}
	for _, run := range r.Runs {
		if run.Status != "ok" {
			t.Errorf("run of %s: %s", run.Cell, run.Status)
		}
	}
	_, _, err := iolab(t, context.Background(), "fs", job, "--name=x", "--db", filepath.Join(dir, "x.db"))
	if err == nil || !strings.Contains(err.Error(), "--name: ") || ExitCode(err) != 2 {
		t.Errorf("--name with 3 jobs: %v", err)
	}
}

// A fio command line runs unchanged: --name labels the result, and the
// options that describe what iolab always does are accepted.
func TestFioCommandLine(t *testing.T) {
	dir := t.TempDir()
	out, stderr, err := iolab(t, context.Background(), "fs", "--name=job1", "--directory", dir, "--rw=randread", "--bs=4k",
		"--size=1m", "--runtime=1", "--time_based", "--group_reporting", "--thread", "--rounds=1", "--warmup=0", "--json",
		"--db", filepath.Join(dir, "x.db"))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var r struct {
		Cells []struct{ Name string } `json:"cells"`
	}
	decodeInto(t, out, &r)
	if len(r.Cells) != 1 || r.Cells[0].Name != "job1" {
		t.Fatalf("cells %+v, want one named job1", r.Cells)
	}
}

// What a job file holds that iolab cannot run as fio would is a usage
// error naming the file and line.
func TestFioJobFileErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ name, text, want string }{
		{"unknown option", "[global]\nsize=1m\n[j]\nzonemode=zbd\n", "bad.fio:4: zonemode: not an option iolab's engines take; fio runs the file as written with --ioengine=fio. iolab's engines take "},
		{"no job", "[global]\nrw=read\n", "bad.fio: no job section"},
		{"before a section", "rw=read\n[j]\n", "bad.fio:1: \"rw=read\" comes before any [section]"},
		{"bad size", "[j]\nbs=4kk\n", "bad.fio:2: bs=4kk:"},
		{"bad engine", "[j]\nioengine=mmap\n", "bad.fio:2: ioengine=mmap: iolab runs io_uring, libaio, null, psync"},
		{"unset variable", "[j]\ndirectory=${IOLAB_NO_SUCH_VARIABLE}\n", "bad.fio:2: directory: environment variable IOLAB_NO_SUCH_VARIABLE is not set"},
		// fio reads 4KiB as 4000 bytes: refused with both spellings.
		// fio: "time_based requires a runtime/timeout setting", then the size once.
		// fio starts a job waiting for one of several when that one ends.
		{"wait_for one of a group", "[global]\nsize=64k\n[a]\nrw=read\n[b]\nrw=read\n[c]\nwait_for=a\nrw=read\n",
			"bad.fio:7: wait_for=a: fio would start [c] when [a] ends, beside the rest of its group (a, b); iolab starts a job after a whole group: run the file with --ioengine=fio"},
		{"wait_for no job before", "[global]\nsize=64k\n[a]\nrw=read\n[c]\nwait_for=z\nrw=read\n", "bad.fio:5: wait_for=z: not the job before it (a)"},
		{"buffered", "[j]\nbuffered=yes\n", "bad.fio:2: buffered=yes: want 1 or 0"},
		{"time_based alone", "[global]\ntime_based\n[j]\nsize=64k\n", "bad.fio:2: time_based without runtime: fio says"},
		{"IEC size", "[j]\nbs=4KiB\n", "bad.fio:2: bs=4KiB: 4KiB is 4000 bytes to fio (IEC suffixes count in 1000s there) and 4096 to most tools: write 4k for 4096, or 4000"},
	}
	for _, tc := range tests {
		path := filepath.Join(dir, "bad.fio")
		if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := iolab(t, context.Background(), "fs", path, "--directory", dir, "--db", filepath.Join(dir, "x.db"))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || ExitCode(err) != 2 {
			t.Errorf("%s: %v (exit %d), want one line with %q", tc.name, err, ExitCode(err), tc.want)
		}
	}
	_, _, err := iolab(t, context.Background(), "fs", filepath.Join(dir, "missing.fio"), "--db", filepath.Join(dir, "x.db"))
	if err == nil || !strings.Contains(err.Error(), "missing.fio") || ExitCode(err) != 2 {
		t.Errorf("missing job file: %v", err)
	}
	_, _, err = iolab(t, context.Background(), "fs", "--directory", dir, "--size", "64k", "--time_based", "--db", filepath.Join(dir, "x.db"))
	if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "--time_based: needs --runtime") {
		t.Errorf("--time_based without --runtime: %v", err)
	}
}

// A fio command line means what it means in fio: psync with iodepth 8 has
// one operation in flight, said in a warning and in the cell's name;
// fio's libaio runs as io_uring.
func TestFioEnginesOnTheCommandLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		engine, name, iodepth, ran, code string
	}{
		{"psync", "randread-4k", "1", "psync", "iodepth-capped"},
		{"psync-pool", "randread-4k-qd8x1", "8", "psync-pool", ""},
		{"libaio", "randread-4k-qd8x1", "8", "io_uring", "fio-engine"},
	} {
		out, stderr, err := iolab(t, context.Background(), "fs", "--directory", dir, "--rw=randread", "--size=1m", "--runtime=200ms",
			"--ioengine="+tc.engine, "--iodepth=8", "--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(dir, "x.db"))
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.engine, err, stderr)
		}
		var r struct {
			Cells []struct {
				Name     string
				Params   map[string]string
				Warnings []struct{ Code string }
			}
		}
		decodeInto(t, out, &r)
		c := r.Cells[0]
		if c.Name != tc.name || c.Params["iodepth"] != tc.iodepth || c.Params["ioengine"] != tc.ran {
			t.Errorf("--ioengine %s --iodepth 8: cell %s %v, want %s with iodepth %s on %s", tc.engine, c.Name, c.Params, tc.name, tc.iodepth, tc.ran)
		}
		found := false
		for _, w := range c.Warnings {
			found = found || w.Code == tc.code
		}
		if tc.code != "" && !found {
			t.Errorf("--ioengine %s: warnings %+v, want %s", tc.engine, c.Warnings, tc.code)
		}
	}
}

// --ramp_time runs the job before measuring it, as fio does: the run's
// measured window is the runtime after the ramp.
func TestRampTime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, stderr, err := iolab(t, context.Background(), "fs", "--directory", dir, "--rw=randread", "--size=1m", "--ramp_time=400ms",
		"--runtime=300ms", "--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(dir, "x.db"))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var r struct {
		Cells []struct{ Params map[string]string }
		Runs  []struct {
			DurationS float64 `json:"duration_s"`
			OpsPerS   float64 `json:"ops_per_s"`
		}
	}
	decodeInto(t, out, &r)
	if r.Cells[0].Params["ramp_time"] != "400ms" || len(r.Runs) != 1 || r.Runs[0].DurationS < 0.3 || r.Runs[0].DurationS > 0.65 || r.Runs[0].OpsPerS <= 0 {
		t.Errorf("params %v, runs %+v: want ramp_time 400ms and a measured window of about 300ms", r.Cells[0].Params, r.Runs)
	}
}

// fio's verify, file, pacing and sync options run from a job file as from
// the command line; a byte damaged on disk fails the run that reads it,
// naming its offset, and the failed run is stored as failed.
func TestFioVerifyFilesAndPacing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"v.fio": `[global]
directory=` + data + `
bs=4k
[writer]
rw=write
nrfiles=3
filesize=128k
openfiles=2
rate_iops=,20000
rate_process=poisson
thinktime=50
thinktime_blocks=16
sync_file_range=write:8
verify=crc32c-intel
verify_backlog=8
`})
	r, stderr := runFioJob(t, dir, filepath.Join(dir, "v.fio"))
	if len(r.Runs) != 1 || r.Runs[0].Status != "ok" {
		t.Fatalf("runs %+v\n%s", r.Runs, stderr)
	}
	want := map[string]string{"nrfiles": "3", "filesize": "128k", "openfiles": "2", "rate_iops": ",20000", "rate_process": "poisson", "thinktime": "50µs",
		"sync_file_range": "write:8", "verify": "crc32c", "verify_backlog": "8"}
	for k, v := range want {
		if got := r.Cells[0].Params[k]; got != v {
			t.Errorf("param %s = %q, want %q (all: %v)", k, got, v, r.Cells[0].Params)
		}
	}
	// Damage the middle file; a read job with --verify finds it.
	bad := int64(70_001)
	f, err := os.OpenFile(filepath.Join(data, "iolab.0.1"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0}, bad); err != nil {
		t.Fatal(err)
	}
	f.Close()
	db := filepath.Join(dir, "x.db")
	_, stderr, err = iolab(t, context.Background(), "fs", "--directory", data, "--rw=read", "--nrfiles=3", "--filesize=128k",
		"--verify=crc32c", "--rounds=1", "--warmup=0", "--json", "--db", db)
	if err == nil || !strings.Contains(err.Error(), "iolab.0.1: block at offset 69632 (4k): checksum mismatch; byte 70001 (block +369)") {
		t.Fatalf("read of a damaged file: %v\n%s", err, stderr)
	}
	out, _, err := iolab(t, context.Background(), "show", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var shown fsJobReport
	decodeInto(t, out, &shown)
	if len(shown.Runs) != 1 || shown.Runs[0].Status == "ok" {
		t.Errorf("the failed verify run was stored as %+v", shown.Runs)
	}
}

// --output-format=json+ writes fio's own JSON shape: a tool that reads fio
// (fio's fio_jsonplus_clat2csv, from Debian's fio package) reads it, and
// its counts are the stored runs' sums; json is the same without bins.
func TestFioShapedJSONOutput(t *testing.T) {
	t.Parallel()
	need(t, "fio_jsonplus_clat2csv")
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	out, stderr, err := iolab(t, context.Background(), "fs", "--directory", dir, "--rw=write", "--bs=4k", "--size=1m", "--fsync=16",
		"--rounds=2", "--warmup=1", "--output-format=json+", "--db", db)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var doc struct {
		Version string `json:"fio version"`
		Jobs    []struct {
			Jobname    string
			Error      int
			JobOptions map[string]string `json:"job options"`
			Read       struct {
				TotalIOs int64 `json:"total_ios"`
			}
			Write struct {
				IOBytes  int64   `json:"io_bytes"`
				TotalIOs int64   `json:"total_ios"`
				IOPS     float64 `json:"iops"`
				Runtime  int64
				Clat     struct {
					N          int64
					Percentile map[string]int64
					Bins       map[string]int64
				} `json:"clat_ns"`
			}
			Sync struct {
				TotalIOs int64 `json:"total_ios"`
			}
			LatencyUs map[string]float64 `json:"latency_us"`
			LatencyNs map[string]float64 `json:"latency_ns"`
			LatencyMs map[string]float64 `json:"latency_ms"`
			Iolab     struct{ Runs []int64 }
		}
	}
	decodeInto(t, out, &doc)
	if len(doc.Jobs) != 1 {
		t.Fatalf("%d jobs", len(doc.Jobs))
	}
	j := doc.Jobs[0]
	// Two measured runs of 256 writes and 15 fsyncs each (fio's count: none
	// after the last write); the warm-up is not merged.
	var binned int64
	for _, n := range j.Write.Clat.Bins {
		binned += n
	}
	var share float64
	for _, m := range []map[string]float64{j.LatencyNs, j.LatencyUs, j.LatencyMs} {
		for _, v := range m {
			share += v
		}
	}
	if j.Error != 0 || j.Write.TotalIOs != 512 || j.Write.IOBytes != 2<<20 || j.Sync.TotalIOs != 30 || j.Read.TotalIOs != 0 ||
		j.Write.Clat.N != 512 || binned != 512 || len(j.Iolab.Runs) != 2 || j.Write.IOPS <= 0 || j.Write.Runtime <= 0 ||
		j.Write.Clat.Percentile["99.000000"] <= 0 || j.JobOptions["fsync"] != "16" || math.Abs(share-100) > 0.01 {
		t.Fatalf("fio json+: %+v", j)
	}
	path := filepath.Join(dir, "out.json")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{path, filepath.Join(dir, "lat.csv")}, {path, filepath.Join(dir, "lat.csv"), "--validate"}} {
		if b, err := exec.Command("fio_jsonplus_clat2csv", args...).CombinedOutput(); err != nil {
			t.Fatalf("fio_jsonplus_clat2csv %v: %v\n%s", args, err, b)
		}
	}
	csv, err := os.ReadFile(filepath.Join(dir, "lat_job0.csv"))
	if err != nil || !strings.Contains(string(csv), ", 512, 1.0, ") {
		t.Errorf("fio's CSV does not end at 512 writes: %v\n%.300s", err, csv)
	}
	// The same experiment as fio's json: no bins.
	out, _, err = iolab(t, context.Background(), "show", "--db", db, "--format", "fio")
	if err != nil || strings.Contains(out, `"bins"`) || !strings.Contains(out, `"total_ios": 512`) {
		t.Errorf("show --format fio: %v\n%.400s", err, out)
	}
}

// A job-file run keeps the job file as it ran in its stored command, and
// a command-line flag that overrides one of its values is said (fio keeps
// the job file's).
func TestFioJobFileIsStoredAndOverridesAreSaid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	job := "[global]\nnumjobs=2\nbs=4k\nsize=256k\nio_size=64k\n[reader]\nrw=randread\n"
	writeFiles(t, dir, map[string]string{"job.fio": job})
	db := filepath.Join(dir, "x.db")
	_, stderr, err := iolab(t, context.Background(), "fs", filepath.Join(dir, "job.fio"), "--directory", dir, "--numjobs=1", "--bs=4k",
		"--rounds", "1", "--warmup", "0", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "job.fio:2: numjobs=2 in the job file; --numjobs=1 on the command line wins here (fio would keep the job file's)") ||
		strings.Contains(stderr, "bs=4k in the job file") {
		t.Errorf("the override is not said, or an equal value is:\n%s", stderr)
	}
	out, _, err := iolab(t, context.Background(), "show", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Command string }
	decodeInto(t, out, &r)
	if !strings.Contains(r.Command, "job.fio as it ran:\n"+strings.TrimRight(job, "\n")) {
		t.Errorf("stored command %q does not carry the job file", r.Command)
	}
}

// --ioengine=fio runs fio with the job's own engine — a job file's
// libaio reaches fio, as does fio:libaio on the command line — and fio's
// own figures (slat, clat, lat, disk util) are kept with the run.
func TestFioRunsTheJobsEngine(t *testing.T) {
	t.Parallel()
	need(t, "fio")
	fio, _ := exec.LookPath("fio")
	dir := t.TempDir()
	argsLog := filepath.Join(dir, "fio-args")
	writeFiles(t, dir, map[string]string{
		// What fio is given: its arguments, and a job file on its stdin.
		"fio.sh":  "#!/bin/sh\necho \"$@\" >> " + argsLog + "\ntee -a " + argsLog + " | " + fio + " \"$@\"\n",
		"job.fio": "[global]\nioengine=libaio\niodepth=4\nbs=4k\nsize=256k\n[reader]\nrw=randread\n",
	})
	if err := os.Chmod(filepath.Join(dir, "fio.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"fs", filepath.Join(dir, "job.fio"), "--ioengine=fio"},
		{"fs", "--ioengine=fio:libaio", "--rw=randread", "--iodepth=4", "--bs=4k", "--size=256k"},
	} {
		os.Remove(argsLog)
		out, stderr, err := iolab(t, context.Background(), append(args, "--directory", dir, "--fio", filepath.Join(dir, "fio.sh"),
			"--runtime=300ms", "--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(dir, "x.db"))...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr)
		}
		ran, _ := os.ReadFile(argsLog)
		if !strings.Contains(string(ran), "ioengine=libaio") {
			t.Errorf("%v: fio ran with %s, not the job's libaio", args, ran)
		}
		var r struct {
			Cells []struct{ Params map[string]string }
			Runs  []struct{ Extra map[string]float64 }
		}
		decodeInto(t, out, &r)
		if r.Cells[0].Params["ioengine"] != "fio:libaio" {
			t.Errorf("%v: stored ioengine %q, want fio:libaio", args, r.Cells[0].Params["ioengine"])
		}
		x := r.Runs[0].Extra
		if x["read.fio_clat_mean_ns"] <= 0 || x["read.fio_lat_mean_ns"] < x["read.fio_clat_mean_ns"] || x["read.fio_clat_p99_ns"] <= 0 || x["fio_ctx"] <= 0 {
			t.Errorf("%v: fio's own figures not kept: %v", args, x)
		}
		// And under fio's own names in the fio-shaped JSON (issue 46
		// item 4): its slat, clat and lat, its context switches.
		shown, _, err := iolab(t, context.Background(), "show", "--db", filepath.Join(dir, "x.db"), "--format", "fio")
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Jobs []struct {
				Ctx  int64
				Read struct {
					SlatNs struct{ Mean float64 } `json:"slat_ns"`
					ClatNs struct {
						Mean       float64
						Percentile map[string]int64
					} `json:"clat_ns"`
					LatNs struct{ Mean float64 } `json:"lat_ns"`
				}
				Iolab struct{ Latency string }
			}
		}
		decodeInto(t, shown, &doc)
		j := doc.Jobs[0]
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) } // a mean weighted by one run's operations
		if j.Ctx != int64(x["fio_ctx"]) || !near(j.Read.SlatNs.Mean, x["read.fio_slat_mean_ns"]) || !near(j.Read.LatNs.Mean, x["read.fio_lat_mean_ns"]) ||
			j.Read.ClatNs.Mean <= 0 || len(j.Read.ClatNs.Percentile) == 0 || !strings.HasPrefix(j.Iolab.Latency, "fio's own") {
			t.Errorf("%v: fio's figures in the fio-shaped JSON: %+v, want ctx %v, slat %v, lat %v", args, j, x["fio_ctx"], x["read.fio_slat_mean_ns"], x["read.fio_lat_mean_ns"])
		}
	}
}

// fio's other names for its options work on the command line as in a job
// file: --blocksize is --bs, --readwrite --rw.
func TestFioLongNamesOnTheCommandLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, stderr, err := iolab(t, context.Background(), "fs", "--directory", dir, "--blocksize", "8k", "--readwrite", "randread", "--size", "64k",
		"--rounds", "1", "--warmup", "0", "--db", filepath.Join(dir, "x.db"), "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var r struct {
		Cells []struct{ Params map[string]string }
	}
	decodeInto(t, out, &r)
	if len(r.Cells) != 1 || r.Cells[0].Params["bs"] != "8k" || r.Cells[0].Params["rw"] != "randread" {
		t.Errorf("cells %+v, want bs 8k and rw randread", r.Cells)
	}
}

// --ioengine=fio runs a job file as fio reads it (issue 46 item 3): jobs
// at the same time (no stonewall) and a stonewalled group after them,
// each job on its own under the file's group_reporting, named as its
// name= says,
// options and an engine iolab's own engines do not take, in rounds; each
// job's figures kept as job.N.*, the run's operations every job's; of the
// command line only what shortens a job or points it elsewhere reaches
// fio, anything else refused in one line; a secret of the file masked in
// what fio's refusal quotes.
func TestFioRunsAJobFileAsWritten(t *testing.T) {
	t.Parallel()
	need(t, "fio")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"mixed.fio": `[global]
name=not-a-job-name
bs=4k
size=256k
group_reporting
norandommap
random_distribution=zipf:1.2

[reader]
rw=randread
number_ios=20

[writer]
name=scribe
ioengine=mmap
rw=randwrite
number_ios=10

[after]
stonewall
rw=read
number_ios=30
`, "http.fio": "[global]\nhttp_pass=hunter2-in-the-file\n[get]\nioengine=http\nfilename=/bucket/obj\nrw=read\nsize=64k\n"})
	job, db := filepath.Join(dir, "mixed.fio"), filepath.Join(dir, "x.db")
	out, stderr, err := iolab(t, context.Background(), "fs", job, "--ioengine=fio", "--directory", dir, "--size=128k",
		"--rounds=2", "--warmup=0", "--json", "--db", db)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var r struct {
		Cells []struct {
			Name   string
			Params map[string]string
		}
		Runs []struct {
			Status string
			Extra  map[string]float64
			Read   struct{ Ops int64 }
			Write  struct{ Ops int64 }
		}
	}
	decodeInto(t, out, &r)
	if len(r.Cells) != 1 || r.Cells[0].Name != "mixed" || r.Cells[0].Params["jobs"] != "reader,scribe,after" || r.Cells[0].Params["norandommap"] != "1" {
		t.Fatalf("one cell of the file's three jobs: %+v", r.Cells)
	}
	if len(r.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(r.Runs))
	}
	for i, run := range r.Runs {
		x := run.Extra
		if run.Status != "ok" || x["job.1.ops"] != 20 || x["job.2.ops"] != 10 || x["job.3.ops"] != 30 || x["job.1.ops_per_s"] <= 0 || x["job.3.lat_p99_ns"] <= 0 {
			t.Errorf("run %d: %s, each job's figures %v", i, run.Status, x)
		}
		if run.Read.Ops != 50 || run.Write.Ops != 10 {
			t.Errorf("run %d: the run's operations %d reads, %d writes, want every job's: 50 and 10", i, run.Read.Ops, run.Write.Ops)
		}
	}
	text, _, err := iolab(t, context.Background(), "show", "--db", db)
	if err != nil || !strings.Contains(text, "job 3 IOPS") || !strings.Contains(text, "jobs 1 [reader], 2 [scribe], 3 [after]") {
		t.Errorf("each job in the text report (%v):\n%s", err, text)
	}
	shown, _, err := iolab(t, context.Background(), "show", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var stored struct{ Command string }
	decodeInto(t, shown, &stored)
	if !strings.Contains(stored.Command, "mixed.fio as fio read it:\n[global]") || strings.Count(stored.Command, "size=131072") != 3 {
		t.Errorf("the stored command does not carry the file as fio read it, --size at the end of each job:\n%s", stored.Command)
	}

	_, stderr, err = iolab(t, context.Background(), "fs", job, "--ioengine=fio", "--bs=8k", "--db", db)
	if ExitCode(err) != 2 || !strings.Contains(err.Error(), "--bs: fio runs "+job+" as written and takes from the command line only --runtime") ||
		strings.Contains(err.Error(), "\n") {
		t.Errorf("--bs with a file fio runs: %v (exit %d)\n%s", err, ExitCode(err), stderr)
	}
	// Debian's fio has no http engine: fio's own refusal, the file's
	// password masked in what it quotes.
	_, stderr, err = iolab(t, context.Background(), "fs", filepath.Join(dir, "http.fio"), "--ioengine=fio", "--db", db)
	if ExitCode(err) != 2 || !strings.Contains(err.Error(), "http.fio: fio refuses it: Bad option <http_pass=***>") || strings.Contains(err.Error()+stderr, "hunter2") {
		t.Errorf("a file fio refuses: %v\n%s", err, stderr)
	}
	if n := countRows(t, db, `SELECT count(*) FROM experiments WHERE command LIKE '%hunter2%'`); n != 0 {
		t.Errorf("the file's password is stored in %d experiments", n)
	}
}

// fio's random map (issue 46 item 2): a random job touches every block of
// its file once before any again — as fio does by default, whose verify
// then reads back all 64 blocks of a 256 KiB randwrite — and with
// norandommap (on the command line or in a job file) draws each offset
// afresh, leaving blocks out, in both tools.
func TestFioRandomMap(t *testing.T) {
	t.Parallel()
	need(t, "fio")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"nomap.fio": "[j]\nrw=randwrite\nsize=256k\nbs=4k\nverify=md5\nnorandommap\n"})
	db := filepath.Join(dir, "x.db")
	job := []string{"--rw=randwrite", "--size=256k", "--bs=4k", "--verify=md5"}
	for _, c := range []struct {
		args []string
		all  bool // every block written, once
	}{
		{job, true},
		{append(slices.Clone(job), "--norandommap"), false},
		{[]string{filepath.Join(dir, "nomap.fio")}, false},
		{append(slices.Clone(job), "--ioengine=fio"), true},
		{append(slices.Clone(job), "--ioengine=fio", "--norandommap"), false},
	} {
		args := append(append([]string{"fs"}, c.args...), "--directory", dir, "--rounds=1", "--warmup=0", "--json", "--db", db)
		out, stderr, err := iolab(t, context.Background(), args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, stderr)
		}
		var r struct {
			Runs []struct {
				Read  struct{ Ops int64 }
				Notes []struct{ Code, Message string }
			}
		}
		decodeInto(t, out, &r)
		// iolab's verify says the blocks it read back; fio counts its
		// verify's reads as the job's.
		read := r.Runs[0].Read.Ops
		for _, n := range r.Runs[0].Notes {
			if m := regexp.MustCompile(`read back all (\d+) blocks written`).FindStringSubmatch(n.Message); m != nil {
				read, _ = strconv.ParseInt(m[1], 10, 64)
			}
		}
		if (read == 64) != c.all || read == 0 {
			t.Errorf("%v: %d of the 64 blocks written, want all of them: %v", c.args, read, c.all)
		}
	}
}

// random_distribution as fio's (issue 46 item 2): on the command line, in
// a job file and through fio, stored with the cell; a bad one refused in
// one line naming the flag and what is taken.
func TestRandomDistribution(t *testing.T) {
	t.Parallel()
	need(t, "fio")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"hot.fio": "[hot]\nrw=randread\nsize=1m\nbs=4k\nrandom_distribution=zoned:90/10:10/90\n"})
	db := filepath.Join(dir, "x.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rw=randread", "--size=1m", "--random_distribution=zipf:1.2"}, "zipf:1.2"},
		{[]string{"--rw=randread", "--size=1m", "--random_distribution=pareto:0.3", "--ioengine=fio"}, "pareto:0.3"},
		{[]string{filepath.Join(dir, "hot.fio")}, "zoned:90/10:10/90"},
	} {
		args := append(append([]string{"fs"}, c.args...), "--directory", dir, "--runtime=200ms", "--rounds=1", "--warmup=0", "--json", "--db", db)
		out, stderr, err := iolab(t, context.Background(), args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, stderr)
		}
		var r fsJobReport
		decodeInto(t, out, &r)
		if got := r.Cells[0].Params["random_distribution"]; got != c.want || r.Runs[0].Status != "ok" {
			t.Errorf("%v: stored %q (run %s), want %q", c.args, got, r.Runs[0].Status, c.want)
		}
	}
	_, _, err := iolab(t, context.Background(), "fs", "--rw=randread", "--size=1m", "--directory", dir, "--random_distribution=zipf:1", "--db", db)
	if ExitCode(err) != 2 || !strings.Contains(err.Error(), "--random_distribution") || !strings.Contains(err.Error(), "theta must be above 0 and not 1") {
		t.Errorf("zipf:1: %v", err)
	}
}

// Jobs at once (issue 46 item 1): a job file's sections with no stonewall
// run at the same time on iolab's own engines, as fio runs them — one
// cell of the group, named by its jobs, each job's operations kept as
// job.N.* and the same as fio's for the same file; a stonewalled job after
// them is a cell of its own; each job of a group has files of its own,
// named by its section as fio's are.
func TestFioJobFileJobsAtOnce(t *testing.T) {
	t.Parallel()
	need(t, "fio")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"mixed.fio": `[global]
directory=` + dir + `
bs=4k

[reader]
rw=randread
size=256k

[writer]
rw=write
size=128k

[after]
stonewall
rw=read
size=64k
`})
	job := filepath.Join(dir, "mixed.fio")
	type run struct {
		Cell  string
		Extra map[string]float64
		Read  struct{ Ops int64 }
		Write struct{ Ops int64 }
	}
	var own, fio struct {
		Cells []struct {
			Name   string
			Params map[string]string
		}
		Runs []run
	}
	for _, c := range []struct {
		engine string
		into   any
	}{{"psync", &own}, {"fio", &fio}} {
		out, stderr, err := iolab(t, context.Background(), "fs", job, "--ioengine="+c.engine, "--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(dir, c.engine+".db"))
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.engine, err, stderr)
		}
		decodeInto(t, out, c.into)
	}
	if len(own.Cells) != 2 || own.Cells[0].Name != "reader+writer" || own.Cells[0].Params["jobs"] != "reader,writer" || own.Cells[1].Name != "after" {
		t.Fatalf("cells %+v: want reader+writer, then after", own.Cells)
	}
	byCell := map[string]run{}
	for _, r := range own.Runs {
		byCell[r.Cell] = r
	}
	both, after := byCell["reader+writer"], byCell["after"]
	if both.Read.Ops != 64 || both.Write.Ops != 32 || both.Extra["job.1.ops"] != 64 || both.Extra["job.2.ops"] != 32 || after.Read.Ops != 16 {
		t.Errorf("iolab's engine: together %d reads, %d writes, jobs %v; after %d reads", both.Read.Ops, both.Write.Ops, both.Extra, after.Read.Ops)
	}
	if x := fio.Runs[0].Extra; x["job.1.ops"] != both.Extra["job.1.ops"] || x["job.2.ops"] != both.Extra["job.2.ops"] || x["job.3.ops"] != float64(after.Read.Ops) {
		t.Errorf("fio's jobs %v, iolab's %v and %d", x, both.Extra, after.Read.Ops)
	}
	for _, name := range []string{"reader.0.0", "writer.0.0"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("each job of the group its own file: %v", err)
		}
	}
}

// fio's loops and filename with directory (issue 46 item 2): a job that is
// not time-based does its size loops times, and a relative filename lies
// in the directory — on iolab's engine and through fio alike.
func TestFioLoopsAndFilenameInDirectory(t *testing.T) {
	t.Parallel()
	need(t, "fio")
	dir := t.TempDir()
	for _, engine := range []string{"psync", "fio"} {
		out, stderr, err := iolab(t, context.Background(), "fs", "--directory", dir, "--filename", engine+".dat", "--rw=randread", "--size=256k",
			"--loops=3", "--ioengine="+engine, "--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(dir, "x.db"))
		if err != nil {
			t.Fatalf("%s: %v\n%s", engine, err, stderr)
		}
		var r struct {
			Runs []struct{ Read struct{ Ops int64 } }
		}
		decodeInto(t, out, &r)
		if r.Runs[0].Read.Ops != 192 {
			t.Errorf("%s: %d reads, want 3 loops of 64 blocks", engine, r.Runs[0].Read.Ops)
		}
		if _, err := os.Stat(filepath.Join(dir, engine+".dat")); err != nil {
			t.Errorf("%s: the file is not in the directory: %v", engine, err)
		}
	}
}

// A job file's runtime without time_based bounds a job that does its size,
// as fio reads it: 64 blocks and done, not a minute of reads (issue 46
// item 5, fio's meaning kept); with time_based, runtime is its length.
func TestFioJobFileRuntimeWithoutTimeBased(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"sized.fio": "[j]\nrw=randread\nsize=256k\nbs=4k\nruntime=60\ndirectory=" + dir + "\n"})
	r, _ := runFioJob(t, dir, filepath.Join(dir, "sized.fio"))
	out, _, err := iolab(t, context.Background(), "show", "--db", filepath.Join(dir, "x.db"), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var runs struct {
		Runs []struct{ Read struct{ Ops int64 } }
	}
	decodeInto(t, out, &runs)
	if r.Runs[0].Status != "ok" || runs.Runs[0].Read.Ops != 64 || r.Cells[0].Params["time_based"] != "0" {
		t.Errorf("run %s of %d reads (params %v), want the size's 64 and done", r.Runs[0].Status, runs.Runs[0].Read.Ops, r.Cells[0].Params)
	}
	// --time_based=0 on the command line makes a time-based job file's
	// jobs do their size, on iolab's engines and through fio; and a
	// command line's job alike.
	writeFiles(t, dir, map[string]string{"timed.fio": "[j]\nrw=randread\nsize=256k\nbs=4k\nruntime=60\ntime_based\ndirectory=" + dir + "\n"})
	engines := []string{"psync"}
	if _, err := exec.LookPath("fio"); err == nil {
		engines = append(engines, "fio")
	}
	for _, engine := range engines {
		for _, args := range [][]string{{filepath.Join(dir, "timed.fio")}, {"--directory=" + dir, "--size=256k", "--runtime=60", "--rw=randread"}} {
			r, _ := runFioJob(t, dir, args[0], append(args[1:], "--time_based=0", "--ioengine="+engine)...)
			if r.Runs[0].Status != "ok" || r.Runs[0].Read.Ops != 64 {
				t.Errorf("%s %v --time_based=0: run %s of %d reads, want the size's 64", engine, args, r.Runs[0].Status, r.Runs[0].Read.Ops)
			}
		}
	}
}

// fio's other names in job files: threads, ss, ss_dur, ss_ramp; new_group
// accepted (iolab reports each job and the group); zoned's last zone
// without a range is the rest of the file, as fio's examples write it.
func TestFioJobFileOtherNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"names.fio": "[global]\ndirectory=" + dir + "\nsize=256k\nbs=4k\nthreads=1\n" +
		"[j]\nnew_group\nrw=randread\nrandom_distribution=zoned:50/5:30/15:20/\nss=iops:50%\nss_dur=2s\nss_ramp=1s\nruntime=4s\ntime_based\n"})
	r, stderr := runFioJob(t, dir, filepath.Join(dir, "names.fio"))
	p := r.Cells[0].Params
	if r.Runs[0].Status != "ok" || p["thread"] != "1" || p["steadystate"] != "iops:50%" || p["steadystate_duration"] != "2s" ||
		p["random_distribution"] != "zoned:50/5:30/15:20/" {
		t.Errorf("run %s, params %v\n%s", r.Runs[0].Status, p, stderr)
	}
}

// fio's job_runtime under group_reporting is its jobs' runtimes summed,
// a direction's runtime the longest (issue 46 item 4): numjobs=2 is twice
// the run's, in the fio-shaped JSON as in fio's.
func TestFioShapedJobRuntime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, stderr, err := iolab(t, context.Background(), "fs", "--directory", dir, "--rw=read", "--bs=4k", "--size=256k", "--numjobs=2", "--runtime=300ms",
		"--rounds=1", "--warmup=0", "--output-format=json", "--db", filepath.Join(dir, "x.db"))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var doc struct {
		Jobs []struct {
			JobRuntime int64 `json:"job_runtime"`
			Read       struct{ Runtime int64 }
		}
	}
	decodeInto(t, out, &doc)
	if j := doc.Jobs[0]; j.Read.Runtime <= 0 || j.JobRuntime != 2*j.Read.Runtime {
		t.Errorf("job_runtime %d, read runtime %d: want twice it (2 jobs)", j.JobRuntime, j.Read.Runtime)
	}
}

// fio's offset, offset_increment and rw modifiers (issue 46 item 2): each
// job's region starts where fio's does — the shared file ends where fio's
// ends, the operations are fio's count — and a backwards read of what
// iolab wrote with holes finds each written block where it was written.
func TestFioOffsetsAndModifiers(t *testing.T) {
	t.Parallel()
	need(t, "fio")
	dir := t.TempDir()
	job := "[global]\nbs=4k\nsize=32k\noffset=8k\noffset_increment=64k\nnumjobs=2\n[w]\nrw=write:4k\n"
	writeFiles(t, dir, map[string]string{"w.fio": job + "filename=" + filepath.Join(dir, "fio.dat") + "\n"})
	fioOut, err := exec.Command("fio", "--output-format=json", filepath.Join(dir, "w.fio")).Output()
	if err != nil {
		t.Fatalf("fio: %v\n%s", err, fioOut)
	}
	var fioRun struct {
		Jobs []struct {
			Write struct {
				TotalIOs int64 `json:"total_ios"`
			}
		}
	}
	decodeInto(t, string(fioOut), &fioRun)
	writeFiles(t, dir, map[string]string{"w.fio": job + "filename=" + filepath.Join(dir, "iolab.dat") + "\nverify=crc32c\n"})
	r, stderr := runFioJob(t, dir, filepath.Join(dir, "w.fio"))
	fioSize, iolabSize := fileSize(t, filepath.Join(dir, "fio.dat")), fileSize(t, filepath.Join(dir, "iolab.dat"))
	if fioSize != 8<<10+64<<10+32<<10 || iolabSize != fioSize {
		t.Errorf("the shared file ends at %d in iolab, %d in fio; want both at offset + offset_increment + size", iolabSize, fioSize)
	}
	// Each job writes its region's every other block once and ends there:
	// the file goes on past it (fio wraps only at a file's end).
	if len(fioRun.Jobs) != 2 || fioRun.Jobs[0].Write.TotalIOs != 4 || r.Runs[0].Write.Ops != 8 {
		t.Errorf("fio's jobs %+v, iolab's writes %d; want 4 each, 8", fioRun.Jobs, r.Runs[0].Write.Ops)
	}
	p := r.Cells[0].Params
	if r.Runs[0].Status != "ok" || p["rw"] != "write:4k" || p["offset"] != "8k" || p["offset_increment"] != "64k" {
		t.Errorf("run %s, params %v\n%s", r.Runs[0].Status, p, stderr)
	}
	// Read back, backwards, blocks written (at offset + J x increment +
	// 2 x 4k x i), checked: in a region of 7 blocks read:-12k reads
	// blocks 0, 4, 2, 0.
	out, stderr, err := iolab(t, context.Background(), "fs", "--filename", filepath.Join(dir, "iolab.dat"), "--rw=read:-12k", "--bs=4k", "--size=28k",
		"--offset=8k", "--offset_increment=64k", "--numjobs=2", "--verify=crc32c", "--number_ios=4", "--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(dir, "x.db"))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var back struct {
		Runs []struct {
			Status string
			Read   struct{ Ops int64 }
		}
	}
	decodeInto(t, out, &back)
	if back.Runs[0].Status != "ok" || back.Runs[0].Read.Ops != 8 {
		t.Errorf("the backwards read of the written blocks: %+v", back.Runs)
	}
	// A region whose next offset is the file's end wraps to its start and
	// goes on for its size, as fio's (a file of 32k: 8 writes); one with
	// more file after it ends there (a file of 96k, regions at 0 and 64k:
	// 4 and 4).
	for _, tc := range []struct {
		size, numjobs string
		want          int64
	}{{"32k", "1", 8}, {"96k", "2", 8}} {
		for _, engine := range []string{"psync", "fio"} {
			path := filepath.Join(dir, engine+"."+tc.size+".dat")
			writeFiles(t, dir, map[string]string{filepath.Base(path): ""})
			if err := os.Truncate(path, fileSizeOf(tc.size)); err != nil {
				t.Fatal(err)
			}
			out, stderr, err := iolab(t, context.Background(), "fs", "--filename", path, "--rw=write:4k", "--bs=4k", "--size=32k",
				"--offset_increment=64k", "--numjobs="+tc.numjobs, "--ioengine="+engine, "--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(dir, "x.db"))
			if err != nil {
				t.Fatalf("%s: %v\n%s", engine, err, stderr)
			}
			var r fsJobReport
			decodeInto(t, out, &r)
			if r.Runs[0].Write.Ops != tc.want {
				t.Errorf("%s, a file of %s: %d writes, want %d", engine, tc.size, r.Runs[0].Write.Ops, tc.want)
			}
		}
	}
	_, _, err = iolab(t, context.Background(), "fs", "--directory", dir, "--rw=write:2k", "--bs=4k", "--size=32k", "--db", filepath.Join(dir, "x.db"))
	if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "--rw write:2k: iolab takes an offset modifier in whole blocks of --bs 4k") {
		t.Errorf("a modifier of half a block: %v", err)
	}
}

func fileSizeOf(s string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSuffix(s, "k"), 10, 64)
	return n << 10
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// fio's bssplit and bsrange (issue 46 item 2), on iolab's engines and
// through fio: a job does its size in operations of the sizes drawn, the
// last cut to fill it exactly as fio's; reads and writes each their own
// mix; random operations cover the region once, cut to the free blocks.
func TestFioBlockSizesDrawn(t *testing.T) {
	t.Parallel()
	need(t, "fio")
	dir := t.TempDir()
	type dir2 struct{ Ops, Bytes int64 }
	run := func(args ...string) (read, write dir2) {
		t.Helper()
		out, stderr, err := iolab(t, context.Background(), append([]string{"fs", "--directory", dir, "--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(dir, "x.db")}, args...)...)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		var r struct {
			Runs []struct {
				Status      string
				Read, Write dir2
			}
		}
		decodeInto(t, out, &r)
		if r.Runs[0].Status != "ok" {
			t.Fatalf("%v: %s", args, r.Runs[0].Status)
		}
		return r.Runs[0].Read, r.Runs[0].Write
	}
	for _, engine := range []string{"psync", "io_uring", "fio"} {
		// Sequential, sizes 4k..16k: the size exactly, in about 1m / 10k.
		read, _ := run("--rw=read", "--bsrange=4k-16k", "--size=1m", "--iodepth=4", "--ioengine="+engine)
		if read.Bytes != 1<<20 || read.Ops < 75 || read.Ops > 135 {
			t.Errorf("%s: bsrange 4k-16k over 1m: %+v, want 1m in about 102 reads", engine, read)
		}
		// Reads of 4k, writes of 64k; as fio, the job issues until its
		// bytes are done, the last operation past them.
		read, write := run("--rw=randrw", "--bssplit=4k,64k", "--size=1m", "--norandommap", "--ioengine="+engine)
		if read.Ops == 0 || write.Ops == 0 || read.Bytes != 4096*read.Ops || write.Bytes != 65536*write.Ops || read.Bytes+write.Bytes < 1<<20 ||
			read.Bytes+write.Bytes >= 1<<20+65536 {
			t.Errorf("%s: bssplit 4k,64k: reads %+v, writes %+v", engine, read, write)
		}
		// Random through the map: each block once, operations cut to the
		// free blocks, so more of them than 1m over the mean of 10k.
		read, _ = run("--rw=randread", "--bssplit=4k/50:16k/50", "--size=1m", "--ioengine="+engine)
		if read.Bytes != 1<<20 || read.Ops < 110 || read.Ops > 190 {
			t.Errorf("%s: bssplit 4k/50:16k/50 over 1m through the random map: %+v, want 1m in about 146 reads (fio's)", engine, read)
		}
	}
	writeFiles(t, dir, map[string]string{"bad.fio": "[j]\nbssplit=4k/50:8k/60\nsize=1m\n"})
	_, _, err := iolab(t, context.Background(), "fs", filepath.Join(dir, "bad.fio"), "--directory", dir, "--db", filepath.Join(dir, "x.db"))
	if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "bad.fio:2: bssplit=4k/50:8k/60: ") || !strings.Contains(fmt.Sprint(err), "add up to 110") {
		t.Errorf("shares over 100: %v", err)
	}
	// The random map of 8t in 512-byte blocks would take 2 GiB: refused
	// before any file is made.
	_, _, err = iolab(t, context.Background(), "fs", "--directory", dir, "--rw=randread", "--bssplit=512/50:4k/50", "--size=8t", "--db", filepath.Join(dir, "x.db"))
	if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "the random map over 17179869184 blocks of 512") || !strings.Contains(fmt.Sprint(err), "give --norandommap") {
		t.Errorf("a random map past the bound: %v", err)
	}
	_, _, err = iolab(t, context.Background(), "fs", "--directory", dir, "--bssplit=4k/50:8k/50", "--verify=crc32c", "--size=1m", "--db", filepath.Join(dir, "x.db"))
	if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "--bssplit/--bsrange with --verify") {
		t.Errorf("verify with sizes drawn: %v", err)
	}
}

// A job file's write_lat_log is the latency log in fio's format, a file
// per run named from it (issue 46 item 2), with a line for every
// measured operation; log_avg_msec is said to change nothing; two
// prefixes in one file are refused.
func TestFioJobFileWriteLatLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prefix := filepath.Join(dir, "lat")
	writeFiles(t, dir, map[string]string{"log.fio": "[global]\ndirectory=" + dir + "\nsize=64k\nbs=4k\nwrite_lat_log=" + prefix + "\nlog_avg_msec=1000\n" +
		"[r]\nrw=randread\n[w]\nstonewall\nrw=write\n"})
	out, stderr, err := iolab(t, context.Background(), "fs", filepath.Join(dir, "log.fio"), "--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(dir, "x.db"))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "write_lat_log="+prefix+": the latency log of every measured operation in fio's format") ||
		!strings.Contains(stderr, "log_avg_msec=1000: no effect in iolab") {
		t.Errorf("notes:\n%s", stderr)
	}
	var r struct {
		Runs []struct {
			ID          int64
			Read, Write struct{ Ops int64 }
		}
	}
	decodeInto(t, out, &r)
	if len(r.Runs) != 2 {
		t.Fatalf("%d runs, want one a job", len(r.Runs))
	}
	for _, run := range r.Runs {
		text, err := os.ReadFile(fmt.Sprintf("%s_lat.%d.log", prefix, run.ID))
		if err != nil {
			t.Fatal(err)
		}
		if n := int64(strings.Count(string(text), "\n")); n != run.Read.Ops+run.Write.Ops || n != 16 {
			t.Errorf("run %d: %d lines, %d operations; want 16 and 16", run.ID, n, run.Read.Ops+run.Write.Ops)
		}
	}
	writeFiles(t, dir, map[string]string{"two.fio": "[global]\ndirectory=" + dir + "\nsize=64k\n[a]\nwrite_lat_log=a\n[b]\nwrite_lat_log=b\n"})
	_, _, err = iolab(t, context.Background(), "fs", filepath.Join(dir, "two.fio"), "--db", filepath.Join(dir, "x.db"))
	if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "write_lat_log=a and write_lat_log=b: iolab writes one latency log") {
		t.Errorf("two prefixes: %v", err)
	}
}

// fio's startdelay (issue 46 item 2): a job beside another starts that
// much later — the run, from the first job's start (after its process
// starts) to the last's end, lasts most of the 3 s delay though both jobs'
// sizes take far less — and does its size.
func TestFioStartDelay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"late.fio": "[global]\ndirectory=" + dir + "\nsize=64k\nbs=4k\nrw=read\n[now]\n[later]\nstartdelay=3s\n"})
	out, stderr, err := iolab(t, context.Background(), "fs", filepath.Join(dir, "late.fio"), "--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(dir, "x.db"))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var r struct {
		Runs []struct {
			Status    string
			DurationS float64 `json:"duration_s"`
			Extra     map[string]float64
		}
	}
	decodeInto(t, out, &r)
	if run := r.Runs[0]; run.Status != "ok" || run.DurationS < 1.5 || run.Extra["job.1.ops"] != 16 || run.Extra["job.2.ops"] != 16 {
		t.Errorf("run %s of %.3fs, jobs %v; want most of the delay, 16 reads each", run.Status, run.DurationS, run.Extra)
	}
}

// fio's filename_format (issue 46 item 2): the files are named as fio
// names them, on iolab's engines and through fio alike.
func TestFioFilenameFormat(t *testing.T) {
	t.Parallel()
	engines := []string{"psync"}
	if _, err := exec.LookPath("fio"); err == nil {
		engines = append(engines, "fio")
	}
	for _, engine := range engines {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"named.fio": "[global]\ndirectory=" + dir + "\nfilename_format=data.$jobname.$jobnum.$filenum\nsize=64k\nbs=4k\nrw=write\n" +
			"[wr]\nnumjobs=2\nnrfiles=2\n"})
		r, stderr := runFioJob(t, dir, filepath.Join(dir, "named.fio"), "--ioengine="+engine)
		if r.Runs[0].Status != "ok" || r.Runs[0].Write.Ops != 32 || r.Cells[0].Params["filename_format"] != "data.$jobname.$jobnum.$filenum" {
			t.Errorf("%s: run %+v, params %v\n%s", engine, r.Runs[0], r.Cells[0].Params, stderr)
		}
		for _, name := range []string{"data.wr.0.0", "data.wr.0.1", "data.wr.1.0", "data.wr.1.1"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Errorf("%s: %v", engine, err)
			}
		}
	}
}

// Sections of the same name are two jobs, as in fio; their cells are told
// apart (a, a-2).
func TestFioJobFileSameNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"dup.fio": "[global]\ndirectory=" + dir + "\nsize=64k\n[a]\nrw=read\n[a]\nstonewall\nrw=write\n"})
	r, _ := runFioJob(t, dir, filepath.Join(dir, "dup.fio"))
	if len(r.Cells) != 2 || r.Cells[0].Name == r.Cells[1].Name || len(r.Runs) != 2 || r.Runs[0].Cell == r.Runs[1].Cell {
		t.Errorf("cells %+v, runs %+v: want two cells of their own names", r.Cells, r.Runs)
	}
	rw := map[string]string{}
	for _, c := range r.Cells {
		rw[c.Name] = c.Params["rw"]
	}
	if rw["a"] != "read" || rw["a-2"] != "write" {
		t.Errorf("cells %v, want a (read) and a-2 (write)", rw)
	}
}

// fio's buffer_pattern (issue 46 item 2): every written block holds the
// pattern, over and over — the file iolab writes is the file fio writes.
func TestFioBufferPattern(t *testing.T) {
	t.Parallel()
	engines := []string{"psync", "io_uring"}
	if _, err := exec.LookPath("fio"); err == nil {
		engines = append(engines, "fio")
	}
	dir := t.TempDir()
	want := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 64<<10/4)
	for _, engine := range engines {
		path := filepath.Join(dir, engine+".dat")
		out, stderr, err := iolab(t, context.Background(), "fs", "--filename", path, "--rw=write", "--bs=4k", "--size=64k", "--buffer_pattern=0xdeadbeef",
			"--iodepth=2", "--ioengine="+engine, "--rounds=2", "--warmup=0", "--json", "--db", filepath.Join(dir, "x.db"))
		if err != nil {
			t.Fatalf("%s: %v\n%s", engine, err, stderr)
		}
		var r fsJobReport
		decodeInto(t, out, &r)
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) || r.Cells[0].Params["buffer_pattern"] != "0xdeadbeef" {
			t.Errorf("%s: the file is not the pattern repeated (%d bytes, %v), params %v", engine, len(got), err, r.Cells[0].Params)
		}
	}
	_, _, err := iolab(t, context.Background(), "fs", "--directory", dir, "--buffer_pattern=12", "--size=64k", "--db", filepath.Join(dir, "x.db"))
	if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), `want hex (0xdeadbeef) or a quoted string`) {
		t.Errorf("a number: %v", err)
	}
}

// fio's trim and randtrim (issue 46 item 2): each operation discards its
// block — on a file a hole punched (fio 3.33 refuses a file) — counted as
// trims in every output, fio's JSON's trim section included.
func TestFioTrims(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dat")
	for _, rw := range []string{"randtrim", "trim"} {
		out, stderr, err := iolab(t, context.Background(), "fs", "--filename", path, "--rw="+rw, "--bs=4k", "--size=256k", "--iodepth=2",
			"--rounds=1", "--warmup=0", "--format=fio", "--db", filepath.Join(dir, "x.db"))
		if err != nil {
			t.Fatalf("%s: %v\n%s", rw, err, stderr)
		}
		var doc struct {
			Jobs []struct {
				Read, Write, Trim struct {
					TotalIOs int64 `json:"total_ios"`
					IOBytes  int64 `json:"io_bytes"`
				}
				JobOptions map[string]string `json:"job options"`
			}
		}
		decodeInto(t, out, &doc)
		j := doc.Jobs[0]
		if j.Trim.TotalIOs != 64 || j.Trim.IOBytes != 256<<10 || j.Read.TotalIOs != 0 || j.Write.TotalIOs != 0 || j.JobOptions["ioengine"] != "psync-pool" {
			t.Errorf("%s: fio's JSON %+v", rw, j)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(path, &st); err != nil || st.Size != 256<<10 || st.Blocks != 0 {
			t.Errorf("%s: the file after every block trimmed: size %d, %d blocks (%v); want its size kept, nothing allocated", rw, st.Size, st.Blocks, err)
		}
		if err := os.WriteFile(path, bytes.Repeat([]byte{1}, 256<<10), 0o644); err != nil { // data again for the next
			t.Fatal(err)
		}
	}
	_, _, err := iolab(t, context.Background(), "fs", "--filename", path, "--rw=trim", "--ioengine=io_uring", "--db", filepath.Join(dir, "x.db"))
	if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "--rw trim with --ioengine io_uring: iolab trims with a system call each") {
		t.Errorf("trims on io_uring: %v", err)
	}
}
