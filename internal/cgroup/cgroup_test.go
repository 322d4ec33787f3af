package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	// This machine's kind: v1 controllers beside an empty v2 mount, iolab
	// in a memory sub-cgroup.
	hybrid := parse(`4:memory:/process_api/ab2a
2:cpuacct:/
1:cpu:/
0::/`, `31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw`)
	want := map[string]string{"memory": "/sys/fs/cgroup/memory/process_api/ab2a", "cpu": "/sys/fs/cgroup/cpu", "cpuacct": "/sys/fs/cgroup/cpuacct"}
	for c, p := range want {
		if hybrid.v1[c] != p {
			t.Errorf("hybrid v1 %s = %q, want %q", c, hybrid.v1[c], p)
		}
	}
	if hybrid.v2 != "/sys/fs/cgroup/unified" {
		t.Errorf("hybrid v2 = %q", hybrid.v2)
	}
	// With no controllers in v2, v1 is chosen, cpuacct beside cpu.
	dirs, err := hybrid.choose(Limits{Memory: 64 << 20, CPUs: 1})
	if err != nil || len(dirs) != 3 || dirs[0].path != want["memory"] || !dirs[0].memory || !dirs[1].cpu || !dirs[2].cpuacct {
		t.Errorf("hybrid choose = %+v, %v", dirs, err)
	}

	// A container: v2 only, its namespace's root mounted at /sys/fs/cgroup,
	// a path with a space (mountinfo escapes it).
	v2 := parse("0::/kubepods/pod1/c 1\n", `25 20 0:26 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw
26 20 0:27 / /mnt/my\040cg rw - cgroup cgroup rw,memory`)
	if v2.v2 != "/sys/fs/cgroup/c 1" {
		t.Errorf("container v2 = %q", v2.v2)
	}
	if len(v2.v1) != 0 {
		t.Errorf("container v1 = %v, want none (iolab has no v1 memory cgroup in /proc/self/cgroup)", v2.v1)
	}
	_, err = v2.choose(Limits{CPUs: 1})
	if err == nil || !strings.Contains(err.Error(), "no cpu controller") {
		t.Errorf("choose without a cpu controller: %v", err)
	}
	if d := parse("3:cpu,cpuacct:/a\n", "1 0 0:1 / /cg rw - cgroup cgroup rw,cpu,cpuacct"); d.v1["cpu"] != "/cg/a" || d.v1["cpuacct"] != "/cg/a" {
		t.Errorf("co-mounted = %v", d.v1)
	} else if dirs, _ := d.choose(Limits{CPUs: 2}); len(dirs) != 1 || !dirs[0].cpu || !dirs[0].cpuacct {
		t.Errorf("co-mounted choose = %+v", dirs)
	}
}

// available skips where this machine cannot give limits (no permission);
// CI runs as root on a host with cgroups, where these tests run.
func available(t *testing.T, lim Limits) {
	t.Helper()
	if err := Check(lim); err != nil {
		t.Skipf("cgroups cannot be used here: %v", err)
	}
}

// hog builds testdata/hog once: a program that allocates or burns what
// it is told.
func hog(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	hogOnce.Do(func() {
		dir, err := os.MkdirTemp("", "iolab-hog")
		if err != nil {
			hogErr = err
			return
		}
		hogPath = filepath.Join(dir, "hog")
		out, err := exec.Command("go", "build", "-o", hogPath, "./testdata/hog").CombinedOutput()
		if err != nil {
			hogErr = fmt.Errorf("go build ./testdata/hog: %v: %s", err, out)
		}
	})
	if hogErr != nil {
		t.Fatal(hogErr)
	}
	return exec.Command(hogPath, args...)
}

var (
	hogOnce sync.Once
	hogPath string
	hogErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if hogPath != "" {
		os.RemoveAll(filepath.Dir(hogPath))
	}
	os.Exit(code)
}

func TestMemoryLimit(t *testing.T) {
	available(t, Limits{Memory: 64 << 20})
	run := func(limit int64, mib int) (Usage, error, *Group) {
		g, err := New(Limits{Memory: limit})
		if err != nil {
			t.Fatal(err)
		}
		cmd := hog(t, "-alloc", strconv.Itoa(mib))
		if err := g.Wrap(cmd); err != nil {
			t.Fatal(err)
		}
		runErr := cmd.Run()
		u := g.Usage()
		return u, runErr, g
	}
	// 200 MiB in a 64 MiB group: killed, and the group says why.
	u, err, g := run(64<<20, 200)
	if err == nil || u.OOMKills == 0 || g.OOMError(u) == nil {
		t.Errorf("200 MiB under a 64 MiB limit: exit %v, usage %+v; want an OOM kill", err, u)
	} else if !strings.Contains(g.OOMError(u).Error(), "OOM killer") || !strings.Contains(g.OOMError(u).Error(), "limit is 64m") {
		t.Errorf("OOM error = %v", g.OOMError(u))
	}
	if err := g.Remove(); err != nil {
		t.Error(err)
	}
	// 100 MiB in a 256 MiB group: it runs, and the peak is what it used.
	u, err, g = run(256<<20, 100)
	if err != nil || u.OOMKills != 0 {
		t.Errorf("100 MiB under 256 MiB: exit %v, usage %+v", err, u)
	}
	if u.MemoryPeak < 100<<20 || u.MemoryPeak > 130<<20 {
		t.Errorf("peak %d MiB for 100 MiB touched; want 100..130", u.MemoryPeak>>20)
	}
	if err := g.Remove(); err != nil {
		t.Error(err)
	}
	assertNone(t)
}

func TestCPULimit(t *testing.T) {
	available(t, Limits{CPUs: 0.25})
	g, err := New(Limits{CPUs: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	cmd := hog(t, "-burn", "400ms") // of CPU: at 0.25 cpus, 1.6 s or more
	if err := g.Wrap(cmd); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	u := g.Usage()
	if !u.HasCPU {
		t.Skip("no CPU accounting here")
	}
	// A quarter of a core over the wall time (plus a period of slack): a
	// busy machine may give it less, never more.
	if limit := time.Duration(float64(wall)*0.25) + 100*time.Millisecond; u.CPU > limit {
		t.Errorf("CPU %v in %v wall under 0.25 cpus; want at most %v", u.CPU, wall, limit)
	}
	if u.Throttled == 0 {
		t.Errorf("a busy loop under 0.25 cpus was never throttled: %+v", u)
	}
}

// assertNone checks no group of this process remains in any hierarchy.
func assertNone(t *testing.T) {
	t.Helper()
	h, err := discover()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range h.all() {
		entries, _ := os.ReadDir(p)
		for _, e := range entries {
			if pid, _, ok := owner(e.Name()); ok && pid == os.Getpid() {
				t.Errorf("cgroup %s left behind", filepath.Join(p, e.Name()))
			}
		}
	}
}

func TestRemoveStale(t *testing.T) {
	available(t, Limits{Memory: 64 << 20})
	h, err := discover()
	if err != nil {
		t.Fatal(err)
	}
	// A group of an iolab that died (no process 0x7fffffff exists), with a
	// process still in it, and one of an iolab that runs (this one).
	dirs, err := h.choose(Limits{Memory: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dirs[0].path, prefix+"2147483646-1-1")
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("sleep", "60")
	sleeper.Args = []string{"sh", "-c", joinScript, "x", filepath.Join(stale, "cgroup.procs"), "--", "/bin/sleep", "60"}
	sleeper.Path = "/bin/sh"
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200 && len(procs(stale)) == 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	live, err := New(Limits{Memory: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	removeStale(h)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale group still there: %v", err)
	}
	if err := sleeper.Wait(); err == nil || sleeper.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the stale group's process: %v, want killed", err)
	}
	if _, err := os.Stat(live.dirs[0].path); err != nil {
		t.Errorf("a live iolab's group was removed: %v", err)
	}
}
