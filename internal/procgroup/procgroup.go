// Package procgroup keeps track of the process groups iolab starts — a cmd
// workload's command, a variant's server — so that none outlives iolab: if
// iolab is killed (kill -9 cannot be caught), the next runner of the
// experiment finds the groups in the store and kills them before it redoes
// the run they belonged to.
//
// A Tracker travels in the run's context; whoever starts a process group
// calls Track and the returned function when the group has ended.
package procgroup

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Group is a process group, with its leader's start time so that a reused
// PID is never taken for it.
type Group struct {
	PGID  int   `json:"pgid"`
	Start int64 `json:"start"` // clock ticks since boot, /proc/PID/stat field 22
}

// Tracker is the set of process groups running now.
type Tracker struct {
	mu     sync.Mutex
	groups map[int]int64
	// OnStart, if set, is called with the groups when one is added, while
	// it is being added: a caller that stores them has them stored before
	// the new group does any work. A group that ended is dropped from the
	// list, not said: one still stored is harmless (Kill checks its
	// leader's start time), and the store is spared a write a command —
	// for `iolab cmd true`, one of six a run.
	OnStart func([]Group)
}

// List returns the groups running now.
func (t *Tracker) List() []Group {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.listLocked()
}

func (t *Tracker) listLocked() []Group {
	out := make([]Group, 0, len(t.groups))
	for pgid, start := range t.groups {
		out = append(out, Group{PGID: pgid, Start: start})
	}
	return out
}

func (t *Tracker) set(pgid int, start int64, add bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.groups == nil {
		t.groups = map[int]int64{}
	}
	if add {
		t.groups[pgid] = start
	} else {
		delete(t.groups, pgid)
	}
	if add && t.OnStart != nil {
		t.OnStart(t.listLocked())
	}
}

type trackerKey struct{}

// WithTracker returns a context that carries t.
func WithTracker(ctx context.Context, t *Tracker) context.Context {
	return context.WithValue(ctx, trackerKey{}, t)
}

// Track records that the process group led by pid (started with Setpgid)
// runs, if ctx carries a tracker; call the returned function once it has
// ended.
func Track(ctx context.Context, pid int) (untrack func()) {
	t, _ := ctx.Value(trackerKey{}).(*Tracker)
	if t == nil {
		return func() {}
	}
	t.set(pid, StartTime(pid), true)
	return func() { t.set(pid, 0, false) }
}

// StartTime is the start time of process pid in clock ticks since boot, or
// 0 when it does not exist.
func StartTime(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces and parentheses: count
	// fields after its closing parenthesis.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 {
		return 0
	}
	n, _ := strconv.ParseInt(fields[19], 10, 64)
	return n
}

// Alive says whether process pid runs and started at start.
func Alive(pid int, start int64) bool {
	st := StartTime(pid)
	return st != 0 && st == start
}

// Kill kills what is left of a group a dead runner had started. When its
// leader is gone, the group's members that remain still carry its PGID;
// when a different process now has the leader's PID, the group is not
// ours any more and is left alone.
func Kill(g Group) {
	if st := StartTime(g.PGID); st != 0 && st != g.Start {
		return
	}
	_ = syscall.Kill(-g.PGID, syscall.SIGKILL)
}

// Start starts cmd from a thread that lives as long as iolab does. Linux
// sends a child's Pdeathsig when the *thread* that forked it ends, not the
// process; Go retires threads — the fs workers exit locked to theirs on
// purpose — so a child forked from an ordinary goroutine's thread can be
// killed in the middle of a run. Forking from one thread that never ends
// makes Pdeathsig mean "when iolab dies".
func Start(cmd *exec.Cmd) error {
	return onForker(cmd.Start)
}

// onForker runs f on the thread that lives as long as iolab does (Start):
// the thread a child's Pdeathsig and its tracer (StartHeld) are bound to.
func onForker(f func() error) error {
	forkerOnce.Do(func() {
		forks = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives with the process
			for f := range forks {
				f()
			}
		}()
	})
	done := make(chan error, 1)
	forks <- func() { done <- f() }
	return <-done
}

// StartHeld starts cmd as Start does, held at its first instruction: the
// program is loaded (its exec done) and has run nothing of its own, so
// nothing it would start exists yet. release lets it run. It is held by
// tracing (PTRACE_TRACEME: a traced program stops after its exec), which
// costs a stop and a detach where a gate in a shell costs a shell; the
// trace is gone once released. A program that gains privileges at its
// exec (set-user-ID, file capabilities) would not gain them traced by an
// unprivileged iolab: see Holdable. Where tracing is not allowed (a
// seccomp filter, Yama's ptrace_scope 3), Start fails with EPERM.
func StartHeld(cmd *exec.Cmd) (release func() error, err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Ptrace = true
	err = onForker(func() error {
		if err := cmd.Start(); err != nil {
			return err
		}
		var ws syscall.WaitStatus
		for {
			_, err := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WALL, nil)
			if err == syscall.EINTR { //nolint:errorlint // a bare errno
				continue
			}
			if err != nil {
				return fmt.Errorf("waiting for %s to stop after its exec: %w", cmd.Path, err)
			}
			break
		}
		if !ws.Stopped() {
			return fmt.Errorf("%s ended before it ran (%v)", cmd.Path, ws)
		}
		return nil
	})
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
		return nil, err
	}
	pid := cmd.Process.Pid
	return func() error {
		return onForker(func() error {
			if err := syscall.PtraceDetach(pid); err != nil {
				return fmt.Errorf("releasing %s: %w", cmd.Path, err)
			}
			return nil
		})
	}, nil
}

// Holdable says whether the program at path runs held (StartHeld) as it
// would run otherwise: not when it gains privileges at its exec (a
// set-user-ID or set-group-ID file, or one with file capabilities) and
// iolab could not trace it with them (not root).
func Holdable(path string) bool {
	if os.Geteuid() == 0 {
		return true
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		return false
	}
	n, err := unix.Getxattr(path, "security.capability", nil)
	return n <= 0 && err != nil
}

var (
	forkerOnce sync.Once
	forks      chan func()
)

// Wait waits for cmd's process to end, then for cmd.Wait. The end is
// awaited in the runtime's poller, on a pidfd, not in a blocking wait
// system call: a goroutine held in a system call keeps Go's monitor
// thread waking every 20 µs or more until it has retaken its processor —
// most of the 2.3 ms of CPU a 50 ms command's run cost `iolab cmd` more
// before (bench/cmd_vs_hyperfine, docs/cmd.md). Where pidfds are missing (Linux before
// 5.10), it is cmd.Wait alone.
func Wait(cmd *exec.Cmd) error {
	if fd, err := unix.PidfdOpen(cmd.Process.Pid, unix.PIDFD_NONBLOCK); err == nil {
		f := os.NewFile(uintptr(fd), "pidfd")
		if rc, err := f.SyscallConn(); err == nil {
			// Readable once the process has ended. Asked each time, as a
			// read would be: the poller forgets a readiness it saw before
			// the wait began (a process that ended at once).
			_ = rc.Read(func(fd uintptr) bool {
				for {
					n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
					if err != unix.EINTR { //nolint:errorlint // a bare errno
						return n > 0 || err != nil // an error: cmd.Wait alone
					}
				}
			})
		}
		f.Close()
	}
	return cmd.Wait()
}
