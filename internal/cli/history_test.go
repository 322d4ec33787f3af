package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type historyJSON struct {
	Cell, Workload, Variant, Metric string
	Params                          map[string]string
	Steps                           []struct {
		Experiment string
		Summary    struct {
			N      int
			Median float64
		}
		Notes    []string
		Previous *struct{ Verdict string } `json:"vs_previous"`
	}
	ChangePoints []struct {
		Index         int
		Experiment    string
		Before, After float64
		Direction     string
		P             float64
	} `json:"change_points"`
	Reason string
}

// historyStudy runs the same command in n experiments; it prints how
// long a restore took, about 1 s until experiment `from` and 4 s after
// (10% noise), as read from a file beside it. Printed figures make the
// history the same on a loaded machine. It returns the experiments' IDs,
// oldest first.
func historyStudy(t *testing.T, dir, db string, n, from int) []string {
	t.Helper()
	writeFiles(t, dir, map[string]string{"restore.sh": `#!/bin/sh
r=$(od -An -N2 -tu2 /dev/urandom)
awk -v l="$(cat "$(dirname "$0")/level")" -v r="$r" 'BEGIN { printf "restore took %.5f s\n", l * (1 + r / 655360) }'
`, "plan.yaml": `name: nightly
rounds: 3
warmup: 0
workloads:
  - name: restore
    cmd:
      run: ` + filepath.Join(dir, "restore.sh") + `
      metrics: [{name: restore_s, regex: 'restore took ([0-9.]+) s', better: lower}]
`})
	var ids []string
	for i := range n {
		level := "1"
		if i >= from {
			level = "4"
		}
		if err := os.WriteFile(filepath.Join(dir, "level"), []byte(level), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := runPlan(t, context.Background(), filepath.Join(dir, "plan.yaml"), "--db", db, "--json")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Experiment)
	}
	return ids
}

// Eight nightly experiments of one cell, the target 4x slower from the
// sixth on: history lines them up, notes them, and finds the change (with
// three experiments after it, as a permutation test needs in eight).
func TestHistoryFindsTheChange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	ids := historyStudy(t, dir, db, 8, 5)
	if _, _, err := iolab(t, context.Background(), "note", ids[5], "VM-7: <b>nbdkit</b> blockstore", "--db", db); err != nil {
		t.Fatal(err)
	}
	out, _, err := iolab(t, context.Background(), "history", "--db", db, "--json", "--metric", "restore_s")
	if err != nil {
		t.Fatal(err)
	}
	var hs []historyJSON
	decodeInto(t, out, &hs)
	if len(hs) != 1 {
		t.Fatalf("%d histories, want one cell's: %s", len(hs), out)
	}
	h := hs[0]
	if h.Cell != "restore" || h.Metric != "restore_s" || len(h.Steps) != 8 {
		t.Fatalf("history of %q %q with %d steps, want restore restore_s with 8", h.Cell, h.Metric, len(h.Steps))
	}
	for i, s := range h.Steps {
		if s.Experiment != ids[i] || s.Summary.N != 3 {
			t.Errorf("step %d: %s with %d runs, want %s with 3 (oldest first)", i, s.Experiment, s.Summary.N, ids[i])
		}
	}
	if len(h.Steps[5].Notes) != 1 || h.Steps[5].Notes[0] != "VM-7: <b>nbdkit</b> blockstore" {
		t.Errorf("step 5 notes %q", h.Steps[5].Notes)
	}
	if p := h.Steps[5].Previous; p == nil || p.Verdict != "slower" {
		t.Errorf("step 5 against 2: %+v, want slower", p)
	}
	if len(h.ChangePoints) != 1 {
		t.Fatalf("change points %+v, want one", h.ChangePoints)
	}
	cp := h.ChangePoints[0]
	if cp.Index != 5 || cp.Experiment != ids[5] || cp.Direction != "regression" || cp.P > 0.05 || cp.After/cp.Before < 3.2 || cp.After/cp.Before > 4.8 {
		t.Errorf("change point %+v, want at %s: a regression of about 4x, p <= 0.05", cp, ids[5])
	}

	out, _, err = iolab(t, context.Background(), "history", "restore", "workload=cmd", "--db", db, "--metric", "restore_s")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"restore (cmd", "lower is better; 8 experiments", "▶", "change point:", "regression",
		"note: VM-7: <b>nbdkit</b> blockstore", ids[0], ids[7]} {
		if !strings.Contains(out, want) {
			t.Errorf("history text lacks %q:\n%s", want, out)
		}
	}

	// workload= names the plan's workload as well as its kind.
	byName, _, err := iolab(t, context.Background(), "history", "workload=restore", "--db", db, "--metric", "restore_s")
	if err != nil || !strings.Contains(byName, "lower is better; 8 experiments") {
		t.Errorf("history workload=restore (the plan's name of it): %v\n%s", err, byName)
	}

	// A filter that matches nothing names what there is.
	_, _, err = iolab(t, context.Background(), "history", "rw=randread", "--db", db)
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "stored cells: default/restore") {
		t.Errorf("unmatched filter: %v, want a usage error naming the stored cells", err)
	}
	_, _, err = iolab(t, context.Background(), "history", "--metric", "iops", "--db", db)
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "restore_s, sys_s, user_s, wall_s") {
		t.Errorf("unknown metric: %v, want a usage error naming the stored metrics", err)
	}
	_, _, err = iolab(t, context.Background(), "history", "--metric", "env_cpu_stall", "--db", db)
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "which way is better") {
		t.Errorf("metric without a direction: %v, want a usage error", err)
	}
	// The command's wall time is followed by default.
	out, _, err = iolab(t, context.Background(), "history", "--db", db, "--json")
	if decodeInto(t, out, &hs); err != nil || len(hs) != 1 || hs[0].Metric != "wall_s" || len(hs[0].Steps) != 8 {
		t.Errorf("default metric: %v %+v, want wall_s over 8 experiments", err, hs)
	}
}

// A variant whose env: changed between experiments is the same cell, and
// history says what changed under it — the secret's value never.
func TestHistoryNamesAVariantsChangedEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	writeFiles(t, dir, map[string]string{"restore.sh": `#!/bin/sh
awk -v l="$LEVEL" 'BEGIN { printf "restore took %.5f s\n", l }'
`})
	for _, level := range []string{"1", "4"} {
		writeFiles(t, dir, map[string]string{"plan.yaml": `name: nightly
rounds: 3
warmup: 0
variants:
  - name: main
    env: {LEVEL: "` + level + `", API_TOKEN: hunter2-very-secret, CACHE: "on", DB: "postgres://u:hunter2-pw@127.0.0.1/db"}
    start: "true --store=http://u:hunter2-flag@127.0.0.1:1/"
workloads:
  - name: restore
    cmd:
      run: ` + filepath.Join(dir, "restore.sh") + `
      metrics: [{name: restore_s, regex: 'restore took ([0-9.]+) s', better: lower}]
`})
		if _, err := runPlan(t, context.Background(), filepath.Join(dir, "plan.yaml"), "--db", db, "--json"); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := iolab(t, context.Background(), "history", "--db", db, "--metric", "restore_s")
	if err != nil {
		t.Fatal(err)
	}
	if want := "changed: env API_TOKEN=*** CACHE=on DB=postgres://u:***@127.0.0.1/db LEVEL=1 → API_TOKEN=*** CACHE=on DB=postgres://u:***@127.0.0.1/db LEVEL=4"; !strings.Contains(out, want) {
		t.Errorf("history lacks %q:\n%s", want, out)
	}
	js, _, err := iolab(t, context.Background(), "history", "--db", db, "--metric", "restore_s", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var hs []historyJSON
	if decodeInto(t, js, &hs); len(hs) != 1 || len(hs[0].Steps) != 2 {
		t.Fatalf("%d histories, want one of 2 steps: %s", len(hs), js)
	}
	for _, o := range []string{out, js} {
		if strings.Contains(o, "hunter2") {
			t.Errorf("the secret's value reached the history:\n%s", o)
		}
	}
}
