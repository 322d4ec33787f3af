package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/iolab/iolab/internal/procgroup"
)

// A bench registers what it must undo (a data directory, a server) with
// AtExit and ends on an error with Fatal: log.Fatal would exit without
// running deferred calls, leaving them behind. Ctrl-C and SIGTERM run
// them too.
var (
	cleanupMu sync.Mutex
	cleanups  []func()
	signals   sync.Once
)

// AtExit registers f to run when the bench ends through Fatal, Exit or a
// signal, the latest registered first.
func AtExit(f func()) {
	signals.Do(func() {
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt, syscall.SIGTERM)
		go func() {
			s := <-c
			fmt.Fprintf(os.Stderr, "bench: %v: stopping\n", s)
			Exit(130)
		}()
	})
	cleanupMu.Lock()
	cleanups = append(cleanups, f)
	cleanupMu.Unlock()
}

// Exit runs what AtExit registered, once, and exits with code.
func Exit(code int) {
	cleanupMu.Lock()
	fs := cleanups
	cleanups = nil
	cleanupMu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
	os.Exit(code)
}

// Fatal prints its arguments as fmt.Sprint does, runs what AtExit
// registered and exits with 1.
func Fatal(v ...any) {
	fmt.Fprintln(os.Stderr, fmt.Sprint(v...))
	Exit(1)
}

// Fatalf is Fatal with a format.
func Fatalf(format string, v ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", v...)
	Exit(1)
}

// WorkDir makes a temporary directory in parent ("": the system's)
// removed when the bench ends, however it ends (but kill -9).
func WorkDir(parent, pattern string) string {
	dir, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		Fatal(err)
	}
	AtExit(func() { os.RemoveAll(dir) })
	return dir
}

// Main runs a bench's body, then what AtExit registered; a panic in it
// runs them too (and exits with 2). A body that ends well is followed by a
// line on how busy the machine was with anything else while it ran.
func Main(body func()) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "panic: %v\n%s", r, debug.Stack())
			Exit(2)
		}
	}()
	stressing = startStress(os.Args[1:])
	load := startMachineLoad()
	body()
	fmt.Printf("\n%s\n", load)
	Exit(0)
}

// Output runs cmd as exec.Cmd.Output does, killed if the bench dies
// (Pdeathsig, forked from a thread that lives as long as the bench).
func Output(cmd *exec.Cmd) ([]byte, error) {
	out, _, err := Measured(cmd, 0)
	return out, err
}

// Measured is Output that also samples cmd's CPU every interval while it
// runs (0: not at all), ending with what getrusage says it took, so the
// CPU it spent in any window of its life can be read after.
func Measured(cmd *exec.Cmd, interval time.Duration) ([]byte, *CPUSampler, error) {
	var out, stderr bytes.Buffer
	if cmd.Stdout == nil {
		cmd.Stdout = &out
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &stderr
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := procgroup.Start(cmd); err != nil {
		return nil, nil, err
	}
	var cpu *CPUSampler
	if interval > 0 {
		cpu = SampleCPU(cmd.Process.Pid, interval)
	}
	err := cmd.Wait()
	if cpu != nil {
		cpu.Stop()
		cpu.add(time.Now(), CPUSeconds(cmd))
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ee.Stderr = stderr.Bytes()
	}
	return out.Bytes(), cpu, err
}

// CombinedOutput is exec.Cmd.CombinedOutput as Output runs it.
func CombinedOutput(cmd *exec.Cmd) ([]byte, error) {
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	_, err := Output(cmd)
	return b.Bytes(), err
}

// Run is exec.Cmd.Run as Output runs it.
func Run(cmd *exec.Cmd) error {
	_, err := Output(cmd)
	return err
}
