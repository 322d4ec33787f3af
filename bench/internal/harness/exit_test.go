package harness

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The child side of the tests below: the test binary run again with
// HARNESS_CHILD set, as a bench.
func TestMain(m *testing.M) {
	switch os.Getenv("HARNESS_CHILD") {
	case "":
		os.Exit(m.Run())
	case "fatal": // a work directory, then an error
		Main(func() {
			println("dir", WorkDir("", "harness-test-"))
			Fatal("something failed")
		})
	case "wait": // a work directory and a child, then waits to be stopped
		Main(func() {
			println("dir", WorkDir("", "harness-test-"))
			_, _ = Output(exec.Command("sleep", "300"))
		})
	}
}

// child starts the test binary as a bench doing what, and returns it with
// the work directory it made.
func child(t *testing.T, what string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "HARNESS_CHILD="+what)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "dir ")
	if err != nil || !ok {
		t.Fatalf("the child said %q (%v)", line, err)
	}
	go func() { _, _ = bufio.NewReader(stderr).WriteTo(new(strings.Builder)) }()
	return cmd, dir
}

// sleepOf is the pid of the sleep a child started, waited for.
func sleepOf(t *testing.T, parent int) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		// Output forks from a thread of its own: every thread's children.
		tasks, _ := os.ReadDir("/proc/" + itoa(parent) + "/task")
		for _, task := range tasks {
			b, _ := os.ReadFile("/proc/" + itoa(parent) + "/task/" + task.Name() + "/children")
			for _, f := range strings.Fields(string(b)) {
				return atoi(f)
			}
		}
	}
	t.Fatal("the child started no sleep")
	return 0
}

// A bench that fails (Fatal, not log.Fatal) removes its work directory.
func TestFatalRunsWhatAtExitRegistered(t *testing.T) {
	cmd, dir := child(t, "fatal")
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("the bench ended with %v, want exit code 1", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("its work directory %s is left: %v", dir, err)
	}
}

// Ctrl-C removes the work directory; the process a bench started dies
// with it, however it ends — kill -9 included.
func TestWhatABenchStartsDiesWithIt(t *testing.T) {
	cmd, dir := child(t, "wait")
	sleep := sleepOf(t, cmd.Process.Pid)
	_ = cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err == nil || cmd.ProcessState.ExitCode() != 130 {
		t.Errorf("Ctrl-C: the bench ended with %v, want exit code 130", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Ctrl-C left its work directory %s: %v", dir, err)
	}
	gone(t, sleep)

	cmd, dir = child(t, "wait")
	defer os.RemoveAll(dir) // kill -9 runs nothing
	sleep = sleepOf(t, cmd.Process.Pid)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	gone(t, sleep)
}

// gone waits for process pid to end (a zombie counts: its parent died).
func gone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
	}
	t.Errorf("process %d the bench started outlived it", pid)
}

func itoa(n int) string { return strconv.Itoa(n) }

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// -stress is read from the command line before the bench's body parses
// it, in each of the forms flag.Parse takes.
func TestStressArg(t *testing.T) {
	for _, c := range []struct {
		args []string
		n    int
	}{
		{[]string{"-pairs", "6"}, 0},
		{[]string{"-stress", "4"}, 4},
		{[]string{"--stress=2", "-pairs", "6"}, 2},
		{[]string{"-pairs", "6", "-stress"}, 0},
		{[]string{"-stress", "x"}, 0},
		{[]string{"stress", "4"}, 0},
		{[]string{"-stressed", "4"}, 0},
	} {
		if got := stressArg(c.args); got != c.n {
			t.Errorf("%q: %d, want %d", c.args, got, c.n)
		}
	}
}
