// Package harness holds what the benchmarks under bench/ share: building
// the iolab binary they measure, and reading a child's CPU time.
package harness

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// BuildIolab builds ./cmd/iolab into dir (run from the repository root) and
// returns the binary's path; it exits on failure.
func BuildIolab(dir string) string {
	bin := filepath.Join(dir, "iolab")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/iolab").CombinedOutput(); err != nil {
		Fatalf("build iolab: %v\n%s", err, out)
	}
	return bin
}

// CPUSeconds is the user and system CPU time of a finished command.
func CPUSeconds(cmd *exec.Cmd) float64 {
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
