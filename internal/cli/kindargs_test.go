package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// iolab cmd 'A' 'B', as hyperfine takes it: each argument runs as a
// variant of its own — what each measured is its own command, the first is
// the baseline, --prepare runs before every run, and the whole is stored
// as an experiment show prints again.
func TestCmdArgumentsAreVariants(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	prepared := filepath.Join(dir, "prepared")
	// Each run appends its own wall-clock work to a file named by its
	// variant, so what ran is known apart from iolab's figures.
	out, stderr, err := iolab(t, context.Background(), "cmd", "-n", "quick", "-n", "slow", "--rounds", "3", "--warmup", "0", "--json", "--db", db,
		"--prepare", "echo {{variant}} >> "+prepared,
		"echo quick >> "+filepath.Join(dir, "ran")+"; sleep 0.02", "echo slow >> "+filepath.Join(dir, "ran")+"; sleep 0.4")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var r struct {
		Baseline    string
		Comparisons []struct {
			Variant, Metric, Verdict string
			Ratio                    float64
		}
		Runs []struct{ Variant string }
	}
	decodeInto(t, out, &r)
	if r.Baseline != "quick" || len(r.Runs) != 6 {
		t.Fatalf("baseline %q, %d runs: %s", r.Baseline, len(r.Runs), out)
	}
	found := false
	for _, c := range r.Comparisons {
		if c.Variant == "slow" && c.Metric == "wall_s" {
			found = true
			if c.Ratio < 3 || c.Verdict != "slower" {
				t.Errorf("slow against quick: %+v, want about 10x slower", c)
			}
		}
	}
	if !found {
		t.Fatalf("no wall_s comparison of slow: %s", out)
	}
	ran, _ := os.ReadFile(filepath.Join(dir, "ran"))
	prep, _ := os.ReadFile(prepared)
	for _, v := range []string{"quick", "slow"} {
		if strings.Count(string(ran), v+"\n") != 3 || strings.Count(string(prep), v+"\n") != 3 {
			t.Errorf("%s ran %d times and was prepared %d: want 3 each\nran:\n%s\nprepared:\n%s", v, strings.Count(string(ran), v+"\n"), strings.Count(string(prep), v+"\n"), ran, prep)
		}
	}
	// --observe-pid watches a process through every variant's runs, as a
	// plan's observe: does (this test's own process here).
	watched, _, err := iolab(t, context.Background(), "cmd", "--rounds", "3", "--warmup", "0", "--json", "--db", filepath.Join(dir, "w.db"),
		"--observe-pid", fmt.Sprint(os.Getpid()), "sleep 0.05", "sleep 0.06")
	if err != nil || !strings.Contains(watched, `"server_rss_peak_bytes"`) {
		t.Errorf("--observe-pid with arguments: %v; no server figures in:\n%.600s", err, watched)
	}
	shown, _, err := iolab(t, context.Background(), "show", "--db", db)
	if err != nil || !strings.Contains(shown, "ratio vs quick") || !strings.Contains(shown, "slow") {
		t.Errorf("show: %v\n%s", err, shown)
	}
	// --resume finds the comparison of the same arguments and flags, which
	// is done: nothing to continue.
	_, _, err = iolab(t, context.Background(), "cmd", "--rounds", "3", "--warmup", "0", "--db", db, "--resume", "true", "false")
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("--resume with nothing to continue: %v", err)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--run", "true", "true", "false"}, "--run \"true\" and arguments"},
		{[]string{"-n", "a", "true", "false"}, "1 names for 2 arguments"},
		{[]string{"true", "true"}, "both named \"true\""},
		{[]string{"--max-rounds", "9", "true", "false"}, "--max-rounds bounds --until-decided"},
		{[]string{"--lat-log", "ops.csv", "true", "false"}, "--lat-log ops.csv: a command is one operation"},
		{[]string{"", "true"}, "argument 1 is empty"},
		{[]string{"--segment", "0/2", "--segment-group", "g", "true", "false"}, "cmd does not split its load"},
		{[]string{"--until-decided", "--max-rounds", "-5", "true", "false"}, "--max-rounds"},
		{[]string{"-n", "a", "-n", " ", "true", "false"}, "name 2 is empty"},
		{[]string{"--observe-pid", "999999999", "true", "false"}, "--observe-pid"},
	} {
		_, _, err := iolab(t, context.Background(), append([]string{"cmd", "--db", filepath.Join(dir, "bad.db")}, bad.args...)...)
		if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want exit 2 with %q", bad.args, err, bad.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.db")); err == nil {
		t.Errorf("bad input made a store")
	}
}

// hyperfine's --runs is --rounds: each command runs that many times, not
// "did you mean --run?".
func TestHyperfineRuns(t *testing.T) {
	t.Parallel()
	out, stderr, err := iolab(t, context.Background(), "cmd", "true", "--runs", "3", "--warmup", "0", "--db", filepath.Join(t.TempDir(), "x.db"), "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var r struct{ Runs []struct{ Warmup bool } }
	decodeInto(t, out, &r)
	if len(r.Runs) != 3 {
		t.Errorf("--runs 3: %d runs", len(r.Runs))
	}
}

// hyperfine's --export-json, --export-markdown and --export-csv write the
// report to files beside what is printed, each read back by its consumer;
// a second run replaces iolab's own exports; a file iolab did not write,
// or a missing directory, is refused by its flag before anything runs.
func TestExportsBesideTheReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	files := map[string]string{"json": filepath.Join(dir, "r.json"), "markdown": filepath.Join(dir, "r.md"), "csv": filepath.Join(dir, "r.csv")}
	args := []string{"cmd", "true", "--runs", "2", "--warmup", "0", "--db", db}
	for format, path := range files {
		args = append(args, "--export-"+format, path)
	}
	for range 2 {
		out, stderr, err := iolab(t, context.Background(), args...)
		if err != nil || !strings.Contains(out, "wall") {
			t.Fatalf("%v\n%s\n%s", err, out, stderr)
		}
	}
	var r struct {
		Experiment string
		Runs       []struct{ Status string }
	}
	b, _ := os.ReadFile(files["json"])
	if err := json.Unmarshal(b, &r); err != nil || len(r.Runs) != 2 {
		t.Errorf("--export-json: %v, %d runs", err, len(r.Runs))
	}
	if b, _ := os.ReadFile(files["markdown"]); !strings.HasPrefix(string(b), "## Experiment "+r.Experiment+": ") {
		t.Errorf("--export-markdown of %s: %.80q", r.Experiment, b)
	}
	f, _ := os.Open(files["csv"])
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) < 3 || rows[1][0] != r.Experiment {
		t.Errorf("--export-csv: %v, %d rows", err, len(rows))
	}
	if n := countRows(t, db, `SELECT count(*) FROM experiments`); n != 2 {
		t.Fatalf("%d experiments stored, want 2", n)
	}

	theirs := filepath.Join(dir, "notes.txt")
	writeFiles(t, dir, map[string]string{"notes.txt": "someone's notes\n"})
	for flag, path := range map[string]string{"--export-json": theirs, "--export-csv": filepath.Join(dir, "missing", "r.csv")} {
		_, _, err := iolab(t, context.Background(), "cmd", "true", "--db", db, flag, path)
		if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), flag+" "+path+": ") {
			t.Errorf("%s %s: %v (exit %d)", flag, path, err, ExitCode(err))
		}
	}
	if b, _ := os.ReadFile(theirs); string(b) != "someone's notes\n" {
		t.Errorf("a file iolab did not write was changed: %q", b)
	}
	if n := countRows(t, db, `SELECT count(*) FROM experiments`); n != 2 {
		t.Errorf("%d experiments stored after two refusals, want 2", n)
	}
}

// hyperfine's --min-runs is a floor: at least N rounds, then more until
// the comparison is decided; with --runs it is refused. The flags of a
// comparison given to a command without arguments are refused by name,
// not dropped.
func TestMinRunsAndComparisonFlags(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "x.db")
	out, stderr, err := iolab(t, context.Background(), "cmd", "sleep 0.01", "sleep 0.04", "--min-runs", "6", "--warmup", "0", "--db", db, "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var r struct{ Runs []struct{ Round int } }
	decodeInto(t, out, &r)
	if len(r.Runs) < 12 || len(r.Runs)%2 != 0 || !strings.Contains(stderr, "(0 warm-up + 6 to 60 rounds, until decided)") {
		t.Errorf("--min-runs 6: %d runs; %s", len(r.Runs), stderr)
	}
	for _, c := range []struct{ args, want string }{
		{"cmd true --min-runs 6 --runs 3", "--min-runs and --runs: give one"},
		{"cmd --run true --until-decided", "--until-decided: only with arguments, each the --run of a variant"},
		{"cmd --run true -n quick", "--command-name: only with arguments"},
		{"cmd --run true --prepare sync", "--prepare: only with arguments"},
		{"cmd --run true --min-runs 6", "--min-runs: only with arguments"},
	} {
		_, _, err := iolab(t, context.Background(), append(strings.Fields(c.args), "--db", db)...)
		if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("%s: %v (exit %d), want %q", c.args, err, ExitCode(err), c.want)
		}
	}
	if n := countRows(t, db, `SELECT count(*) FROM experiments`); n != 1 {
		t.Errorf("%d experiments stored, want the one of --min-runs", n)
	}
}

// hyperfine's --show-output: what each run prints, stdout and stderr, goes
// to iolab's stderr as it is printed, never into the report on stdout;
// without it nothing is shown; a kind that runs no command has no such
// flag.
func TestShowOutput(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "x.db")
	lines := func(s, want string) int {
		n := 0
		for _, l := range strings.Split(s, "\n") {
			if l == want {
				n++
			}
		}
		return n
	}
	for _, show := range []bool{true, false} {
		args := []string{"cmd", "echo said-out", "echo said-err >&2", "--runs", "2", "--warmup", "0", "--db", db}
		if show {
			args = append(args, "--show-output")
		}
		out, stderr, err := iolab(t, context.Background(), args...)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		want := map[bool]int{true: 2, false: 0}[show]
		if lines(stderr, "said-out") != want || lines(stderr, "said-err") != want || lines(out, "said-out")+lines(out, "said-err") != 0 {
			t.Errorf("--show-output %v: stderr %q, stdout %q", show, stderr, out)
		}
	}
	_, _, err := iolab(t, context.Background(), "fs", "--directory", t.TempDir(), "--show-output", "--db", db)
	if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "unknown flag: --show-output") {
		t.Errorf("fs --show-output: %v", err)
	}
}

// hyperfine's --shell and -N: a command run in the shell asked for, or
// with none — its words as a shell splits them, nothing expanded; a
// kind's options given beside arguments reach every variant's workload
// (--items here: a rate per item), never dropped.
func TestShellAndKindOptionsWithArguments(t *testing.T) {
	t.Parallel()
	need(t, "bash")
	db := filepath.Join(t.TempDir(), "x.db")
	path := os.Getenv("PATH")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"printf '<%s>' \"$PATH\""}, "<" + path + ">"},
		{[]string{"-N", "printf '<%s>' \"$PATH\" 'a b'"}, "<$PATH><a b>"},
		{[]string{"--shell=none", "printf '<%s>' \"$PATH\""}, "<$PATH>"},
		{[]string{"--shell", "bash", "printf '<%s>' \"${BASH_VERSION:+bash}\""}, "<bash>"},
		{[]string{"--run", "printf '<%s>' \"$PATH\"", "-S", "none"}, "<$PATH>"},
	} {
		args := append([]string{"cmd"}, c.args...)
		args = append(args, "--items", "50", "--runs", "1", "--warmup", "0", "--show-output", "--db", db, "--json")
		out, stderr, err := iolab(t, context.Background(), args...)
		if err != nil {
			t.Fatalf("%q: %v\n%s", c.args, err, stderr)
		}
		var r struct {
			Runs []struct{ Extra map[string]float64 }
		}
		decodeInto(t, out, &r)
		if !strings.Contains(stderr, c.want) || len(r.Runs) != 1 || r.Runs[0].Extra["items_per_s"] <= 0 {
			t.Errorf("%q: printed %q, want %q; runs %+v (items_per_s from --items)", c.args, stderr, c.want, r.Runs)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--shell", "nosuch", "true"}, `cmd.shell "nosuch": no such program`},
		{[]string{"-N", `"unterminated`}, "with shell none, want a program and its arguments"},
		{[]string{"--run", "x", "y"}, `--run "x" and arguments`},
	} {
		_, _, err := iolab(t, context.Background(), append(append([]string{"cmd"}, c.args...), "--db", db)...)
		if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("%q: %v (exit %d), want %q", c.args, err, ExitCode(err), c.want)
		}
	}
}

// hyperfine's --cleanup: once per argument, after its last run (warm-up
// and measured alike: every one of its runs came before), with its
// name; a plan's hooks.cleanup that fails fails the experiment, its runs
// kept.
func TestCleanupAfterEachCommandsLastRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	count := filepath.Join(dir, "count")
	_, stderr, err := iolab(t, context.Background(), "cmd", "echo >> "+count, "echo >> "+count+"; true",
		"--cleanup", "echo \"{{variant}} after $(wc -l < "+count+")\" >> "+filepath.Join(dir, "cleaned"),
		"--runs", "3", "--warmup", "1", "--db", db)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "cleaned"))
	want := "echo >> " + count + " after 8\necho >> " + count + "; true after 8\n"
	if string(b) != want {
		t.Errorf("cleaned %q, want %q: each command's cleanup once, after every run", b, want)
	}
	_, _, err = iolab(t, context.Background(), "cmd", "--run", "true", "--cleanup", "x", "--db", db)
	if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "--cleanup: only with arguments") {
		t.Errorf("--cleanup without arguments: %v", err)
	}
	writeFiles(t, dir, map[string]string{"plan.yaml": "rounds: 2\nwarmup: 0\nhooks: {cleanup: 'exit 3'}\nworkloads:\n  - cmd: {run: 'true'}\n"})
	_, _, err = iolab(t, context.Background(), "experiment", filepath.Join(dir, "plan.yaml"), "--db", db)
	if ExitCode(err) != 1 || !strings.Contains(fmt.Sprint(err), `hook cleanup "exit 3"`) {
		t.Errorf("a cleanup that fails: %v (exit %d)", err, ExitCode(err))
	}
	if n := countRows(t, db, `SELECT count(*) FROM runs r JOIN experiments e ON e.id = r.experiment_id WHERE e.name = 'plan' AND r.status = 'ok'`); n != 2 {
		t.Errorf("%d runs of the plan kept, want its 2", n)
	}
}
