package harness

import (
	"os/exec"
	"testing"
	"time"
)

// The bench's own CPU counts what its children burn, both the children
// it waited for and one still running: it is what "everything else" is
// told apart from.
func TestTreeCPUCountsChildren(t *testing.T) {
	burn := func() *exec.Cmd {
		// Busy until killed (10 s at most).
		return exec.Command("sh", "-c", `end=$(($(date +%s) + 10)); while [ $(date +%s) -lt $end ]; do :; done`)
	}
	before := treeCPU()
	waited := burn()
	waited.Start()
	running := burn()
	running.Start()
	defer running.Process.Kill()
	time.Sleep(300 * time.Millisecond)
	_ = waited.Process.Kill()
	_ = waited.Wait()
	ran := CPUSeconds(waited)
	var live float64 // what the running child has burned so far (/proc counts 10 ms ticks)
	for deadline := time.Now().Add(10 * time.Second); live == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		live, _ = processCPU(running.Process.Pid)
	}
	grew := treeCPU() - before
	if ran <= 0 || live <= 0 {
		t.Fatalf("the children burned no CPU (%v, %v)", ran, live)
	}
	if grew < ran+live {
		t.Errorf("tree CPU grew by %.3f s; the waited child burned %.3f s and the running one %.3f s", grew, ran, live)
	}
}
