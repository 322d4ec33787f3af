package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/store"
)

// A paced cell whose operations started late is named, and so is what fell
// behind: iolab, when it used most of the CPUs; else the target.
func TestLateStartsNameWhoFellBehind(t *testing.T) {
	t.Parallel()
	run := func(late, ops int64, cpuS float64) store.Run {
		res := &metrics.Result{Duration: time.Second, CPUUserS: cpuS, Extra: map[string]float64{"late_starts": float64(late)}}
		res.ByOp[metrics.Get] = metrics.OpStats{Ops: ops, Lat: metrics.NewHistogram()}
		return store.Run{Status: store.StatusOK, Result: res}
	}
	cells := []store.Cell{{Name: "iolab-bound"}, {Name: "target-bound"}, {Name: "on-time"}}
	perCell := [][]store.Run{
		{run(300, 1000, 1.9), run(280, 1000, 1.8)},
		{run(300, 1000, 0.1), run(280, 1000, 0.1)},
		{run(10, 1000, 1.9), run(12, 1000, 1.9)},
	}
	ws := lateStartWarnings(derivedMetrics{}, cells, perCell, 2)
	if len(ws) != 2 || ws[0].Code != "generator-saturated" || !strings.HasPrefix(ws[0].Message, "iolab-bound: 29% of operations started late while iolab itself used 1.9 of the 2 CPUs") ||
		ws[1].Code != "late-starts" || !strings.HasPrefix(ws[1].Message, "target-bound: 29% of operations started late (iolab used 0.1 of 2 CPUs)") {
		t.Errorf("%+v", ws)
	}
}
