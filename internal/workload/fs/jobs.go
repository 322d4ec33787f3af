package fs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/outtail"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/workload"
)

// Jobs as processes, as fio runs them. fio forks a process per job and each
// calls setsid(2): a session of its own. Where the kernel groups tasks by
// session for the CPU (autogroup, on by default in Debian's kernels and
// in effect for every task in the root CPU cgroup), each job then gets as
// much of a busy machine's CPUs as all the work of another session
// together — where the threads of one process share one session's share.
// Beside `stress-ng --cpu 4` on 2 CPUs that made fio 2.3x iolab's IOPS on a
// cached 4k read at QD1, and 1.2x on the field report's io_uring job;
// with autogroup off the two were even (docs/fs.md). So iolab runs each
// job as a process in a session of its own too, and --thread runs them as
// threads of its own process, as fio's thread option does.

// jobEnv, set in a process's environment, makes it one job of a parent's
// run (ServeJobIfAsked).
const jobEnv = "IOLAB_FS_JOB"

// jobHello is a job process's first line: a process that does not say it
// is no job process (a binary without ServeJobIfAsked) and is killed.
const jobHello = "iolab fs job 1"

// ServeJobIfAsked runs this process as one job of a parent's run when the
// parent started it so, and exits; otherwise it returns at once. Every
// main that can run the fs workload calls it first (cmd/iolab, and the
// TestMain of tests that run it).
func ServeJobIfAsked() {
	if os.Getenv(jobEnv) != "1" {
		return
	}
	os.Exit(serveJob(os.Stdin, os.Stdout))
}

// jobSpec is what a job process is told: the options, with the job it
// runs as segment I of N (N the whole load's jobs), the run's place in
// the experiment (its arrivals' seed), and whether fd 3 is the latency
// log, of which run.
type jobSpec struct {
	Options Options          `json:"options"`
	Run     workload.RunInfo `json:"run"`
	LatLog  string           `json:"lat_log,omitempty"`
	LatRun  int64            `json:"lat_run,omitempty"`
	LatFio  bool             `json:"lat_fio,omitempty"` // the log is in fio's format
	// JobOffset is the number of the first of its jobs in the whole load
	// (Options.NumJobs says how many it runs): their files, seeds and
	// arrivals are those jobs'.
	JobOffset int `json:"job_offset"`
	// SinkEvery, when set, is how often the job hands its finished seconds
	// to its parent as it goes (metrics.WithSecondSink), for the parent's
	// sink: the store has them while the run goes on.
	SinkEvery time.Duration `json:"sink_every,omitempty"`
}

// asProcesses says whether this run's jobs run as processes of their
// own: not with --thread, not for a steady-state criterion (judged on the
// whole run's seconds as they come), and never in a job process itself.
func (f *FS) asProcesses() bool {
	return !f.opts.Thread && !f.opts.Steady.Enabled() && os.Getenv(jobEnv) == ""
}

// jobProc is one job's process, as its parent sees it.
type jobProc struct {
	cmd        *exec.Cmd
	stdin      io.WriteCloser
	lines      chan string
	stderr     *outtail.Tail // read while the process may still write it
	ops, bytes atomic.Int64
	index      int // among the run's processes
	seconds    *secondsMerge
}

// runJobs runs each job as a process of its own, started together, and
// merges what they measured, exactly, as the segments of a load merge.
func (f *FS) runJobs(ctx context.Context, progress func(ops, bytes int64)) (*metrics.Result, tally, error) {
	var t tally
	sink, every := metrics.SecondSink(ctx)
	merge := &secondsMerge{sink: sink, sums: map[int64]*metrics.Second{}, upTo: make([]int64, f.processes())}
	if sink == nil {
		every = 0
	}
	procs, err := f.startJobs(ctx, merge, every)
	defer func() {
		for _, p := range procs {
			p.end()
		}
	}()
	if err != nil {
		return nil, t, err
	}
	for _, p := range procs {
		if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
			return nil, t, p.failed(fmt.Errorf("starting it: %w", err))
		}
	}
	// Neither watcher outlives the run: progress is never said after it.
	stopped := make(chan struct{})
	var watchers sync.WaitGroup
	defer func() { close(stopped); watchers.Wait() }()
	watchers.Go(func() {
		select {
		case <-ctx.Done(): // Ctrl-C: each job ends as a run ends when interrupted
			for _, p := range procs {
				_ = p.cmd.Process.Signal(syscall.SIGINT)
			}
		case <-stopped:
		}
	})
	if progress != nil {
		watchers.Go(func() {
			tick := time.NewTicker(500 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-tick.C:
					var ops, b int64
					for _, p := range procs {
						ops, b = ops+p.ops.Load(), b+p.bytes.Load()
					}
					progress(ops, b)
				case <-stopped:
					return
				}
			}
		})
	}
	results := make([]*metrics.Result, 0, len(procs))
	var errs []error
	for _, p := range procs {
		res, pt, err := p.outcome(ctx, f.runWait())
		if res != nil {
			results = append(results, res)
		}
		t.add(pt)
		errs = append(errs, err)
	}
	if len(results) < len(procs) {
		return nil, t, errors.Join(errs...)
	}
	res := metrics.MergeTogether(results)
	res.Series = merge.rest(results)
	return res, t, errors.Join(errs...)
}

// secondsMerge adds up the jobs' seconds as they hand them over, by their
// place in the run (the jobs start together, as the workers of one
// process do), and hands the load's seconds on once every job has handed
// over its own.
type secondsMerge struct {
	mu      sync.Mutex
	sink    func([]metrics.Second)
	sums    map[int64]*metrics.Second
	upTo    []int64 // per job: every second before it is handed over
	emitted int64   // every second before it went to the sink
}

// add takes job i's finished seconds.
func (m *secondsMerge) add(i int, secs []metrics.Second) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range secs {
		m.sum(s)
		m.upTo[i] = max(m.upTo[i], s.T+1)
	}
	low := slices.Min(m.upTo)
	var out []metrics.Second
	for t := m.emitted; t < low; t++ {
		if s := m.sums[t]; s != nil {
			out = append(out, *s)
			delete(m.sums, t)
		} else {
			out = append(out, metrics.Second{T: t})
		}
	}
	m.emitted = max(m.emitted, low)
	if len(out) > 0 && m.sink != nil {
		m.sink(out)
	}
}

// sum adds a job's second to the load's. Per-second percentiles do not
// add up: the worst job's bounds the second's, as between segments.
func (m *secondsMerge) sum(s metrics.Second) {
	if s.T < m.emitted {
		return // handed on already: a job's second is final once handed over
	}
	a := m.sums[s.T]
	if a == nil {
		a = &metrics.Second{T: s.T}
		m.sums[s.T] = a
	}
	a.Ops, a.Bytes = a.Ops+s.Ops, a.Bytes+s.Bytes
	a.P50Ns, a.P99Ns, a.MaxNs = max(a.P50Ns, s.P50Ns), max(a.P99Ns, s.P99Ns), max(a.MaxNs, s.MaxNs)
}

// rest is the load's seconds not handed to the sink: those the jobs
// handed over since, and those they kept for their results.
func (m *secondsMerge) rest(results []*metrics.Result) []metrics.Second {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range results {
		for _, s := range r.Series {
			m.sum(s)
		}
	}
	var out []metrics.Second
	for _, t := range slices.Sorted(maps.Keys(m.sums)) {
		out = append(out, *m.sums[t])
	}
	return out
}

// runWait bounds how long a job process may take to say how its run went,
// once started: its runtime or its budget, the grace for operations in
// flight, a verify pass; generous, since a hung process is killed only
// after it.
func (f *FS) runWait() time.Duration {
	if f.opts.Runtime > 0 {
		return f.opts.RampTime + f.opts.Runtime + 15*time.Minute
	}
	return 24 * time.Hour // a budget of bytes: as long as the device takes
}

// maxJobProcesses bounds the processes a run starts: each is a Go runtime
// of its own (~26 MB resident here), and --numjobs goes to 4096. Past it,
// the jobs are shared out among that many processes, a contiguous run of
// jobs each, as threads within it. A variable for the test of it.
var maxJobProcesses = 64

// processes is how many processes the run's jobs run in.
func (f *FS) processes() int { return min(len(f.jobs), maxJobProcesses) }

// startJobs starts a process per job (at most maxJobProcesses), each in a
// session of its own, and waits until every one has prepared its files.
func (f *FS) startJobs(ctx context.Context, merge *secondsMerge, sinkEvery time.Duration) ([]*jobProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("running the jobs as processes: %w; give --thread to run them as threads", err)
	}
	log, logRun, hasLog := metrics.LatencyLogFrom(ctx)
	ri, _ := workload.RunInfoFrom(ctx)
	var procs []*jobProc
	n := f.processes()
	for i := range n {
		share := segment.Segment{I: i, N: n}
		first := f.opts.jobOffset + share.First(len(f.jobs))
		spec := jobSpec{Options: f.opts, Run: ri, SinkEvery: sinkEvery, JobOffset: first}
		spec.Options.NumJobs, spec.Options.Segment = share.Share(len(f.jobs)), segment.Segment{}
		p := &jobProc{cmd: exec.Command(exe), lines: make(chan string, 16), stderr: &outtail.Tail{Max: 2000}, index: len(procs), seconds: merge}
		p.cmd.Env = append(os.Environ(), jobEnv+"=1")
		// A session of its own, as fio's jobs; killed with its parent,
		// however the parent ends.
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
		p.cmd.Stderr = p.stderr
		if hasLog {
			spec.LatLog, spec.LatRun, spec.LatFio = log.Path(), logRun, log.Fio()
			p.cmd.ExtraFiles = []*os.File{log.File()}
		}
		if p.stdin, err = p.cmd.StdinPipe(); err != nil {
			return procs, err
		}
		out, err := p.cmd.StdoutPipe()
		if err != nil {
			return procs, err
		}
		if err := p.cmd.Start(); err != nil {
			return procs, fmt.Errorf("starting job %d as a process: %w; give --thread to run the jobs as threads", first, err)
		}
		procs = append(procs, p)
		go p.read(out)
		b, _ := json.Marshal(spec)
		if _, err := p.stdin.Write(append(b, '\n')); err != nil {
			return procs, p.failed(err)
		}
	}
	for _, p := range procs {
		if err := p.await(ctx, jobHello, 30*time.Second); err != nil {
			return procs, err
		}
	}
	for _, p := range procs {
		if err := p.await(ctx, "ready", 10*time.Minute); err != nil {
			return procs, err
		}
	}
	return procs, nil
}

// end closes the process's input, which ends it, and waits for it to
// exit; one that does not within a few seconds is killed.
func (p *jobProc) end() {
	_ = p.stdin.Close()
	exited := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-exited
	}
}

// read passes the process's lines on, counting its progress as it goes.
func (p *jobProc) read(out io.Reader) {
	defer close(p.lines)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 256<<20) // a result is one line
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "seconds "); ok {
			var secs []metrics.Second
			if json.Unmarshal([]byte(rest), &secs) == nil {
				p.seconds.add(p.index, secs)
			}
			continue
		}
		if rest, ok := strings.CutPrefix(line, "progress "); ok {
			if ops, b, ok := strings.Cut(rest, " "); ok {
				n, _ := strconv.ParseInt(ops, 10, 64)
				m, _ := strconv.ParseInt(b, 10, 64)
				p.ops.Store(n)
				p.bytes.Store(m)
			}
			continue
		}
		p.lines <- line
	}
}

// await waits for the process to say want, or for what stops it saying
// it: an error it reports, its end, the timeout, or ctx.
func (p *jobProc) await(ctx context.Context, want string, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line, ok := <-p.lines:
		switch {
		case !ok:
			return p.failed(errors.New("it ended before it was ready"))
		case line == want:
			return nil
		}
		if err := decodeJobError(ctx, line); err != nil {
			return err
		}
		return p.failed(fmt.Errorf("it said %q where iolab expected %q", line, want))
	case <-t.C:
		return p.failed(fmt.Errorf("it did not say %q within %v", want, timeout))
	case <-ctx.Done():
		return ctx.Err()
	}
}

// outcome reads what the process measured, until it says it is done.
func (p *jobProc) outcome(ctx context.Context, timeout time.Duration) (*metrics.Result, tally, error) {
	var res *metrics.Result
	var t tally
	var runErr error
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				return res, t, errors.Join(runErr, p.failed(errors.New("it ended without saying how its run went")))
			}
			kind, rest, _ := strings.Cut(line, " ")
			switch kind {
			case "result":
				r, err := metrics.UnmarshalWire([]byte(rest))
				if err != nil {
					return nil, t, p.failed(err)
				}
				res = r
			case "tally":
				if err := json.Unmarshal([]byte(rest), &t); err != nil {
					return res, t, p.failed(err)
				}
			case "error":
				runErr = decodeJobError(ctx, line)
			case "done":
				return res, t, runErr
			default:
				return res, t, p.failed(fmt.Errorf("it said %q", line))
			}
		case <-deadline.C:
			return res, t, p.failed(fmt.Errorf("it did not end within %v", timeout))
		}
	}
}

// failed is an error of the job process, with what it wrote to stderr.
func (p *jobProc) failed(err error) error {
	if msg := strings.TrimSpace(p.stderr.String()); msg != "" {
		return fmt.Errorf("a job's process: %w: %s", err, msg)
	}
	return fmt.Errorf("a job's process: %w", err)
}

// The kinds of error a job process reports, so that its parent's caller
// tells them apart as it would in one process.
const (
	jobErrInput       = "input"
	jobErrInterrupted = "interrupted"
	jobErrGrace       = "grace"
	jobErrVerify      = "verify"
	jobErrOther       = "other"
)

// jobErr is how a job process reports an error: its kind, its message,
// and a block that did not read back as written.
type jobErr struct {
	Kind   string       `json:"kind"`
	Msg    string       `json:"msg"`
	Verify *VerifyError `json:"verify,omitempty"`
}

// encodeJobError is the line that reports err.
func encodeJobError(ctx context.Context, err error) string {
	e := jobErr{Kind: jobErrOther, Msg: err.Error()}
	var input *workload.InputError
	switch {
	case errors.As(err, &input):
		e.Kind = jobErrInput
	case errors.Is(err, driver.ErrGraceExceeded):
		e.Kind = jobErrGrace
	case errors.As(err, &e.Verify):
		e.Kind = jobErrVerify
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		e.Kind = jobErrInterrupted
	}
	b, _ := json.Marshal(e)
	return "error " + string(b)
}

// decodeJobError is the error a line reports (nil when it reports none):
// one that says what the job's process said, and is, to errors.Is and
// errors.As, what it was there.
func decodeJobError(ctx context.Context, line string) error {
	rest, ok := strings.CutPrefix(line, "error ")
	if !ok {
		return nil
	}
	var e jobErr
	if err := json.Unmarshal([]byte(rest), &e); err != nil {
		return fmt.Errorf("a job's process: %s", rest)
	}
	switch e.Kind {
	case jobErrInput:
		return &workload.InputError{Err: errors.New(e.Msg)}
	case jobErrGrace:
		return &wrapped{e.Msg, driver.ErrGraceExceeded}
	case jobErrVerify:
		if e.Verify != nil {
			return &wrapped{e.Msg, e.Verify}
		}
	case jobErrInterrupted:
		if err := ctx.Err(); err != nil {
			return &wrapped{e.Msg, err}
		}
		return &wrapped{e.Msg, context.Canceled}
	}
	return errors.New(e.Msg)
}

// wrapped is an error of another process: its message, and what it is.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// serveJob is a job process: it reads its spec, prepares its job, says
// so, runs when told and reports what it measured, a line each.
func serveJob(in io.Reader, out io.Writer) int {
	var mu sync.Mutex
	w := bufio.NewWriter(out)
	say := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = w.WriteString(line + "\n")
		_ = w.Flush()
	}
	say(jobHello)
	r := bufio.NewReader(in)
	line, err := r.ReadBytes('\n')
	if err != nil {
		fmt.Fprintf(os.Stderr, "reading the job: %v\n", err)
		return 2
	}
	var spec jobSpec
	if err := json.Unmarshal(line, &spec); err != nil {
		fmt.Fprintf(os.Stderr, "reading the job: %v\n", err)
		return 2
	}
	// Interrupted as its parent asks; ended with its parent (Pdeathsig,
	// and the end of its input).
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = workload.WithRunInfo(ctx, spec.Run)
	if spec.SinkEvery > 0 {
		ctx = metrics.WithSecondSink(ctx, func(secs []metrics.Second) {
			b, _ := json.Marshal(secs)
			say("seconds " + string(b))
		}, spec.SinkEvery)
	}
	if spec.LatLog != "" {
		log := metrics.LatencyLogOnFile(os.NewFile(3, spec.LatLog), spec.LatLog, spec.LatFio)
		ctx = metrics.WithLatencyLog(ctx, log, spec.LatRun)
	}
	f, err := New(spec.Options)
	if err == nil {
		f.opts.jobOffset = spec.JobOffset
		err = f.Prepare(ctx)
	}
	if err != nil {
		say(encodeJobError(ctx, err))
		say("done")
		return 0
	}
	defer f.Close()
	say("ready")
	if line, err := r.ReadString('\n'); err != nil || line != "go\n" {
		return 0 // the parent gave the run up
	}
	go func() {
		_, _ = r.ReadString('\n') // the parent ended: its input closed
		stop()
	}()
	res, t, err := f.measure(ctx, func(ops, b int64) { say(fmt.Sprintf("progress %d %d", ops, b)) })
	if log, _, ok := metrics.LatencyLogFrom(ctx); ok {
		err = errors.Join(err, log.Err())
	}
	if res != nil {
		b, merr := res.MarshalWire()
		if merr != nil {
			err = errors.Join(err, merr)
		} else {
			say("result " + string(b))
		}
	}
	tb, _ := json.Marshal(t)
	say("tally " + string(tb))
	if err != nil {
		say(encodeJobError(ctx, err))
	}
	say("done")
	return 0
}
