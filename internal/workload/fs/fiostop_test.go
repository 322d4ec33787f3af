package fs

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/procgroup"
)

// A fio that does not end by its limit, and ignores SIGINT, is stopped:
// the run fails saying so, and what it forked is killed with it (an
// example of fio's own hung past its runtime for 300 s).
func TestFioThatHangsIsStopped(t *testing.T) {
	dir := t.TempDir()
	pidFile, fake := filepath.Join(dir, "pid"), filepath.Join(dir, "fio")
	script := "#!/bin/sh\ntrap '' INT\nsleep 1000 &\necho $! > " + pidFile + "\nwait\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	defer func(g time.Duration) { fioStopGrace = g }(fioStopGrace)
	fioStopGrace = 100 * time.Millisecond
	_, _, err := runFioProcess(context.Background(), fake, nil, nil, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "fio did not end within 300ms; stopped") {
		t.Fatalf("a hung fio: %v", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for deadline := time.Now().Add(10 * time.Second); procgroup.StartTime(pid) != 0 && !zombie(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("fio's child %d outlived it", pid)
		}
	}
}

// zombie says pid has ended and waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	return strings.HasPrefix(strings.TrimSpace(s[strings.LastIndexByte(s, ')')+1:]), "Z")
}
