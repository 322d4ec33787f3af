package envinfo

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/metrics"
)

func TestCaptureReadsThisMachine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := Capture(dir)
	if s.Kernel == "" || s.CPUs < 1 || s.MemTotalBytes <= 0 || s.GoVersion == "" {
		t.Fatalf("snapshot misses basic facts: %+v", s)
	}
	if s.Target == nil || s.Target.FSType == "" || s.Target.MountPoint == "" || s.Target.FreeBytes <= 0 {
		t.Fatalf("target not described: %+v", s.Target)
	}
	if !strings.HasPrefix(dir, s.Target.MountPoint) {
		t.Fatalf("mount point %q does not contain %q", s.Target.MountPoint, dir)
	}
}

func TestCaptureProcTarget(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("no /proc")
	}
	if got := Capture("/proc/self").Target.FSType; got != "proc" {
		t.Fatalf("fs type of /proc/self = %q, want proc", got)
	}
}

// The snapshot says whether the kernel shares the CPU between sessions
// first, as the kernel says it.
func TestCaptureAutogroup(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("/proc/sys/kernel/sched_autogroup_enabled")
	want := strings.TrimSpace(string(b))
	if err != nil {
		want = ""
	}
	if got := Capture("").SchedAutogroup; got != want {
		t.Fatalf("sched_autogroup %q, the kernel says %q", got, want)
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	yes := true
	base := Snapshot{CPUs: 2, MemTotalBytes: 100 << 30, MemAvailableBytes: 90 << 30,
		Target: &Target{Path: "/x", FSType: "ext4", Device: "vda", Rotational: &yes}}
	later := base
	later.Load1, later.SwapIns, later.ThrottleCount, later.Governor = 3.5, 10, 4, "powersave"
	tmpfs := base
	tmpfs.Target = &Target{Path: "/dev/shm/x", FSType: "tmpfs"}
	tmpfs.MemAvailableBytes = 5 << 30
	nfs, smb := base, base
	nfs.Target = &Target{Path: "/mnt/nas/frames", FSType: "nfs4", Source: "nas:/export"}
	smb.Target = &Target{Path: "/mnt/share", FSType: "cifs", Source: "//server/share"}

	type warningCase struct {
		name  string
		snaps []Snapshot
		ev    Evidence
		want  string
		text  string
	}
	tests := []warningCase{
		{name: "flag contradicted", snaps: []Snapshot{base}, ev: Evidence{TouchesDisk: true, UncachedRandomReadP50Ns: 200e3},
			want: "rotational-disk", text: "probably wrong"},
		{name: "flag agreed", snaps: []Snapshot{base}, ev: Evidence{TouchesDisk: true, UncachedRandomReadP50Ns: 8e6},
			want: "rotational-disk", text: "agrees"},
		{name: "noisy machine", snaps: []Snapshot{base, later}, ev: Evidence{TouchesDisk: true},
			want: "rotational-disk,cpu-governor,load-above-cores,swap-activity,thermal-throttle"},
		{name: "tmpfs", snaps: []Snapshot{tmpfs}, ev: Evidence{TouchesDisk: true}, want: "tmpfs-target,memory-pressure"},
		{name: "nfs", snaps: []Snapshot{nfs}, ev: Evidence{TouchesDisk: true}, want: "network-target", text: "nfs4 (NFS at nas:/export)"},
		{name: "smb", snaps: []Snapshot{smb}, ev: Evidence{TouchesDisk: true}, want: "network-target", text: "cifs (SMB at //server/share)"},
		// cmd, http and s3 runs have a working directory, not a disk under test.
		{name: "no disk workload", snaps: []Snapshot{base, later}, want: "cpu-governor,load-above-cores,swap-activity,thermal-throttle"},
		{name: "no disk workload on tmpfs", snaps: []Snapshot{tmpfs}, want: "memory-pressure"},
	}
	// A starved run: PSI cpu high at one moment, worse at another; the
	// warning quotes the worst and names the starved cell.
	starved1, starved2 := base, base
	starved1.PressureCPU, starved1.Load1 = 68, 3
	starved2.PressureCPU, starved2.Load1 = 83, 5.2
	tests = append(tests, warningCase{name: "starved", snaps: []Snapshot{base, starved1, starved2, base}, ev: Evidence{Starved: []Starved{{Cell: "frames", RateCV: 0.27, CPUPerOpCV: 0.06}}},
		want: "load-above-cores,cpu-pressure", text: "load average exceeded the CPUs in 2 of 4 snapshots, at worst 5.2 on 2 CPUs"})
	// Between rounds all was quiet; during the runs, a neighbour's I/O
	// made tasks wait in 3 of 20 seconds, worst at the 12th: the seconds
	// alone raise it, quoting the worst.
	t0 := time.Date(2026, 11, 23, 9, 0, 0, 0, time.Local)
	var secs []metrics.EnvSecond
	for i := range 20 {
		s := metrics.EnvSecond{T: t0.Unix() + int64(i), IOStall: 0.01}
		if i >= 10 && i < 13 {
			s.IOStall = []float64{0.4, 0.6, 0.9}[i-10]
		}
		secs = append(secs, s)
	}
	tests = append(tests, warningCase{name: "io during runs", snaps: []Snapshot{base, base}, ev: Evidence{Seconds: secs}, want: "io-pressure",
		text: "I/O pressure: some task waited for I/O over 25% of the time in 3 of the runs' 20 seconds, at worst 90% in the second at 09:00:12; tasks waited"})
	for _, tc := range tests {
		ws := Warnings(tc.snaps, tc.ev)
		var codes []string
		for _, w := range ws {
			codes = append(codes, w.Code)
		}
		if got := strings.Join(codes, ","); got != tc.want {
			t.Errorf("%s: codes %q, want %q", tc.name, got, tc.want)
		}
		if tc.text != "" && !strings.Contains(ws[0].Message, tc.text) {
			t.Errorf("%s: message %q lacks %q", tc.name, ws[0].Message, tc.text)
		}
		if tc.name == "starved" && !strings.Contains(ws[1].Message, "at worst PSI cpu some avg10 83% at") ||
			tc.name == "starved" && !strings.Contains(ws[1].Message, "frames's throughput varied by 27% while its CPU per operation varied by 6%: the benchmark was starved of CPU") {
			t.Errorf("starved: %q", ws[1].Message)
		}
	}
}

// WatchStall hands over, a second of the clock at a time, what waited for
// a CPU: with four busy processes on fewer CPUs, some task waits most of
// the time. Where the kernel has no PSI, it hands over nothing.
func TestWatchStall(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var secs []metrics.EnvSecond
	stop := WatchStall(100*time.Millisecond, func(s metrics.EnvSecond) {
		mu.Lock()
		defer mu.Unlock()
		secs = append(secs, s)
	})
	hogs := max(4, 2*runtime.NumCPU())
	var cmds []*exec.Cmd
	for range hogs {
		cmd := exec.Command("sh", "-c", "end=$(($(date +%s) + 2)); while [ $(date +%s) -lt $end ]; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		_ = cmd.Wait()
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	if !ReadStall().OK {
		if len(secs) > 0 {
			t.Fatalf("no PSI here, yet %d samples", len(secs))
		}
		return
	}
	// Asked for ten a second, it hands over one per second of the clock,
	// which names it: the store keys a run's seconds by it.
	if len(secs) < 1 || len(secs) > 3 {
		t.Fatalf("%d samples in 2 s", len(secs))
	}
	worst := 0.0
	for i, s := range secs {
		if s.CPUStall < 0 || s.CPUStall > 1 || s.IOStall < 0 || s.IOStall > 1 || (i > 0 && s.T <= secs[i-1].T) {
			t.Fatalf("sample %d: %+v", i, s)
		}
		worst = max(worst, s.CPUStall)
	}
	if worst < 0.3 {
		t.Fatalf("%d busy processes on %d CPUs, yet at worst some task waited for a CPU %.0f%% of a second", hogs, runtime.NumCPU(), 100*worst)
	}
}
