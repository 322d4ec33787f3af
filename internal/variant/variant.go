// Package variant gives each variant of an experiment its lifecycle: a
// working directory (the plan's, or a git worktree of the variant's ref), a
// build, a free loopback port, and — for variants that are servers — start,
// wait until ready, and stop, always killing the whole process tree, also on
// errors and Ctrl-C.
package variant

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/iolab/iolab/internal/cgroup"
	"github.com/iolab/iolab/internal/outtail"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/procgroup"
)

// Variant is a prepared variant.
type Variant struct {
	Name    string
	Workdir string
	Port    int
	Tmp     string
	Commit  string // git commit of a git variant
	spec    plan.Variant
	planDir string
	// env is the variant's env: as written; it is expanded at every use,
	// so {{port}} is the port of the start it serves.
	env     map[string]string
	ports   plan.PortRange
	server  *exec.Cmd
	output  *outtail.Tail
	exited  chan struct{}
	untrack func()            // the server's process group leaves the lease's list
	params  map[string]string // the running server's cell's templates
	cleanup []func()
	root    string // a git variant's worktree (Workdir may be below it)
	// FromCache is the build cache's entry the variant's build came
	// from ("": it was built).
	FromCache string
}

// Prepare checks out, builds and readies a variant's working directory under
// runDir (one directory per variant). Errors carry the tail of the failing
// command's output.
// Its ports (one for each start of its server) come from ports, or from
// the kernel's ephemeral range when ports is zero.
//
// The build's output goes, a line at a time, to line (nil: nowhere), so a
// long build shows what it does.
func Prepare(ctx context.Context, spec plan.Variant, planDir, runDir string, ports plan.PortRange, line func(string)) (*Variant, error) {
	return PrepareFrom(ctx, nil, nil, spec, planDir, runDir, ports, line)
}

// PrepareFrom is Prepare taking a git variant's checkout and build from
// builds (nil: its own, under runDir), which keeps them, and its build
// from cache (nil: none), which keeps it across experiments.
func PrepareFrom(ctx context.Context, builds *Builds, cache *Cache, spec plan.Variant, planDir, runDir string, ports plan.PortRange, line func(string)) (*Variant, error) {
	v := &Variant{Name: spec.Name, spec: spec, planDir: planDir, Workdir: planDir, env: spec.Env, ports: ports}
	var err error
	if v.Port, err = freePort(ports); err != nil {
		return nil, fmt.Errorf("variant %s: %w", v.Name, err)
	}
	v.Tmp = filepath.Join(runDir, dirName(v.Name)+"-tmp")
	if err := os.MkdirAll(v.Tmp, 0o755); err != nil {
		return nil, fmt.Errorf("variant %s: %w", v.Name, err)
	}
	if spec.Git != nil && builds != nil {
		if err := builds.prepare(ctx, v, line); err != nil {
			v.Close()
			return nil, err
		}
		return v, nil
	}
	if spec.Git != nil {
		if err := v.checkout(ctx, filepath.Join(runDir, dirName(v.Name))); err != nil {
			v.Close()
			return nil, err
		}
	}
	if spec.Workdir != "" {
		v.Workdir = v.abs(v.Workdir, spec.Workdir)
	}
	if err := v.buildVia(ctx, cache, line); err != nil {
		v.Close()
		return nil, err
	}
	return v, nil
}

// buildVia builds the variant, a git variant's through cache when there
// is one.
func (v *Variant) buildVia(ctx context.Context, cache *Cache, line func(string)) error {
	if line == nil {
		line = func(string) {}
	}
	if cache != nil && v.spec.Git != nil && v.spec.Build != "" {
		return cache.prepare(ctx, v, line)
	}
	return v.build(ctx, line)
}

// build runs the variant's build command, if any, in its workdir.
func (v *Variant) build(ctx context.Context, line func(string)) error {
	if v.spec.Build == "" {
		return nil
	}
	if out, err := v.shellLines(ctx, v.Expand(v.spec.Build), line); err != nil {
		return &BuildError{fmt.Errorf("variant %s: build %q failed: %v; output ends: %s", v.Name, v.spec.Build, err, outtail.OneLine(out))}
	}
	return nil
}

// BuildError is a variant whose build command failed (not its checkout).
type BuildError struct{ Err error }

func (e *BuildError) Error() string { return e.Err.Error() }
func (e *BuildError) Unwrap() error { return e.Err }

// dirName is a variant's directory under the run's: its name where that
// is a plain file name, else the name's letters and a hash of it — a name
// may be a command line ("./bench --fast"), with slashes and dots.
func dirName(name string) string {
	safe := strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.') {
			return r
		}
		return '_'
	}, name)
	if safe == name && name != "." && name != ".." && len(name) <= 64 {
		return name
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	if len(safe) > 32 {
		safe = safe[:32]
	}
	return fmt.Sprintf("%s-%08x", strings.Trim(safe, "."), h.Sum32())
}

func (v *Variant) abs(base, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(base, p)
}

func (v *Variant) checkout(ctx context.Context, dir string) error {
	repo := v.abs(v.planDir, v.spec.Git.Repo)
	out, err := runGit(ctx, repo, "worktree", "add", "--detach", "--force", dir, v.spec.Git.Ref)
	if err != nil {
		return fmt.Errorf("variant %s: git checkout of %s at %q failed: %s", v.Name, repo, v.spec.Git.Ref, outtail.OneLine(out))
	}
	v.cleanup = append(v.cleanup, func() {
		_, _ = runGit(context.Background(), repo, "worktree", "remove", "--force", dir)
	})
	v.Workdir, v.root = dir, dir
	rev, err := runGit(ctx, dir, "rev-parse", "HEAD")
	if err != nil {
		return fmt.Errorf("variant %s: git rev-parse HEAD in its worktree: %v: %s", v.Name, err, outtail.OneLine(rev))
	}
	v.Commit = strings.TrimSpace(string(rev))
	return nil
}

// gitTimeout bounds every git command: a checkout of a large repository
// takes seconds, and a git that waits for a lock or a prompt must not hang
// the experiment.
const gitTimeout = 5 * time.Minute

// runGit runs git in dir and returns its combined output: no prompts, no
// background maintenance (a detached "gc --auto" would hold the output
// pipe open), killed after gitTimeout, and done at most 5 s after git
// exits even if a descendant still holds its output.
func runGit(ctx context.Context, dir string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	return gitCommand(ctx, dir, args...).CombinedOutput()
}

// Git runs git in dir as a variant's checkout does (runGit) and returns
// what it printed on its standard output; a failure carries what it
// printed on its standard error.
func Git(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	out, err := gitCommand(ctx, dir, args...).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		err = fmt.Errorf("%s", strings.TrimSpace(string(ee.Stderr)))
	}
	return string(out), err
}

func gitCommand(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir, "-c", "gc.auto=0", "-c", "maintenance.auto=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Spec is the variant as the plan wrote it.
func (v *Variant) Spec() plan.Variant { return v.spec }

// Expand replaces the templates a plan may use in commands and fields.
func (v *Variant) Expand(s string) string { return v.ExpandWith(s, nil) }

// ExpandWith replaces the variant's templates and a cell's own ({{size}}
// for a matrix field size).
func (v *Variant) ExpandWith(s string, params map[string]string) string {
	pairs := []string{"{{variant}}", v.Name, "{{workdir}}", v.Workdir, "{{tmp}}", v.Tmp, "{{port}}", strconv.Itoa(v.Port)}
	for k, x := range params {
		pairs = append(pairs, "{{"+k+"}}", x)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// HasServer says whether the variant starts a server for every run.
func (v *Variant) HasServer() bool { return v.spec.Start != "" }

// ServerPID is the process (and process group) of the running server, or
// 0 when none runs.
func (v *Variant) ServerPID() int {
	if v.server == nil {
		return 0
	}
	return v.server.Process.Pid
}

// Env is the environment of the variant's commands: iolab's own, and the
// variant's env: with its templates filled now ({{port}} is the port of
// the server's current start).
func (v *Variant) Env() []string {
	env := os.Environ()
	for _, k := range slices.Sorted(maps.Keys(v.env)) {
		env = append(env, k+"="+v.Expand(v.env[k]))
	}
	return env
}

func (v *Variant) shell(ctx context.Context, script string) ([]byte, error) {
	return v.shellLines(ctx, script, nil)
}

// shellLines runs script as shell does, handing each line of its output
// to line as it comes (nil: to nothing); it returns the whole output.
func (v *Variant) shellLines(ctx context.Context, script string, line func(string)) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Dir, cmd.Env = v.Workdir, v.Env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out := &lineWriter{line: line}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	return out.all.Bytes(), err
}

// lineWriter keeps what is written and hands on each line as it ends.
type lineWriter struct {
	all  bytes.Buffer
	from int // where the line being written began
	line func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.all.Write(p)
	if w.line == nil {
		return len(p), nil
	}
	b := w.all.Bytes()
	for {
		i := bytes.IndexByte(b[w.from:], '\n')
		if i < 0 {
			return len(p), nil
		}
		w.line(string(b[w.from : w.from+i]))
		w.from += i + 1
	}
}

// Hook runs a plan hook (before/after a run or round) in the variant's
// working directory.
func (v *Variant) Hook(ctx context.Context, name, script string, params map[string]string) error {
	if script == "" {
		return nil
	}
	if out, err := v.shell(ctx, v.ExpandWith(script, params)); err != nil {
		return fmt.Errorf("hook %s %q: %v; output ends: %s", name, script, err, outtail.OneLine(out))
	}
	return nil
}

// NewPort picks a free loopback port for the next start: every run's
// server gets its own, so a server still letting go of the last one (a
// socket in TIME_WAIT, a child that lingers) cannot fail the next.
func (v *Variant) NewPort() error {
	port, err := freePort(v.ports)
	if err != nil {
		return fmt.Errorf("variant %s: %w", v.Name, err)
	}
	v.Port = port
	return nil
}

// Start starts the variant's server, if it has one, and waits until it is
// ready. params fill a cell's templates in the start command; group, if
// not nil, is the cgroup the server runs in.
func (v *Variant) Start(ctx context.Context, params map[string]string, group *cgroup.Group) error {
	if v.spec.Start == "" {
		return nil
	}
	cmd := exec.Command("sh", "-c", v.ExpandWith(v.spec.Start, params))
	cmd.Dir, cmd.Env = v.Workdir, v.Env()
	// Its own process group, so stopping reaches every descendant; and a
	// SIGKILL to the server if iolab itself dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	v.output = &outtail.Tail{Max: 4096}
	cmd.Stdout, cmd.Stderr = v.output, v.output
	if group != nil {
		if err := group.Wrap(cmd); err != nil {
			return fmt.Errorf("variant %s: %w", v.Name, err)
		}
	}
	if err := procgroup.Start(cmd); err != nil {
		return fmt.Errorf("variant %s: start: %w", v.Name, err)
	}
	v.server, v.exited, v.params = cmd, make(chan struct{}), params
	v.untrack = procgroup.Track(ctx, cmd.Process.Pid)
	go func() { _ = procgroup.Wait(cmd); close(v.exited) }()
	if err := v.waitReady(ctx); err != nil {
		out := v.output.String()
		_ = v.Stop()
		return fmt.Errorf("variant %s: %w; output ends: %s", v.Name, err, out)
	}
	return nil
}

func (v *Variant) waitReady(ctx context.Context) error {
	r := v.spec.Ready
	if r == nil {
		return nil
	}
	deadline := time.Now().Add(r.Timeout)
	for {
		if v.ready(ctx, r) {
			return nil
		}
		select {
		case <-v.exited:
			return fmt.Errorf("server exited before it was ready (%s)", v.server.ProcessState)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v (%s)", r.Timeout, v.readyCheck(r))
		}
	}
}

func (v *Variant) readyCheck(r *plan.Ready) string {
	switch {
	case r.HTTP != "":
		return "GET " + v.ExpandWith(r.HTTP, v.params)
	case r.TCP != "":
		return "connect " + v.ExpandWith(r.TCP, v.params)
	}
	return "command " + r.Cmd
}

func (v *Variant) ready(ctx context.Context, r *plan.Ready) bool {
	switch {
	case r.HTTP != "":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.ExpandWith(r.HTTP, v.params), nil)
		if err != nil {
			return false
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode < 500
	case r.TCP != "":
		c, err := net.DialTimeout("tcp", v.ExpandWith(r.TCP, v.params), time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	case r.Cmd != "":
		_, err := v.shell(ctx, v.ExpandWith(r.Cmd, v.params))
		return err == nil
	}
	return true
}

// Stop stops the server's whole process group: the plan's signal, then
// SIGKILL after the grace period.
func (v *Variant) Stop() error {
	if v.server == nil {
		return nil
	}
	sig, _ := plan.ParseSignal(v.spec.Stop.Signal)
	pgid := v.server.Process.Pid
	_ = syscall.Kill(-pgid, sig)
	select {
	case <-v.exited:
	case <-time.After(v.spec.Stop.Grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-v.exited
	}
	// Descendants that ignored the signal go too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	v.server = nil
	v.untrack()
	return nil
}

// Close stops the server and removes the worktree.
func (v *Variant) Close() error {
	err := v.Stop()
	for _, f := range v.cleanup {
		f()
	}
	v.cleanup = nil
	return err
}

// freePort finds a loopback port nothing listens on: any (the kernel's
// choice) when r is zero, else one of r, tried from a random place in it so
// that two experiments sharing a range rarely pick the same.
func freePort(r plan.PortRange) (int, error) {
	if r.IsZero() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port, nil
	}
	n := r.Hi - r.Lo + 1
	start := rand.IntN(n)
	for i := range n {
		port := r.Lo + (start+i)%n
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port in ports %s: every one is in use; widen the range", r)
}
