package fs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/procgroup"
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
		"--name=iolab", "--output-format=json+", "--group_reporting",
		"--rw=" + string(o.RW), "--bs=" + strconv.FormatInt(o.BlockSize, 10),
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
	}
	if o.Runtime > 0 {
		args = append(args, "--time_based", fmt.Sprintf("--runtime=%dms", o.Runtime.Milliseconds()))
	}
	if o.RampTime > 0 {
		args = append(args, fmt.Sprintf("--ramp_time=%dms", o.RampTime.Milliseconds()))
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

func (f *FS) fioPath() string {
	if f.opts.FioPath != "" {
		return f.opts.FioPath
	}
	return "fio"
}

func (f *FS) prepareFio(context.Context) error {
	if _, err := exec.LookPath(f.fioPath()); err != nil {
		return &workload.InputError{Err: fmt.Errorf("--ioengine fio: %s not found in PATH; install fio (apt-get install fio)", f.fioPath())}
	}
	return nil
}

func (f *FS) runFio(ctx context.Context) (*metrics.Result, error) {
	cmd := exec.Command(f.fioPath(), f.opts.fioArgs()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// fio dies if iolab does (kill -9 included), rather than go on
	// writing into the target.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := procgroup.Start(cmd); err != nil {
		return nil, fmt.Errorf("start fio: %w", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	interrupted := false
	select {
	case err = <-waited:
	case <-ctx.Done():
		// fio stops its jobs on SIGINT and still prints its report.
		interrupted = true
		_ = cmd.Process.Signal(syscall.SIGINT)
		err = <-waited
	}
	if err != nil && !interrupted {
		return nil, fmt.Errorf("fio: %w: %s", err, lastLine(stderr.Bytes()))
	}
	res, perr := parseFioJSON(stdout.Bytes())
	if perr != nil {
		if interrupted {
			return nil, ctx.Err()
		}
		return nil, perr
	}
	res.Start = start
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.CPUUserS = time.Duration(ru.Utime.Nano()).Seconds()
		res.CPUSysS = time.Duration(ru.Stime.Nano()).Seconds()
	}
	res.Notes = append(res.Notes, metrics.Note{Code: "fio-engine",
		Message: "ran by fio " + fioVersion(stdout.Bytes()) + " with ioengine=" + f.opts.fioEngine() + "; latency is fio's completion latency (clat); no per-second series"})
	if f.opts.Verify.on() && f.opts.Verify.Do && !f.opts.Verify.Only && f.opts.readShare() < 100 {
		res.Notes = append(res.Notes, metrics.Note{Code: "fio-verify-reads", Message: "fio counts its verify pass as the job's reads " +
			"and time; iolab's own engines read back after the run, unmeasured: compare the write figures, or use --do_verify 0"})
	}
	if interrupted {
		return res, ctx.Err()
	}
	return res, nil
}

func lastLine(b []byte) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return string(lines[len(lines)-1])
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
	Error int    `json:"error"`
	Ctx   int64  `json:"ctx"`
	Read  fioDir `json:"read"`
	Write fioDir `json:"write"`
	Sync  fioDir `json:"sync"`
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

// parseFioJSON reads fio's json+ output of one group-reported job.
func parseFioJSON(out []byte) (*metrics.Result, error) {
	// fio may print notices before the JSON document.
	if i := bytes.IndexByte(out, '{'); i > 0 {
		out = out[i:]
	}
	var o fioOutput
	if err := json.Unmarshal(out, &o); err != nil {
		return nil, fmt.Errorf("read fio's JSON output: %w", err)
	}
	if len(o.Jobs) != 1 {
		return nil, fmt.Errorf("fio's JSON output has %d jobs, want 1 (group_reporting)", len(o.Jobs))
	}
	j := o.Jobs[0]
	res := &metrics.Result{}
	var runtimeMs int64
	for d, fd := range map[metrics.Op]fioDir{metrics.Read: j.Read, metrics.Write: j.Write, metrics.Sync: j.Sync} {
		runtimeMs = max(runtimeMs, fd.RuntimeMs)
		bins := fd.Clat.Bins
		if d == metrics.Sync {
			bins = fd.Lat.Bins
		}
		if fd.TotalIOs == 0 {
			continue
		}
		h := metrics.NewHistogram()
		for k, n := range bins {
			v, err := strconv.ParseInt(k, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("fio JSON: latency bin %q: %w", k, err)
			}
			metrics.RecordLatencyN(h, v, n)
		}
		res.ByOp[d] = metrics.OpStats{Ops: fd.TotalIOs, Bytes: fd.IOBytes, Lat: h}
		// fio's own figures, kept as it reported them.
		if res.Extra == nil {
			res.Extra = map[string]float64{}
		}
		op := d.String() + "."
		res.Extra[op+"fio_slat_mean_ns"], res.Extra[op+"fio_clat_mean_ns"], res.Extra[op+"fio_lat_mean_ns"] = fd.Slat.Mean, fd.Clat.Mean, fd.Lat.Mean
		for name, key := range map[string]string{"fio_clat_p50_ns": "50.000000", "fio_clat_p99_ns": "99.000000"} {
			if v, ok := fd.Clat.Percentile[key]; ok {
				res.Extra[op+name] = float64(v)
			}
		}
	}
	if res.Extra == nil {
		res.Extra = map[string]float64{}
	}
	res.Extra["fio_ctx"] = float64(j.Ctx)
	for _, du := range o.DiskUtil {
		if res.Extra == nil {
			res.Extra = map[string]float64{}
		}
		res.Extra["fio_disk_util_pct"] = max(res.Extra["fio_disk_util_pct"], du.Util)
	}
	res.Duration = time.Duration(runtimeMs) * time.Millisecond
	if j.Error != 0 {
		res.Errors = 1
		res.FirstError = fmt.Sprintf("fio job error %d (%s)", j.Error, syscall.Errno(j.Error))
	}
	return res, nil
}
