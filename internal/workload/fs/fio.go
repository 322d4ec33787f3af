package fs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/procgroup"
	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/workload"
)

// The fio engine runs fio itself on the same job and reads its json+ output,
// whose clat_ns.bins are fio's full latency histogram: they are replayed into
// an HDR histogram so fio's runs are stored, merged and summarised exactly
// like iolab's own. fio reports completion latency (clat), which excludes its
// submission latency; with io_uring and psync that is a few microseconds.

// fioArgs is the fio command line for the job.
func (o *Options) fioArgs() []string {
	args := []string{
		"--name=" + o.filePrefix(), "--output-format=json+", "--group_reporting",
		"--rw=" + o.rwName(), "--bs=" + strconv.FormatInt(o.BlockSize, 10),
		"--size=" + strconv.FormatInt(o.Size, 10),
		"--iodepth=" + strconv.Itoa(o.IODepth), "--iodepth_batch_submit=" + strconv.Itoa(o.IODepthBatch),
		"--numjobs=" + strconv.Itoa(o.NumJobs),
		"--direct=" + strconv.Itoa(boolInt(o.Direct)), "--invalidate=" + strconv.Itoa(boolInt(o.Invalidate)),
		"--ioengine=" + o.fioEngine(), "--rwmixread=" + strconv.Itoa(o.RWMixRead),
		"--buffer_compress_percentage=" + strconv.Itoa(o.Data.CompressPct),
		"--dedupe_percentage=" + strconv.Itoa(o.Data.DedupPct),
	}
	if o.Filename != "" {
		args = append(args, "--filename="+o.Filename)
	} else {
		// fio names files <jobname>.<job>.<file> in the directory, the same
		// names iolab's own engines use.
		args = append(args, "--directory="+o.Directory)
		if o.FilenameFormat != "" {
			args = append(args, "--filename_format="+o.FilenameFormat)
		}
	}
	if o.Runtime > 0 {
		args = append(args, fmt.Sprintf("--runtime=%dms", o.Runtime.Milliseconds()))
		if !o.RuntimeCaps {
			args = append(args, "--time_based")
		}
	}
	if o.RampTime > 0 {
		args = append(args, fmt.Sprintf("--ramp_time=%dms", o.RampTime.Milliseconds()))
	}
	if o.StartDelay > 0 {
		args = append(args, fmt.Sprintf("--startdelay=%dms", o.StartDelay.Milliseconds()))
	}
	args = append(args, o.fioBlockSizes()...)
	if len(o.Data.Repeat) > 0 {
		args = append(args, "--buffer_pattern=0x"+hex.EncodeToString(o.Data.Repeat))
	}
	if o.Offset > 0 || o.OffsetIncrement > 0 {
		// A segment's jobs are jobs jobOffset.. of the whole load.
		args = append(args, "--offset="+strconv.FormatInt(o.jobBase(0), 10), "--offset_increment="+strconv.FormatInt(o.OffsetIncrement, 10))
	}
	if o.NoRandomMap {
		args = append(args, "--norandommap")
	}
	if o.Loops > 1 {
		args = append(args, "--loops="+strconv.Itoa(o.Loops))
	}
	if o.RandSeed != 0 {
		args = append(args, "--randseed="+strconv.FormatUint(o.RandSeed, 10))
	}
	if o.NoRandRepeat {
		args = append(args, "--randrepeat=0")
	}
	if !o.Distribution.Uniform() {
		args = append(args, "--random_distribution="+o.Distribution.String())
	}
	if o.NumberIOs > 0 {
		args = append(args, "--number_ios="+strconv.FormatInt(o.NumberIOs, 10))
	}
	if o.IOSize > 0 {
		args = append(args, "--io_size="+strconv.FormatInt(o.IOSize, 10))
	}
	switch {
	case o.Fsync > 0:
		args = append(args, "--fsync="+strconv.Itoa(o.Fsync))
	case o.Fdatasync > 0:
		args = append(args, "--fdatasync="+strconv.Itoa(o.Fdatasync))
	case o.SyncFileRange.Every > 0:
		args = append(args, "--sync_file_range="+o.SyncFileRange.String())
	}
	if o.NrFiles > 1 {
		args = append(args, "--nrfiles="+strconv.Itoa(o.NrFiles), "--filesize="+strconv.FormatInt(o.fileSize(), 10))
		if o.window() {
			args = append(args, "--openfiles="+strconv.Itoa(o.OpenFiles))
		}
	}
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	if o.Rate != [2]int64{} {
		args = append(args, "--rate="+itoa(o.Rate[0])+","+itoa(o.Rate[1]))
	}
	if o.RateIOPS != [2]int64{} {
		args = append(args, "--rate_iops="+itoa(o.RateIOPS[0])+","+itoa(o.RateIOPS[1]))
	}
	if o.RateProcess != driver.Linear {
		args = append(args, "--rate_process="+o.RateProcess.String())
	}
	if o.ThinkTime > 0 {
		args = append(args, "--thinktime="+itoa(o.ThinkTime.Microseconds()), "--thinktime_blocks="+strconv.Itoa(o.ThinkTimeBlocks))
	}
	if v := o.Verify; v.on() {
		// verify_state_save=0: fio would leave a state file in the
		// working directory after every run.
		args = append(args, "--verify="+v.Kind, "--do_verify="+strconv.Itoa(boolInt(v.Do)), "--verify_state_save=0")
		if v.Backlog > 0 {
			args = append(args, "--verify_backlog="+strconv.Itoa(v.Backlog))
		}
		if v.Only {
			args = append(args, "--verify_only")
		}
	}
	return args
}

// fioEngine is the fio ioengine of the job: its own (FioEngine), else
// io_uring for queued I/O and psync for one operation at a time.
func (o *Options) fioEngine() string {
	if o.FioEngine != "" {
		return o.FioEngine
	}
	if o.IODepth > 1 {
		return "io_uring"
	}
	return "psync"
}

// fioBinary is fio's path: the one given (--fio), else fio on PATH.
func fioBinary(path string) string { return cmp.Or(path, "fio") }

// checkFio says fio is there to run.
func checkFio(fio string) error {
	if _, err := exec.LookPath(fio); err != nil {
		return &workload.InputError{Err: fmt.Errorf("--ioengine fio: %s not found in PATH; install fio (apt-get install fio)", fio)}
	}
	return nil
}

func (f *FS) prepareFio(context.Context) error { return checkFio(fioBinary(f.opts.FioPath)) }

func (f *FS) runFio(ctx context.Context) (*metrics.Result, error) {
	res, version, err := fioResult(ctx, fioBinary(f.opts.FioPath), f.opts.fioArgs(), nil, fioLimit(f.opts.Runtime+f.opts.RampTime), nil)
	if res == nil {
		return nil, err
	}
	res.Notes = append(res.Notes, metrics.Note{Code: "fio-engine",
		Message: "ran by fio " + version + " with ioengine=" + f.opts.fioEngine() + "; latency is fio's completion latency (clat); no per-second series"})
	if f.opts.Verify.on() && f.opts.Verify.Do && !f.opts.Verify.Only && f.opts.readShare() < 100 {
		res.Notes = append(res.Notes, metrics.Note{Code: "fio-verify-reads", Message: "fio counts its verify pass as the job's reads " +
			"and time; iolab's own engines read back after the run, unmeasured: compare the write figures, or use --do_verify 0"})
	}
	return res, err
}

// fioResult runs fio and reads its JSON (jobs: a job file's, as
// parseFioJSON takes them): the run, with its start and fio's CPU, and
// fio's version. Cut short by ctx, it is what fio reported, with ctx's
// error; a failed fio is fio's last words, secrets masked.
func fioResult(ctx context.Context, fio string, args []string, stdin []byte, limit time.Duration, jobs []string) (*metrics.Result, string, error) {
	out, ru, err := runFioProcess(ctx, fio, args, stdin, limit)
	interrupted := ctx.Err() != nil
	if err != nil && !interrupted {
		return nil, "", fmt.Errorf("fio: %w: %s", err, redact.String(lastLine(out.stderr)))
	}
	res, perr := parseFioJSON(out.stdout, jobs)
	switch {
	case perr != nil && interrupted:
		return nil, "", ctx.Err()
	case perr != nil:
		return nil, "", perr
	}
	res.Start, res.CPUUserS, res.CPUSysS = out.start, ru.user, ru.sys
	return res, fioVersion(out.stdout), ctx.Err()
}

// fioRun is what a fio process printed, and when it started.
type fioRun struct {
	stdout, stderr []byte
	start          time.Time
}

// fioCPU is the CPU time fio and the jobs it forked used.
type fioCPU struct{ user, sys float64 }

// fioStopGrace is how long fio has to stop after SIGINT before its
// process group is killed.
var fioStopGrace = 10 * time.Second

// runFioProcess runs fio with args (and stdin, when not nil, on its
// standard input) to its end. When ctx ends, or limit (when not 0) has
// passed, fio is asked to stop (SIGINT: it stops its jobs and still
// prints its report) and given fioStopGrace; then, as after every end,
// what is left of its process group — the jobs it forked — is killed: a
// job of fio's that hangs (an example's offload submitter did, for fio's
// own 300 s watchdog) never outlives the run.
func runFioProcess(ctx context.Context, fio string, args []string, stdin []byte, limit time.Duration) (fioRun, fioCPU, error) {
	cmd := exec.Command(fio, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	// fio dies if iolab does (kill -9 included), rather than go on
	// writing into the target; its jobs are in its group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	out := fioRun{start: time.Now()}
	if err := procgroup.Start(cmd); err != nil {
		return out, fioCPU{}, fmt.Errorf("start fio: %w", err)
	}
	group := procgroup.Group{PGID: cmd.Process.Pid, Start: procgroup.StartTime(cmd.Process.Pid)}
	defer procgroup.Track(ctx, cmd.Process.Pid)()
	defer procgroup.Kill(group)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var deadline <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		deadline = t.C
	}
	var err error
	select {
	case err = <-waited:
	case <-ctx.Done():
		err = stopFio(cmd, group, waited)
	case <-deadline:
		_ = stopFio(cmd, group, waited)
		err = fmt.Errorf("fio did not end within %v; stopped", limit)
	}
	out.stdout, out.stderr = stdout.Bytes(), stderr.Bytes()
	var cpu fioCPU
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = fioCPU{time.Duration(ru.Utime.Nano()).Seconds(), time.Duration(ru.Stime.Nano()).Seconds()}
	}
	return out, cpu, err
}

// stopFio asks fio to stop, and kills its group if it has not within
// fioStopGrace; it returns what fio exited with.
func stopFio(cmd *exec.Cmd, group procgroup.Group, waited <-chan error) error {
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-waited:
		return err
	case <-time.After(fioStopGrace):
		procgroup.Kill(group)
		return <-waited
	}
}

// fioLimit is how long a run of fio may take before it is stopped: twice
// the time its options give it, and half a minute (0 when they give none:
// a job that writes its size once).
func fioLimit(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return 2*d + 30*time.Second
}

// lastLine is the end of what fio printed on stderr: its last three
// lines ("fio: engine X not loadable" comes before "failed to load").
func lastLine(b []byte) string {
	lines := strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' })
	return strings.Join(lines[max(0, len(lines)-3):], "; ")
}

type fioOutput struct {
	Version  string   `json:"fio version"`
	Jobs     []fioJob `json:"jobs"`
	DiskUtil []struct {
		Name string  `json:"name"`
		Util float64 `json:"util"`
	} `json:"disk_util"`
}

type fioJob struct {
	Name    string `json:"jobname"`
	GroupID int    `json:"groupid"`
	Error   int    `json:"error"`
	Ctx     int64  `json:"ctx"`
	Read    fioDir `json:"read"`
	Write   fioDir `json:"write"`
	Trim    fioDir `json:"trim"`
	Sync    fioDir `json:"sync"`
}

type fioDir struct {
	IOBytes   int64  `json:"io_bytes"`
	TotalIOs  int64  `json:"total_ios"`
	RuntimeMs int64  `json:"runtime"`
	Slat      fioLat `json:"slat_ns"`
	Clat      fioLat `json:"clat_ns"`
	Lat       fioLat `json:"lat_ns"`
}

type fioLat struct {
	Mean       float64          `json:"mean"`
	Percentile map[string]int64 `json:"percentile"`
	Bins       map[string]int64 `json:"bins"`
}

func fioVersion(out []byte) string {
	var o fioOutput
	_ = json.Unmarshal(out, &o)
	return o.Version
}

// parseFioJSON reads fio's json+ output: the run is every job's
// operations, its duration the sum over fio's groups (which run one after
// another) of each group's longest job. With jobs (the job file's
// sections, in order), each job's own figures are added as job.N.*.
func parseFioJSON(out []byte, jobs []string) (*metrics.Result, error) {
	// fio may print notices before the JSON document.
	if i := bytes.IndexByte(out, '{'); i > 0 {
		out = out[i:]
	}
	var o fioOutput
	if err := json.Unmarshal(out, &o); err != nil {
		return nil, fmt.Errorf("read fio's JSON output: %w", err)
	}
	if len(o.Jobs) == 0 || (jobs == nil && len(o.Jobs) != 1) {
		return nil, fmt.Errorf("fio's JSON output has %d jobs, want 1 (group_reporting)", len(o.Jobs))
	}
	res := &metrics.Result{Extra: map[string]float64{}}
	groups := map[int]int64{} // each group's longest job, ms
	for _, j := range o.Jobs {
		for d, fd := range j.dirs() {
			if fd.TotalIOs == 0 {
				continue
			}
			h, err := fd.histogram(d)
			if err != nil {
				return nil, err
			}
			s := &res.ByOp[d]
			if s.Lat == nil {
				s.Lat = metrics.NewHistogram()
			}
			s.Lat.Merge(h)
			prev := s.Ops
			s.Ops, s.Bytes = s.Ops+fd.TotalIOs, s.Bytes+fd.IOBytes
			// fio's own means, weighted by operations over its jobs.
			op := d.String() + "."
			for name, mean := range map[string]float64{"fio_slat_mean_ns": fd.Slat.Mean, "fio_clat_mean_ns": fd.Clat.Mean, "fio_lat_mean_ns": fd.Lat.Mean} {
				res.Extra[op+name] = (res.Extra[op+name]*float64(prev) + mean*float64(fd.TotalIOs)) / float64(s.Ops)
			}
			if len(o.Jobs) == 1 {
				for name, key := range map[string]string{"fio_clat_p50_ns": "50.000000", "fio_clat_p99_ns": "99.000000"} {
					if v, ok := fd.Clat.Percentile[key]; ok {
						res.Extra[op+name] = float64(v)
					}
				}
			}
		}
		groups[j.GroupID] = max(groups[j.GroupID], j.runtimeMs())
		res.Extra["fio_ctx"] += float64(j.Ctx)
		if j.Error != 0 {
			res.Errors++
			if res.FirstError == "" {
				res.FirstError = fmt.Sprintf("fio job %s: error %d (%s)", j.Name, j.Error, syscall.Errno(j.Error))
			}
		}
		if j.Trim.TotalIOs > 0 && !slices.ContainsFunc(res.Notes, func(n metrics.Note) bool { return n.Code == "fio-trims" }) {
			res.Notes = append(res.Notes, metrics.Note{Code: "fio-trims", Message: "fio's trims are not among the run's operations " +
				"(iolab has no trim operation); each job's figures count them"})
		}
	}
	var ms int64
	for _, g := range groups {
		ms += g
	}
	res.Duration = time.Duration(ms) * time.Millisecond
	for _, du := range o.DiskUtil {
		res.Extra["fio_disk_util_pct"] = max(res.Extra["fio_disk_util_pct"], du.Util)
	}
	if jobs != nil {
		if err := addJobFigures(res.Extra, o.Jobs, jobs); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// dirs are a job's directions as iolab's operations (fio's sync is
// fsync and fdatasync).
func (j fioJob) dirs() map[metrics.Op]fioDir {
	return map[metrics.Op]fioDir{metrics.Read: j.Read, metrics.Write: j.Write, metrics.Sync: j.Sync}
}

// runtimeMs is the job's runtime: its longest direction's.
func (j fioJob) runtimeMs() int64 {
	return max(j.Read.RuntimeMs, j.Write.RuntimeMs, j.Trim.RuntimeMs, j.Sync.RuntimeMs)
}

// histogram is fio's latency histogram of a direction: completion
// latency (clat), or for syncs, which fio times whole, lat.
func (fd fioDir) histogram(d metrics.Op) (*hdrhistogram.Histogram, error) {
	bins := fd.Clat.Bins
	if d == metrics.Sync {
		bins = fd.Lat.Bins
	}
	h := metrics.NewHistogram()
	for k, n := range bins {
		v, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("fio JSON: latency bin %q: %w", k, err)
		}
		metrics.RecordLatencyN(h, v, n)
	}
	return h, nil
}

// addJobFigures adds each job's operations and bytes per second of its
// own runtime, its completion latency p99 and its errors as job.N.* (N
// the job's place in names, from 1); fio's entries of one job's clones
// (numjobs) add up, and its trims count.
func addJobFigures(extra map[string]float64, entries []fioJob, names []string) error {
	type sum struct {
		ops, bytes, errors int64
		ms                 int64
		lat                *hdrhistogram.Histogram
	}
	sums := make([]sum, len(names))
	for _, e := range entries {
		i := slices.Index(names, e.Name)
		if i < 0 {
			return fmt.Errorf("fio's JSON output has a job %q, not one of the job file's (%s)", e.Name, strings.Join(names, ", "))
		}
		s := &sums[i]
		if s.lat == nil {
			s.lat = metrics.NewHistogram()
		}
		for d, fd := range map[metrics.Op]fioDir{metrics.Read: e.Read, metrics.Write: e.Write, metrics.Delete: e.Trim} {
			s.ops, s.bytes = s.ops+fd.TotalIOs, s.bytes+fd.IOBytes
			h, err := fd.histogram(d)
			if err != nil {
				return err
			}
			s.lat.Merge(h)
		}
		s.ms = max(s.ms, e.runtimeMs())
		if e.Error != 0 {
			s.errors++
		}
	}
	for i, s := range sums {
		addJob(extra, i+1, s.ops, s.bytes, s.errors, float64(s.ms)/1e3, s.lat)
	}
	return nil
}

// addJob writes one job's figures as job.N.*, whichever engine ran it:
// its operations, their rate and its bytes' over its own run (seconds;
// 0: no rate, the row kept), its latency p99 (lat: nil or empty, none)
// and its errors.
func addJob(extra map[string]float64, n int, ops, bytes, errors int64, seconds float64, lat *hdrhistogram.Histogram) {
	p := "job." + strconv.Itoa(n) + "."
	extra[p+"ops"], extra[p+"errors"] = float64(ops), float64(errors)
	extra[p+"ops_per_s"], extra[p+"bytes_per_s"] = 0, 0
	if seconds > 0 {
		extra[p+"ops_per_s"], extra[p+"bytes_per_s"] = float64(ops)/seconds, float64(bytes)/seconds
	}
	if lat != nil && lat.TotalCount() > 0 {
		extra[p+"lat_p99_ns"] = float64(metrics.PercentilesOf(lat).P99)
	}
}
