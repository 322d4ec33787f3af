package procgroup

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var errMainThread = errors.New("on the main thread")

func sleeper() *exec.Cmd {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// waiter returns a channel closed when cmd has ended (one Wait per cmd).
func waiter(cmd *exec.Cmd) <-chan struct{} {
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	return done
}

// within says whether done is closed within d.
func within(done <-chan struct{}, d time.Duration) bool {
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// A child forked from a thread that Go retires gets its Pdeathsig then
// (the kernel's rule); one started with Start does not.
func TestStartSurvivesRetiredThreads(t *testing.T) {
	// The kernel's rule, shown: fork from a locked goroutine, let it exit.
	// (Not on the main thread, which Go never retires.)
	direct := sleeper()
	for forked := false; !forked; {
		started := make(chan error)
		go func() {
			runtime.LockOSThread() // exits locked: the thread is retired
			if syscall.Gettid() == syscall.Getpid() {
				started <- errMainThread
				return
			}
			started <- direct.Start()
		}()
		switch err := <-started; err {
		case nil:
			forked = true
		case errMainThread:
		default:
			t.Fatal(err)
		}
	}
	if !within(waiter(direct), 10*time.Second) {
		_ = direct.Process.Kill()
		t.Skip("this kernel does not send Pdeathsig when the forking thread ends")
	}

	cmd := sleeper()
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for range 20 { // retire threads, as fs workers do
		done := make(chan struct{})
		go func() { runtime.LockOSThread(); close(done) }()
		<-done
	}
	if within(waiter(cmd), 500*time.Millisecond) {
		t.Fatal("a child started with Start died when a thread was retired")
	}
}

func TestTrackAndKill(t *testing.T) {
	var seen [][]Group
	tr := &Tracker{OnStart: func(g []Group) { seen = append(seen, g) }}
	ctx := WithTracker(context.Background(), tr)
	cmd := sleeper()
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	untrack := Track(ctx, cmd.Process.Pid)
	groups := tr.List()
	if len(groups) != 1 || groups[0].PGID != cmd.Process.Pid || groups[0].Start == 0 || len(seen) != 1 {
		t.Fatalf("tracked %v, changes %v", groups, seen)
	}
	// A group whose leader's PID now belongs to another process is left
	// alone: here, pretend the start time differs.
	ended := waiter(cmd)
	Kill(Group{PGID: cmd.Process.Pid, Start: groups[0].Start + 1})
	if within(ended, 200*time.Millisecond) {
		t.Fatal("Kill killed a group whose leader had another start time")
	}
	Kill(groups[0])
	if !within(ended, 10*time.Second) {
		t.Fatal("Kill did not kill the group")
	}
	untrack()
	if len(tr.List()) != 0 || len(seen) != 1 {
		t.Fatalf("after untrack: %v, said %v (the end of a group is not said)", tr.List(), seen)
	}
	if StartTime(os.Getpid()) == 0 || Alive(os.Getpid(), 1) {
		t.Fatal("StartTime of this process")
	}
}

// Wait returns when the process has ended, with its exit status, and
// reaps it; a process killed while waited for ends the wait too.
func TestWaitGivesTheEnd(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 0.2; exit 3")
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	err := Wait(cmd)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || cmd.ProcessState == nil {
		t.Fatalf("Wait: %v, state %v; want exit status 3", err, cmd.ProcessState)
	}
	if StartTime(cmd.Process.Pid) != 0 {
		t.Errorf("process %d still in /proc after Wait (not reaped)", cmd.Process.Pid)
	}

	// One that ended before the wait began (a zombie until reaped): its
	// pidfd is readable from the start, which the wait must see.
	quick := exec.Command("true")
	if err := Start(quick); err != nil {
		t.Fatal(err)
	}
	for !zombie(quick.Process.Pid) {
		time.Sleep(time.Millisecond)
	}
	ended := make(chan error, 1)
	go func() { ended <- Wait(quick) }()
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("a process that had ended: Wait %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Wait on a process that had already ended did not return in a minute")
	}

	killed := sleeper()
	if err := Start(killed); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Wait(killed) }()
	_ = killed.Process.Kill()
	if err := <-done; err == nil || killed.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("a killed process: Wait %v, state %v", err, killed.ProcessState)
	}
}

// zombie says whether process pid has ended and waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	s := string(b)
	return err == nil && strings.HasPrefix(strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0], "Z")
}

// A process that ends at once, while other goroutines keep the runtime's
// poller busy: the poller may see its pidfd readable before the wait
// begins, and forget it then; the wait still returns, each of 500 times.
func TestWaitSeesAnEndBeforeIt(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	for range 4 {
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Microsecond):
				}
			}
		}()
	}
	for i := range 500 {
		cmd := exec.Command("true")
		if err := Start(cmd); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- Wait(cmd) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run %d: %v", i, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("run %d of `true`: Wait did not return in a minute", i)
		}
	}
}

// A held command has been loaded and has run nothing of its own until it
// is released; released, it runs to its end untraced; one killed while
// held is reaped by the Wait that follows.
func TestStartHeld(t *testing.T) {
	dir := t.TempDir()
	mark := dir + "/ran"
	cmd := exec.Command("sh", "-c", `grep TracerPid /proc/self/status > "$0"`, mark)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	release, err := StartHeld(cmd)
	if err != nil {
		t.Fatal(err)
	}
	status, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	if !strings.Contains(string(status), "State:\tt (tracing stop)") {
		t.Errorf("held, the command is not stopped where its exec left it:\n%s", status)
	}
	if !strings.Contains(string(status), "Name:\tsh") {
		t.Errorf("held, the command's exec is not done (want sh loaded):\n%s", status)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the held command ran before it was released")
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := Wait(cmd); err != nil {
		t.Fatalf("released: %v", err)
	}
	if b, err := os.ReadFile(mark); err != nil || strings.TrimSpace(string(b)) != "TracerPid:\t0" {
		t.Errorf("released, the command ran traced or not at all: %q, %v", b, err)
	}

	held := exec.Command("sleep", "30")
	held.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if _, err := StartHeld(held); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(-held.Process.Pid, syscall.SIGKILL)
	if !within(waiter(held), time.Minute) {
		t.Fatal("a command killed while held was not reaped")
	}
	if !held.ProcessState.Exited() && held.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("killed while held: %v", held.ProcessState)
	}
}
