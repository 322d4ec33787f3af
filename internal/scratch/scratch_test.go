package scratch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/iolab/iolab/internal/procgroup"
)

// A directory whose owner died is removed, with what is in it; one whose
// owner runs, one of another kind and one that does not say its owner
// stay.
func TestRemoveStaleKeepsWhatALiveProcessOwns(t *testing.T) {
	parent := t.TempDir()
	mine, err := Dir(parent, "experiment")
	if err != nil {
		t.Fatal(err)
	}
	// A process that ran and is gone: its PID and start time.
	cmd := exec.Command("sleep", "0.01")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid, start := cmd.Process.Pid, procgroup.StartTime(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil || start == 0 {
		t.Fatalf("a child to die: %v (start %d)", err, start)
	}
	dead := filepath.Join(parent, fmt.Sprintf("iolab-experiment-%d-%d-123", pid, start))
	// Our own PID with another start time: a PID reused since.
	reused := filepath.Join(parent, fmt.Sprintf("iolab-experiment-%d-%d-456", os.Getpid(), procgroup.StartTime(os.Getpid())+1))
	old := filepath.Join(parent, "iolab-experiment-789")
	other := filepath.Join(parent, fmt.Sprintf("iolab-bisect-%d-%d-123", pid, start))
	for _, d := range []string{dead, reused, old, other} {
		if err := os.MkdirAll(filepath.Join(d, "worktree", "src"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	RemoveStale(parent, "experiment")
	for _, c := range []struct {
		dir  string
		kept bool
	}{{mine, true}, {dead, false}, {reused, false}, {old, true}, {other, true}} {
		_, err := os.Stat(c.dir)
		if kept := err == nil; kept != c.kept {
			t.Errorf("%s: kept %v, want %v", filepath.Base(c.dir), kept, c.kept)
		}
	}
}
