package cli

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iolab/iolab/internal/analysis"
)

// Through the CLI: a slower variant under --fail-on slower exits 1 after
// printing the report; a limit the runs keep does not.
func TestFailOnSlowerExits1(t *testing.T) {
	slow(t)
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"plan.yaml": `rounds: 8
warmup: 1
variants:
  - {name: a, env: {NAP: "0.01"}}
  - {name: b, env: {NAP: "0.6"}}
workloads:
  - {name: nap, cmd: {run: sleep $NAP}}
`})
	// b sleeps 60 times as long: on a loaded machine starting a command
	// can take a few hundred ms, which blurred a 10x difference. A warm-up
	// round and 8 measured ones: under stress-ng the first round of 6 was
	// off and the warm-up check, left 4 rounds, rightly withheld 23x.
	db := filepath.Join(dir, "x.db")
	out, _, err := iolab(t, context.Background(), "experiment", filepath.Join(dir, "plan.yaml"), "--db", db, "--fail-on", "slower", "--gate", "wall_s<1m")
	if !errors.Is(err, analysis.ErrGate) || ExitCode(err) != 1 || !strings.Contains(err.Error(), "--fail-on slower: nap wall_s: b is slower than a") ||
		strings.Contains(err.Error(), "--gate") || !strings.Contains(out, "verdicts:") {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, _, err := iolab(t, context.Background(), "show", "--db", db, "--gate", "wall_s<1m", "--format", "csv"); err != nil {
		t.Fatalf("a kept limit: %v", err)
	}
}

// Through the CLI: a gate on a metric only another kind measures is
// refused before anything runs (exit 2, nothing stored: the audit's was
// refused after the whole experiment); show, of a stored fs experiment,
// says what it does measure.
func TestGateOnAnAbsentMetricExits2(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	fsArgs := []string{"fs", "--directory", dir, "--size", "64k", "--bs", "4k", "--rounds", "2", "--warmup", "0", "--db", db}
	for gate, want := range map[string]string{
		"--gate=wall_s<2m":     "--gate \"wall_s<2m\": wall_s is measured by cmd workloads alone, and this plan runs fs",
		"--fail-on=frames":     "--fail-on frames: a frame test's PASS or FAIL, and this plan runs fs, no frames workload",
		"--gate=get.retries<1": "--gate \"get.retries<1\": get.retries is measured by s3 workloads alone",
	} {
		_, _, err := iolab(t, context.Background(), append(fsArgs, gate)...)
		if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), want) {
			t.Errorf("%s on fs: %v, want %q", gate, err, want)
		}
	}
	if n := countQuiet(db, `SELECT count(*) FROM runs`); n > 0 {
		t.Fatalf("%d runs stored by refused gates", n)
	}
	if _, _, err := iolab(t, context.Background(), fsArgs...); err != nil {
		t.Fatal(err)
	}
	_, _, err := iolab(t, context.Background(), "show", "--db", db, "--gate", "wall_s<2m")
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "no cell of this experiment measured wall_s; it has: ") || !strings.Contains(err.Error(), "ops_per_s") {
		t.Fatalf("show --gate wall_s<2m of fs: %v", err)
	}
	_, _, err = iolab(t, context.Background(), "show", "--db", filepath.Join(dir, "x.db"), "--fail-on", "slower")
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "nothing to compare") {
		t.Fatalf("--fail-on slower with one variant: %v", err)
	}
	_, stderr, err := iolab(t, context.Background(), "show", "--db", filepath.Join(dir, "x.db"), "--gate", "ops_per_s>1", "--json")
	if err != nil || !strings.Contains(stderr, "iolab: gate kept: --gate ops_per_s>1: kept by all 1 cells") {
		t.Fatalf("a kept gate: %v\n%s", err, stderr)
	}
}
