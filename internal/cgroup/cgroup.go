// Package cgroup limits what a variant's processes may use — memory and
// CPU — the way a VM of that size would, and reads the kernel's own
// accounting of what they used: peak memory, CPU time, time throttled,
// OOM kills.
//
// A Group is a cgroup created for one run below the cgroup iolab was
// started in, in cgroup v2 where the unified hierarchy offers the
// controllers, else in the v1 memory and cpu hierarchies (a hybrid host
// mounts v2 with no controllers beside them). iolab never moves a process
// out of its own cgroup and writes nowhere else: the command it starts
// joins the group itself before it execs, so every descendant is inside
// from its first instruction. A group is removed when its run ends; one
// left behind by an iolab that was killed is removed by the next
// (RemoveStale), its processes killed first.
package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/procgroup"
	"github.com/iolab/iolab/internal/units"
)

// Limits are what a group's processes may use; zero fields are unlimited.
type Limits struct {
	Memory int64   // bytes of memory (swap is not allowed beside it)
	CPUs   float64 // cores' worth of CPU time per wall second
}

// IsZero says no limit is set.
func (l Limits) IsZero() bool { return l.Memory == 0 && l.CPUs == 0 }

func (l Limits) String() string {
	var parts []string
	if l.Memory > 0 {
		parts = append(parts, "memory "+units.FormatSize(l.Memory))
	}
	if l.CPUs > 0 {
		parts = append(parts, "cpus "+strconv.FormatFloat(l.CPUs, 'g', -1, 64))
	}
	return strings.Join(parts, ", ")
}

// MinMemory is the smallest memory limit accepted: below it nothing starts.
const MinMemory = 4 << 20

// cpuPeriod is the scheduler period quotas are given in, in microseconds.
const cpuPeriod = 100_000

// Usage is the kernel's accounting of a group.
type Usage struct {
	MemoryPeak int64 // bytes; 0 where the kernel does not keep it
	CPU        time.Duration
	HasCPU     bool // CPU is known (v2, or a v1 cpuacct hierarchy)
	Throttled  time.Duration
	OOMKills   int64
}

// Metrics are the usage as a run's figures.
func init() {
	metrics.Declare(
		metrics.Def{Name: "cgroup_memory_peak_bytes", Label: "cgroup memory peak MiB", Unit: "B", Better: metrics.LowerIsBetter, Merge: metrics.MergeMax},
		metrics.Def{Name: "cgroup_cpu_s", Label: "cgroup CPU", Unit: "s", Better: metrics.LowerIsBetter, Zeroable: true},
		metrics.Def{Name: "cgroup_throttled_s", Label: "cgroup CPU throttled", Unit: "s", Better: metrics.LowerIsBetter, Zeroable: true},
		metrics.Def{Name: "cgroup_oom_kills", Label: "OOM kills", Unit: "kills", Better: metrics.LowerIsBetter, Zeroable: true},
	)
}

func (u Usage) Metrics() map[string]float64 {
	m := map[string]float64{"cgroup_oom_kills": float64(u.OOMKills)}
	if u.MemoryPeak > 0 {
		m["cgroup_memory_peak_bytes"] = float64(u.MemoryPeak)
	}
	if u.HasCPU {
		m["cgroup_cpu_s"] = u.CPU.Seconds()
		m["cgroup_throttled_s"] = u.Throttled.Seconds()
	}
	return m
}

// dir is the group's directory in one hierarchy, with what it is for.
type dir struct {
	path    string
	v2      bool
	memory  bool // limits and accounts memory
	cpu     bool // limits CPU (quota), accounts throttling
	cpuacct bool // accounts CPU time
}

// Group is one cgroup, in every hierarchy it needs.
type Group struct {
	Name   string
	Limits Limits
	dirs   []dir
}

var (
	seq        atomic.Int64
	staleOnce  sync.Once
	prefix     = "iolab-"
	removeWait = 5 * time.Second
)

// New creates a group with lim below iolab's own cgroup. Its errors say
// what is missing (a controller, permission) and are returned before
// anything runs.
func New(lim Limits) (*Group, error) {
	h, err := discover()
	if err != nil {
		return nil, err
	}
	staleOnce.Do(func() { removeStale(h) })
	dirs, err := h.choose(lim)
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	g := &Group{Name: fmt.Sprintf("%s%d-%d-%d", prefix, self, procgroup.StartTime(self), seq.Add(1)), Limits: lim}
	for _, d := range dirs {
		d.path = filepath.Join(d.path, g.Name)
		if err := os.Mkdir(d.path, 0o755); err != nil {
			_ = g.Remove()
			return nil, fmt.Errorf("limits (%s): cannot create cgroup %s: %w; limits need write access to iolab's own cgroup (run as root, or in a delegated cgroup)", lim, d.path, unwrapPath(err))
		}
		g.dirs = append(g.dirs, d)
		if err := d.apply(lim); err != nil {
			_ = g.Remove()
			return nil, fmt.Errorf("limits (%s): %w", lim, err)
		}
	}
	return g, nil
}

// Check says whether lim can be applied here, by creating a group with it
// and removing it.
func Check(lim Limits) error {
	if lim.IsZero() {
		return nil
	}
	g, err := New(lim)
	if err != nil {
		return err
	}
	return g.Remove()
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func write(path, value string) error {
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("cannot write %q to %s: %w", value, path, unwrapPath(err))
	}
	return nil
}

// apply writes the limits this directory is for.
func (d dir) apply(lim Limits) error {
	quota := strconv.FormatInt(int64(math.Max(1000, math.Round(lim.CPUs*cpuPeriod))), 10)
	switch {
	case d.v2:
		if lim.Memory > 0 {
			if err := write(filepath.Join(d.path, "memory.max"), strconv.FormatInt(lim.Memory, 10)); err != nil {
				return err
			}
			if err := writeIfThere(filepath.Join(d.path, "memory.swap.max"), "0"); err != nil {
				return err
			}
		}
		if lim.CPUs > 0 {
			return write(filepath.Join(d.path, "cpu.max"), quota+" "+strconv.Itoa(cpuPeriod))
		}
	case d.memory:
		if err := write(filepath.Join(d.path, "memory.limit_in_bytes"), strconv.FormatInt(lim.Memory, 10)); err != nil {
			return err
		}
		// With swap accounting, memory+swap gets the same limit: no swap.
		return writeIfThere(filepath.Join(d.path, "memory.memsw.limit_in_bytes"), strconv.FormatInt(lim.Memory, 10))
	case d.cpu:
		if err := write(filepath.Join(d.path, "cpu.cfs_period_us"), strconv.Itoa(cpuPeriod)); err != nil {
			return err
		}
		return write(filepath.Join(d.path, "cpu.cfs_quota_us"), quota)
	}
	return nil
}

func writeIfThere(path, value string) error {
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	return write(path, value)
}

// joinScript makes the started shell join every group, then exec the
// command: `sh -c SCRIPT iolab-cgroup PROCS... -- COMMAND ARGS...`.
const joinScript = `for f do shift; [ "$f" = -- ] && break; echo $$ > "$f" || { echo "iolab: cannot join cgroup $f" >&2; exit 125; }; done; exec "$@"`

// Wrap makes cmd (not started yet) join the group before it runs: its
// first process writes itself into the group, then execs the command.
func (g *Group) Wrap(cmd *exec.Cmd) error {
	sh, err := exec.LookPath("sh")
	if err != nil {
		return fmt.Errorf("limits: %w", err)
	}
	args := []string{"sh", "-c", joinScript, "iolab-cgroup"}
	for _, d := range g.dirs {
		args = append(args, filepath.Join(d.path, "cgroup.procs"))
	}
	args = append(args, "--", cmd.Path)
	cmd.Args = append(args, cmd.Args[1:]...)
	cmd.Path = sh
	return nil
}

// Usage reads the group's accounting.
func (g *Group) Usage() Usage {
	var u Usage
	for _, d := range g.dirs {
		switch {
		case d.v2:
			u.MemoryPeak = readInt(filepath.Join(d.path, "memory.peak"))
			u.OOMKills = keyed(filepath.Join(d.path, "memory.events"), "oom_kill")
			if cpu, ok := keyedOK(filepath.Join(d.path, "cpu.stat"), "usage_usec"); ok {
				u.CPU, u.HasCPU = time.Duration(cpu)*time.Microsecond, true
			}
			u.Throttled = time.Duration(keyed(filepath.Join(d.path, "cpu.stat"), "throttled_usec")) * time.Microsecond
			continue
		case d.memory:
			u.MemoryPeak = readInt(filepath.Join(d.path, "memory.max_usage_in_bytes"))
			u.OOMKills = keyed(filepath.Join(d.path, "memory.oom_control"), "oom_kill")
		}
		if d.cpu {
			u.Throttled = time.Duration(keyed(filepath.Join(d.path, "cpu.stat"), "throttled_time"))
		}
		if d.cpuacct {
			if _, err := os.Stat(filepath.Join(d.path, "cpuacct.usage")); err == nil {
				u.CPU, u.HasCPU = time.Duration(readInt(filepath.Join(d.path, "cpuacct.usage"))), true
			}
		}
	}
	return u
}

// OOMError says the kernel's OOM killer ended one of the group's
// processes, or nil.
func (g *Group) OOMError(u Usage) error {
	if u.OOMKills == 0 {
		return nil
	}
	return fmt.Errorf("killed by the kernel's OOM killer (%d kill(s)): the memory limit is %s", u.OOMKills, units.HumanSize(g.Limits.Memory))
}

// Remove kills what still runs in the group and removes it from every
// hierarchy.
func (g *Group) Remove() error {
	var errs []error
	for _, d := range g.dirs {
		if err := removeDir(d.path); err != nil {
			errs = append(errs, err)
		}
	}
	g.dirs = nil
	return errors.Join(errs...)
}

func removeDir(path string) error {
	deadline := time.Now().Add(removeWait)
	for {
		err := syscall.Rmdir(path)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", path, err)
		}
		for _, pid := range procs(path) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func procs(path string) []int {
	b, _ := os.ReadFile(filepath.Join(path, "cgroup.procs"))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// RemoveStale removes the groups that iolab processes no longer running
// left below iolab's own cgroup (a kill -9), killing what still runs in
// them. Groups of an iolab that runs are left alone.
func RemoveStale() {
	if h, err := discover(); err == nil {
		staleOnce.Do(func() { removeStale(h) })
	}
}

func removeStale(h *hierarchies) {
	for _, parent := range h.all() {
		entries, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range entries {
			pid, start, ok := owner(e.Name())
			if !e.IsDir() || !ok || procgroup.Alive(pid, start) {
				continue
			}
			_ = removeDir(filepath.Join(parent, e.Name()))
		}
	}
}

// owner parses "iolab-PID-START-SEQ".
func owner(name string) (pid int, start int64, ok bool) {
	f := strings.Split(strings.TrimPrefix(name, prefix), "-")
	if !strings.HasPrefix(name, prefix) || len(f) != 3 {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseInt(f[1], 10, 64)
	_, err3 := strconv.Atoi(f[2])
	return pid, start, err1 == nil && err2 == nil && err3 == nil
}

func readInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

func keyed(path, key string) int64 {
	n, _ := keyedOK(path, key)
	return n
}

// keyedOK reads "key value" lines (memory.events, cpu.stat, oom_control).
func keyedOK(path, key string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		if k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
