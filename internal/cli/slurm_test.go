package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/slurmtest"
)

// iolab slurm job's script, submitted to a real Slurm (one node, started
// here): sbatch runs it, srun starts a task a segment, each takes its
// segment from Slurm with no flag but the store (IOLAB_DB), and show
// merges the load exactly — a command line (3 segments x 64 reads of 4
// KiB a job, 2 rounds) and a plan carried in the script (issue 47).
func TestSegmentsUnderSlurm(t *testing.T) {
	slow(t)
	t.Parallel()
	cluster := slurmtest.Start(t)
	bin, dir := buildIolab(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"plan.yaml": `name: fsload
rounds: 2
warmup: 0
variants: [{name: a}]
workloads:
  - fs: {directory: "` + dir + `", rw: randread, bs: 4k, size: 256k, numjobs: 3}
`})
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"command", []string{"--", "fs", "--directory", dir, "--rw=randread", "--bs=4k", "--size=256k", "--numjobs=3", "--rounds=2", "--warmup=0", "-q", "--barrier-timeout", "60s"}},
		{"plan", []string{filepath.Join(dir, "plan.yaml")}},
	} {
		db := filepath.Join(dir, tc.name+".db")
		script, stderr, err := iolab(t, context.Background(), append([]string{"slurm", "job", "--segments", "3", "--per-node", "0", "--name", "t-" + tc.name, "--program", bin}, tc.args...)...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, stderr)
		}
		path := filepath.Join(dir, tc.name+".sh")
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		sbatch := exec.CommandContext(ctx, "sbatch", "--wait", "--chdir", dir, path)
		sbatch.Env = append(cluster.Env, "IOLAB_DB="+db)
		sbatch.WaitDelay = 5 * time.Second
		out, err := sbatch.CombinedOutput()
		cancel()
		if err != nil {
			logs, _ := filepath.Glob(filepath.Join(dir, "t-"+tc.name+"-*.out"))
			var text []byte
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				text = append(text, b...)
			}
			t.Fatalf("%s: sbatch: %v\n%s\nthe job's output:\n%s\nthe script:\n%s", tc.name, err, out, text, script)
		}
		mergedReads(t, "Slurm ("+tc.name+")", db, "slurm-")
	}
}
