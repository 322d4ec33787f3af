package cmd

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
)

// The peak RSS is the command's own: a program that holds 64 MiB shows
// about that plus its interpreter, and `true` shows a few MiB at most (or
// nothing, when it ended before its tree could be read, as it may on a busy
// machine) — never iolab's own memory, which a child's ru_maxrss carries
// over exec.
func TestPeakRSSIsTheCommandsOwn(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	ballast := make([]byte, 256<<20) // make this process's own peak large
	for i := range ballast {
		ballast[i] = 1
	}
	for _, tc := range []struct {
		run      string
		min, max float64 // MiB
	}{
		{"true", 0.01, 4},
		{`python3 -c 'import time; b = bytearray(64 << 20); time.sleep(0.3)'`, 64, 90},
		// A tree: the shell and its two children, 64 MiB in one of them.
		{`python3 -c 'import time; b = bytearray(64 << 20); time.sleep(0.3)' & sleep 0.1; wait`, 64, 95},
	} {
		c, err := New(Options{Run: tc.run})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Run(context.Background(), nil)
		if err != nil || res.Errors != 0 {
			t.Fatalf("%s: %v %s", tc.run, err, res.FirstError)
		}
		got, ok := res.Extra["max_rss_bytes"]
		if !ok && tc.run == "true" {
			continue // it ended before its tree could be read: no figure rather than a wrong one
		}
		if mib := got / (1 << 20); !ok || mib < tc.min || mib > tc.max {
			t.Errorf("%s: peak RSS %.1f MiB (measured: %v), want %.0f to %.0f MiB", tc.run, mib, ok, tc.min, tc.max)
		}
	}
	_ = ballast[len(ballast)-1]
}

// A run's block I/O is the command's tree's own, from its rusage: 4 MiB
// written and synced by a child of the shell shows as at least 4 MiB
// written; `true` writes nothing. (On a file system with no block device,
// such as tmpfs, nothing is counted: skipped there.)
func TestDiskBytesAreTheCommandsOwn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil || fs.Type == 0x01021994 { // TMPFS_MAGIC
		t.Skipf("%s is on tmpfs (or unknown: %v): no block I/O to count", dir, err)
	}
	for run, min := range map[string]float64{"dd if=/dev/zero of=out bs=1M count=4 conv=fsync 2>/dev/null; true": 4 << 20, "true": 0} {
		c, err := New(Options{Run: run, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Run(context.Background(), nil)
		if err != nil || res.Errors != 0 {
			t.Fatalf("%s: %v %s", run, err, res.FirstError)
		}
		written, ok := res.Extra["disk_write_bytes"]
		if !ok || written < min || (min == 0 && written != 0) {
			t.Errorf("%s: disk_write_bytes %v (recorded: %v), want at least %.0f", run, written, ok, min)
		}
	}
}
