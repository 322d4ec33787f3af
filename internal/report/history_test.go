package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/analysis/analysistest"
	"github.com/iolab/iolab/internal/envinfo"
	"github.com/iolab/iolab/internal/store"
)

// The same cell in another directory is the same cell; what changed
// under it (the kernel, the variant's commit) is said between neighbours.
func TestHistoryLinesUpCellsAndSaysWhatChanged(t *testing.T) {
	a, b, c := analysistest.Experiment(), analysistest.Experiment(), analysistest.Experiment()
	for i, d := range []struct {
		data                 *store.Data
		id, dir, kernel, sha string
	}{
		{a, "20261120-080000-0001", "/data/a", "6.1.0", "1111111"},
		{b, "20261121-080000-0002", "/data/b", "6.1.0", "1111111"},
		{c, "20261122-080000-0003", "/data/c", "6.5.0", "2222222"},
	} {
		x := d.data
		x.Experiment.ID = d.id
		x.Experiment.CreatedAt = time.Date(2026, 11, 20+i, 8, 0, 0, 0, time.UTC)
		x.Experiment.Plan = json.RawMessage(`{"commits": {"default": "` + d.sha + `"}}`)
		x.Cells[0].Params["directory"] = d.dir
		x.Cells[0].Variant = "default"
		snap, _ := json.Marshal(envinfo.Snapshot{Hostname: "lab", Kernel: d.kernel, CPUs: 2, CPUModel: "Test CPU", IolabVersion: "dev"})
		x.Env[0].Snapshot = snap
	}
	hs := analysis.BuildHistory([]*store.Data{a, b, c}, analysis.CellFilter{"rw=randread"}, "", 0)
	if len(hs) != 1 || len(hs[0].Steps) != 3 {
		t.Fatalf("histories %+v, want one of 3 experiments", hs)
	}
	h := hs[0]
	if _, ok := h.Params["directory"]; ok || h.Metric != "ops_per_s" {
		t.Errorf("identity %v, metric %s: want no directory, ops_per_s", h.Params, h.Metric)
	}
	if len(h.Steps[1].Changes) != 0 {
		t.Errorf("step 1 changes %+v, want none (only the directory moved)", h.Steps[1].Changes)
	}
	got := changesText(h.Steps[2].Changes)
	if got != "commit 1111111 → 2222222; kernel 6.1.0 → 6.5.0" {
		t.Errorf("step 2 changes %q", got)
	}
	var buf bytes.Buffer
	if err := WriteHistory(&buf, hs, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "changed: commit 1111111 → 2222222; kernel 6.1.0 → 6.5.0") || !strings.Contains(buf.String(), "3 experiments: a change point needs 8") {
		t.Errorf("history text:\n%s", buf.String())
	}
	if hs := analysis.BuildHistory([]*store.Data{a, b, c}, analysis.CellFilter{"rw=randwrite"}, "", 0); len(hs) != 0 {
		t.Errorf("rw=randwrite matched %+v", hs)
	}
}
