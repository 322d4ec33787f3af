// Package cmd is the command workload: one shell command per run, timed as a
// whole process — wall, user and system CPU, peak RSS — with a non-zero exit
// an error. When the plan says how many bytes or items one run handles, the
// run also has a throughput.
package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/shlex"

	"github.com/iolab/iolab/internal/cgroup"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/observe"
	"github.com/iolab/iolab/internal/outtail"
	"github.com/iolab/iolab/internal/procgroup"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/workload"
)

// Options is one command.
type Options struct {
	// Run is a shell command (sh -c), run in Dir with Env.
	Run string
	// Shell runs Run with -c: "" is sh; ShellNone runs Run's words
	// (split as a shell splits them, quotes kept together) with no shell.
	Shell string
	Dir   string
	Env   []string
	// BytesPerRun and ItemsPerRun, when set, give bytes_per_s and
	// items_per_s.
	BytesPerRun int64
	ItemsPerRun int64
	// Timeout kills the command's process group; 0 means none.
	Timeout time.Duration
	// Params are shown and stored as the cell's parameters.
	Params map[string]string
	// Limits, if set, confine the command's process tree to a cgroup of
	// that size for the run; the cgroup's accounting joins the result.
	Limits cgroup.Limits
	// KeepOutput keeps the lines the command prints on stdout as the
	// run's Outputs (a plan's setup step).
	KeepOutput bool
	// Show, if set, gets the command's stdout and stderr as it prints
	// them (--show-output); it must be safe for concurrent use.
	Show io.Writer
	// Metrics are figures read from what the command prints (phases of
	// its own, counts): stored with the run's, and a run that does not
	// print one fails.
	Metrics []Metric
}

// Cmd is the workload.
type Cmd struct {
	opts   Options
	output []string
}

// maxOutput bounds what a setup command may hand on.
const maxOutput = 64 << 20

// ShellNone is the Shell that runs a command with no shell (hyperfine's
// -N, --shell=none).
const ShellNone = "none"

// New checks opts.
func New(opts Options) (*Cmd, error) {
	if strings.TrimSpace(opts.Run) == "" {
		return nil, errors.New("cmd.run: want a shell command")
	}
	switch opts.Shell {
	case "":
	case ShellNone:
		if _, err := words(opts.Run); err != nil {
			return nil, err
		}
	default:
		if _, err := exec.LookPath(opts.Shell); err != nil {
			return nil, fmt.Errorf("cmd.shell %q: no such program (want a shell that takes -c, such as sh or bash, or none): %w", opts.Shell, err)
		}
	}
	return &Cmd{opts: opts}, nil
}

// words are a command run with no shell: its words as a shell splits them
// (quotes and backslashes keep a word together), nothing expanded.
func words(run string) ([]string, error) {
	w, err := shlex.Split(run)
	if err != nil || len(w) == 0 {
		return nil, fmt.Errorf("cmd.run %q: with shell none, want a program and its arguments, as a shell would split them (%v)", run, err)
	}
	return w, nil
}

// gate is what the shell runs before the command: it waits until iolab
// has recorded the process group (fd 3 closed by iolab), then closes its
// copy.
const gate = "read -r _ <&3; "

// command is the process of one run of script: a shell that waits at the
// gate, then runs the script. With no shell, held (procgroup.StartHeld):
// the command itself, in its own place, its words as they are; not held,
// a shell that waits at the gate, then puts the command in its place
// (exec). Nothing of a shell's start-up or parsing is in the run's time,
// which begins when the command is released.
func (c *Cmd) command(script string, held bool) (*exec.Cmd, error) {
	switch c.opts.Shell {
	case ShellNone:
		w, err := words(script)
		if err != nil {
			return nil, err
		}
		if held {
			return exec.Command(w[0], w[1:]...), nil
		}
		return exec.Command("sh", append([]string{"-c", gate + `exec "$@" 3<&-`, "iolab"}, w...)...), nil
	case "":
		return exec.Command("sh", "-c", gate+"exec 3<&-\n"+script), nil
	}
	return exec.Command(c.opts.Shell, "-c", gate+"exec 3<&-\n"+script), nil
}

// holdRefused is set once the system refused to hold a command
// (StartHeld: tracing not allowed): from then on commands wait at a
// shell's gate.
var holdRefused atomic.Bool

// start starts the run's process, held until release is called: at its
// first instruction where it can be (no shell, no limits to join, a
// program that runs held as it would otherwise), else at its shell's
// gate (fd 3: wait, whose other end release closes).
func (c *Cmd) start(script string, wait, gateEnd *os.File, group *cgroup.Group) (*exec.Cmd, runOutputs, func() error, error) {
	held := c.opts.Shell == ShellNone && group == nil && !holdRefused.Load()
	for {
		cmd, err := c.command(script, held)
		if err != nil {
			return nil, runOutputs{}, nil, err
		}
		if held && (cmd.Err != nil || !procgroup.Holdable(cmd.Path)) {
			held = false // not found: the shell says so, as before; privileged: see Holdable
			continue
		}
		cmd.Dir, cmd.Env = c.opts.Dir, c.opts.Env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		o := c.outputs(cmd)
		if held {
			release, err := procgroup.StartHeld(cmd)
			if errors.Is(err, syscall.EPERM) {
				holdRefused.Store(true)
				held = false
				continue
			}
			return cmd, o, release, err
		}
		cmd.ExtraFiles = []*os.File{wait}
		if group != nil {
			if err := group.Wrap(cmd); err != nil {
				return nil, o, nil, err
			}
		}
		return cmd, o, gateEnd.Close, procgroup.Start(cmd)
	}
}

// Kind implements workload.Workload.
func (c *Cmd) Kind() string { return "cmd" }

// Params implements workload.Workload.
func (c *Cmd) Params() map[string]string {
	p := map[string]string{"run": c.opts.Run}
	if c.opts.Shell != "" {
		p["shell"] = c.opts.Shell
	}
	for k, v := range c.opts.Params {
		p[k] = v
	}
	if c.opts.BytesPerRun > 0 {
		p["bytes"] = units.FormatSize(c.opts.BytesPerRun)
	}
	if c.opts.ItemsPerRun > 0 {
		p["items"] = fmt.Sprint(c.opts.ItemsPerRun)
	}
	return p
}

// Prepare implements workload.Workload.
func (c *Cmd) Prepare(context.Context) error { return nil }

// Close implements workload.Workload.
func (c *Cmd) Close() error { return nil }

// Run runs the command once. Cancelling ctx kills its process group.
func (c *Cmd) Run(ctx context.Context, _ func(ops, bytes int64)) (*metrics.Result, error) {
	if c.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
	}
	script := c.opts.Run
	if ri, ok := workload.RunInfoFrom(ctx); ok {
		script = strings.NewReplacer("{{run}}", strconv.Itoa(ri.Run), "{{round}}", strconv.Itoa(ri.Round)).Replace(script)
	}
	// The command waits, before anything of its own, until iolab has
	// recorded its process group (procgroup.Track): a runner killed at
	// any moment after leaves nothing a resume cannot find. It is held
	// at its first instruction, or at a shell's gate: fd 3, closed by
	// iolab once recorded, and by the shell after (start).
	wait, gateEnd, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("cmd %q: %w", c.opts.Run, err)
	}
	defer wait.Close()
	defer gateEnd.Close()
	var group *cgroup.Group
	if !c.opts.Limits.IsZero() {
		var err error
		if group, err = cgroup.New(c.opts.Limits); err != nil {
			return nil, err
		}
		defer group.Remove()
	}
	cmd, o, release, err := c.start(script, wait, gateEnd, group)
	wait.Close()
	if err != nil {
		return nil, fmt.Errorf("cmd %q: %w", c.opts.Run, err)
	}
	// What the command left in its process group when it ended (a
	// background child) goes with it; if iolab dies first, the next runner
	// kills the group (procgroup).
	untrack := procgroup.Track(ctx, cmd.Process.Pid)
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); untrack() }()
	// Timed from its release: recording the group (a write to the store)
	// is iolab's time, not the command's.
	start := time.Now()
	if err := release(); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return nil, fmt.Errorf("cmd %q: %w", c.opts.Run, err)
	}
	watch := observe.WatchTreeMemory(cmd.Process.Pid, 10*time.Millisecond)
	waited := make(chan error, 1)
	go func() { waited <- procgroup.Wait(cmd) }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-waited
	}
	wall := time.Since(start)
	res := c.figures(cmd, start, wall, watch.Stop())
	var oom error
	if group != nil {
		u := group.Usage()
		maps.Copy(res.Extra, u.Metrics())
		oom = group.OOMError(u)
	}
	var extractErr error
	if o.found != nil && err == nil && ctx.Err() == nil {
		var values map[string]float64
		if values, extractErr = o.found.finish(o.streams...); extractErr == nil {
			maps.Copy(res.Extra, values)
		}
	}
	return c.outcome(ctx, res, o, oom, err, extractErr)
}

// runOutputs are where a run's output goes: the tail an error quotes, the
// metrics read from each stream, stdout kept whole (KeepOutput).
type runOutputs struct {
	tail    *outtail.Tail
	found   *findings
	streams []*extractor
	stdout  *boundedBuffer
}

// outputs sets where cmd's output goes.
func (c *Cmd) outputs(cmd *exec.Cmd) runOutputs {
	o := runOutputs{tail: &outtail.Tail{Max: 2048}}
	cmd.Stdout, cmd.Stderr = o.tail, o.tail
	if len(c.opts.Metrics) > 0 {
		// A stream each, so a line of one is never cut by a write of the
		// other.
		o.found = newFindings(c.opts.Metrics)
		o.streams = []*extractor{{found: o.found}, {found: o.found}}
		cmd.Stdout, cmd.Stderr = io.MultiWriter(o.tail, o.streams[0]), io.MultiWriter(o.tail, o.streams[1])
	}
	if c.opts.KeepOutput {
		o.stdout = &boundedBuffer{max: maxOutput}
		cmd.Stdout = io.MultiWriter(cmd.Stdout, o.stdout)
	}
	if c.opts.Show != nil {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(cmd.Stdout, c.opts.Show), io.MultiWriter(cmd.Stderr, c.opts.Show)
	}
	return o
}

// figures are what a run of the ended command measured: its wall time,
// its CPU, its tree's peak memory, its exit code, and the rates the plan
// declared per run.
func (c *Cmd) figures(cmd *exec.Cmd, start time.Time, wall time.Duration, peak observe.TreePeak) *metrics.Result {
	res := &metrics.Result{Start: start, Duration: wall, Extra: map[string]float64{"wall_s": wall.Seconds()}}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.CPUUserS = time.Duration(ru.Utime.Nano()).Seconds()
		res.CPUSysS = time.Duration(ru.Stime.Nano()).Seconds()
		res.Extra["user_s"], res.Extra["sys_s"] = res.CPUUserS, res.CPUSysS
		// The tree's own block I/O (Linux counts it in 512-byte units):
		// what says whether the storage others waited for was its own.
		res.Extra["disk_read_bytes"], res.Extra["disk_write_bytes"] = float64(ru.Inblock)*512, float64(ru.Oublock)*512
	}
	// The process tree's own peak, from /proc (ru_maxrss would be iolab's).
	if peak.Samples > 0 {
		res.Extra["max_rss_bytes"] = float64(peak.RSSBytes)
	}
	res.Extra["exit_code"] = float64(cmd.ProcessState.ExitCode())
	if c.opts.BytesPerRun > 0 {
		res.Extra["bytes_per_s"] = float64(c.opts.BytesPerRun) / wall.Seconds()
	}
	if c.opts.ItemsPerRun > 0 {
		res.Extra["items_per_s"] = float64(c.opts.ItemsPerRun) / wall.Seconds()
	}
	return res
}

// outcome is how the run went: killed at its timeout, interrupted, out of
// memory, failed, its metrics not found, too much output — each a failed
// operation the result says — or its output kept.
func (c *Cmd) outcome(ctx context.Context, res *metrics.Result, o runOutputs, oom, err, extractErr error) (*metrics.Result, error) {
	out, stdout := o.tail, o.stdout
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.Errors, res.FirstError = 1, fmt.Sprintf("cmd %q: killed after the %v timeout", c.opts.Run, c.opts.Timeout)
	case ctx.Err() != nil:
		return res, ctx.Err()
	case oom != nil:
		res.Errors, res.FirstError = 1, fmt.Sprintf("cmd %q: %v; output ends: %s", c.opts.Run, oom, out)
	case err != nil:
		res.Errors, res.FirstError = 1, fmt.Sprintf("cmd %q: %v; output ends: %s", c.opts.Run, err, out)
	case extractErr != nil:
		res.Errors, res.FirstError = 1, fmt.Sprintf("cmd %q: %v", c.opts.Run, extractErr)
	case stdout != nil && stdout.over:
		res.Errors, res.FirstError = 1, fmt.Sprintf("cmd %q: printed more than %s on stdout; a setup step hands on at most that", c.opts.Run, units.FormatSize(maxOutput))
	case stdout != nil:
		c.output = nil
		for _, line := range strings.Split(stdout.String(), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				c.output = append(c.output, line)
			}
		}
	}
	return res, nil
}

// Outputs implements workload.Outputter: the lines the last run printed
// on stdout (with KeepOutput).
func (c *Cmd) Outputs() []string {
	out := c.output
	c.output = nil
	return out
}

// boundedBuffer keeps what is written up to max bytes.
type boundedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		b.over = true
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
