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

// historyStudy runs the same command in n experiments; from experiment
// `from` on, the target takes 4x as long (the file it reads says so).
// It returns the experiments' IDs, oldest first.
func historyStudy(t *testing.T, dir, db string, n, from int) []string {
	t.Helper()
	writeFiles(t, dir, map[string]string{"plan.yaml": `name: nightly
rounds: 3
warmup: 0
workloads:
  - name: restore
    cmd: {run: 'sleep $(cat ` + filepath.Join(dir, "delay") + `)'}
`})
	var ids []string
	for i := range n {
		delay := "0.03"
		if i >= from {
			delay = "0.12"
		}
		if err := os.WriteFile(filepath.Join(dir, "delay"), []byte(delay), 0o644); err != nil {
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
	out, _, err := iolab(t, context.Background(), "history", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var hs []historyJSON
	decodeInto(t, out, &hs)
	if len(hs) != 1 {
		t.Fatalf("%d histories, want one cell's: %s", len(hs), out)
	}
	h := hs[0]
	if h.Cell != "restore" || h.Metric != "wall_s" || len(h.Steps) != 8 {
		t.Fatalf("history of %q %q with %d steps, want restore wall_s with 8", h.Cell, h.Metric, len(h.Steps))
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
	if cp.Index != 5 || cp.Experiment != ids[5] || cp.Direction != "regression" || cp.P > 0.05 || cp.After/cp.Before < 2.5 {
		t.Errorf("change point %+v, want at %s: a regression of about 4x, p <= 0.05", cp, ids[5])
	}

	out, _, err = iolab(t, context.Background(), "history", "restore", "workload=cmd", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"restore (cmd", "lower is better; 8 experiments", "▶", "change point:", "regression",
		"note: VM-7: <b>nbdkit</b> blockstore", ids[0], ids[7]} {
		if !strings.Contains(out, want) {
			t.Errorf("history text lacks %q:\n%s", want, out)
		}
	}

	// A filter that matches nothing names what there is.
	_, _, err = iolab(t, context.Background(), "history", "rw=randread", "--db", db)
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "stored cells: default/restore") {
		t.Errorf("unmatched filter: %v, want a usage error naming the stored cells", err)
	}
	_, _, err = iolab(t, context.Background(), "history", "--metric", "iops", "--db", db)
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "wall_s") {
		t.Errorf("unknown metric: %v, want a usage error naming the stored metrics", err)
	}
}
