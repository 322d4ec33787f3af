// Package scratch makes the temporary directories iolab works in (a run's
// worktrees, builds and files), named by the process that owns them, and
// removes those whose owner is gone: a run killed with kill -9 cannot
// remove its own, and a build of a storage server left behind by every
// killed run would fill the temporary directory.
package scratch

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/iolab/iolab/internal/procgroup"
)

// Dir makes a new directory in parent ("": the system's temporary
// directory) named iolab-KIND-PID-START-*, for this process.
func Dir(parent, kind string) (string, error) {
	self := os.Getpid()
	return os.MkdirTemp(parent, fmt.Sprintf("iolab-%s-%d-%d-", kind, self, procgroup.StartTime(self)))
}

// RemoveStale removes the directories of kind in parent ("": the
// system's temporary directory) that Dir made for processes no longer
// running. One whose owner runs, or whose name does not say its owner
// (made before Dir named them), is left alone. Like cgroup.RemoveStale it
// takes a PID it cannot see for a dead one: iolabs that share a temporary
// directory share a PID namespace.
func RemoveStale(parent, kind string) {
	if parent == "" {
		parent = os.TempDir()
	}
	prefix := "iolab-" + kind + "-"
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, prefix) {
			continue
		}
		pid, start, ok := owner(strings.TrimPrefix(name, prefix))
		if !ok || procgroup.Alive(pid, start) {
			continue
		}
		_ = os.RemoveAll(filepath.Join(parent, name))
	}
}

// owner parses "PID-START-RANDOM".
func owner(rest string) (pid int, start int64, ok bool) {
	f := strings.Split(rest, "-")
	if len(f) != 3 {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseInt(f[1], 10, 64)
	return pid, start, err1 == nil && err2 == nil && pid > 0 && start > 0
}
