package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Cells compared along a matrix field, as variants are: asked for by the
// plan (along:) or, on any stored experiment, by --along; refused with
// the fields there are before anything runs.
func TestCompareAlongAMatrixField(t *testing.T) {
	t.Parallel()
	slow(t)
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "a.db")
	plan := `name: along
rounds: 6
seed: 3
%s
variants:
  - name: a
  - name: b
workloads:
  - cmd: {run: "sleep 0.0{{n}}"}
    matrix: {n: [1, 9]}
`
	writeFiles(t, dir, map[string]string{
		"along.yaml": strings.Replace(plan, "%s", "along: n", 1),
		"plain.yaml": strings.Replace(plan, "%s", "", 1),
	})
	check := func(what string, r experimentJSON) {
		t.Helper()
		cells := map[string]bool{}
		for _, c := range r.Comparisons {
			if c.Variant != "n=9" || c.Baseline != "n=1" {
				t.Errorf("%s: a comparison of %s against %s, want n=9 against n=1: %+v", what, c.Variant, c.Baseline, c)
			}
			if c.Metric == "wall_s" {
				cells[c.Cell] = true
				if !(c.Ratio > 1) {
					t.Errorf("%s: %s sleeps 9x longer at n=9, ratio %v", what, c.Cell, c.Ratio)
				}
			}
		}
		if !cells["cmd variant=a"] || !cells["cmd variant=b"] || len(cells) != 2 {
			t.Errorf("%s: compared cells %v, want each variant's cells compared along n (cmd variant=a, cmd variant=b)", what, cells)
		}
	}
	r, err := runPlan(t, ctx, filepath.Join(dir, "along.yaml"), "--db", db, "--json", "-q")
	if err != nil {
		t.Fatal(err)
	}
	check("along: n", r)

	plain, err := runPlan(t, ctx, filepath.Join(dir, "plain.yaml"), "--db", db, "--json", "-q")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range plain.Comparisons {
		if c.Variant != "b" || c.Baseline != "a" {
			t.Fatalf("without along, variants are compared: %+v", c)
		}
	}
	out, _, err := iolab(t, ctx, "show", plain.Experiment, "--db", db, "--json", "--along", "n")
	if err != nil {
		t.Fatal(err)
	}
	var shown experimentJSON
	decodeInto(t, out, &shown)
	check("show --along n", shown)
	text, _, err := iolab(t, ctx, "show", plain.Experiment, "--db", db, "--along", "n=9")
	if err != nil || !strings.Contains(text, "each n against n=9") || !strings.Contains(text, "ratio vs n=9") {
		t.Errorf("show --along n=9 (the base named): %v\n%s", err, text)
	}
	page := filepath.Join(dir, "r.html")
	if _, _, err := iolab(t, ctx, "report", plain.Experiment, "--db", db, "--along", "n", "-o", page); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), "n=9") {
		t.Errorf("report --along n: %v", err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"show", plain.Experiment, "--db", db, "--along", "size"}, "--along size: not a matrix field of experiment " + plain.Experiment + "; its fields: n"},
		{[]string{"show", plain.Experiment, "--db", db, "--along", "n=5"}, "--along n=5: 5 is not a value of n"},
		{[]string{"experiment", filepath.Join(dir, "plain.yaml"), "--db", filepath.Join(dir, "never.db"), "--along", "size"}, `--along size: not a matrix field of workload "cmd" (its matrix: n)`},
	} {
		_, _, err := iolab(t, ctx, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || ExitCode(err) != 2 || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v (exit %d), want one line with %q, exit 2", tc.args, err, ExitCode(err), tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "never.db")); err == nil {
		t.Error("an experiment refused for its --along opened a store")
	}
	writeFiles(t, dir, map[string]string{"bad.yaml": strings.Replace(plan, "%s", "along: n=4", 1)})
	if _, _, err := iolab(t, ctx, "experiment", filepath.Join(dir, "bad.yaml"), "--db", db); err == nil ||
		!strings.Contains(err.Error(), `bad.yaml:4:8: along "n=4": 4 is not a value of the matrix field n of workload "cmd"`) {
		t.Errorf("a plan's along: with a base not in its matrix: %v", err)
	}
}
