package envinfo

import (
	"os"
	"strings"
	"testing"
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

	tests := []struct {
		name  string
		snaps []Snapshot
		ev    Evidence
		want  string
		text  string
	}{
		{name: "flag contradicted", snaps: []Snapshot{base}, ev: Evidence{TouchesDisk: true, UncachedRandomReadP50Ns: 200e3},
			want: "rotational-disk", text: "probably wrong"},
		{name: "flag agreed", snaps: []Snapshot{base}, ev: Evidence{TouchesDisk: true, UncachedRandomReadP50Ns: 8e6},
			want: "rotational-disk", text: "agrees"},
		{name: "noisy machine", snaps: []Snapshot{base, later}, ev: Evidence{TouchesDisk: true},
			want: "rotational-disk,cpu-governor,load-above-cores,swap-activity,thermal-throttle"},
		{name: "tmpfs", snaps: []Snapshot{tmpfs}, ev: Evidence{TouchesDisk: true}, want: "tmpfs-target,memory-pressure"},
		// cmd, http and s3 runs have a working directory, not a disk under test.
		{name: "no disk workload", snaps: []Snapshot{base, later}, want: "cpu-governor,load-above-cores,swap-activity,thermal-throttle"},
		{name: "no disk workload on tmpfs", snaps: []Snapshot{tmpfs}, want: "memory-pressure"},
	}
	// A starved run: PSI cpu high at one moment, worse at another; the
	// warning quotes the worst and names the starved cell.
	starved1, starved2 := base, base
	starved1.PressureCPU, starved1.Load1 = 68, 3
	starved2.PressureCPU, starved2.Load1 = 83, 5.2
	tests = append(tests, struct {
		name  string
		snaps []Snapshot
		ev    Evidence
		want  string
		text  string
	}{name: "starved", snaps: []Snapshot{base, starved1, starved2, base}, ev: Evidence{Starved: []Starved{{Cell: "frames", RateCV: 0.27, CPUPerOpCV: 0.06}}},
		want: "load-above-cores,cpu-pressure", text: "load average exceeded the CPUs in 2 of 4 snapshots, at worst 5.2 on 2 CPUs"})
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
