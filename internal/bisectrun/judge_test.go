package bisectrun

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/bisect"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/store"
)

// A round in which a commit's run measured its client — iolab's own delay
// past its share of what it measured — is left out of a step's judgement
// and said: here the ends are alike in every clean round, and the rounds
// a burst of other work delayed the client in made the bad end three times
// as costly. A client short of CPU whose own delay stayed small measured
// the commits: those rounds count.
func TestBisectStepLeavesOutTheRoundsTheClientSpoiled(t *testing.T) {
	t.Parallel()
	b := &Bisect{metric: "cost", o: Options{Threshold: 0.05, MinRounds: 5, MaxRounds: 50},
		commits: []bisect.Commit{{Hash: "aaaaaaaaaaaaaaaa"}, {Hash: "bbbbbbbbbbbbbbbb"}}}
	names := []string{b.label(0), b.label(1)}
	d := &store.Data{Cells: []store.Cell{{ID: 1, Name: "c", Variant: names[0]}, {ID: 2, Name: "c", Variant: names[1]}}}
	const rounds = 12
	delayed, starved := map[int]bool{2: true, 5: true, 8: true}, map[int]bool{10: true, 11: true}
	for r := range rounds {
		for cell := int64(1); cell <= 2; cell++ {
			m := map[string]float64{"cost": 100 * (1 + 0.01*math.Sin(float64(3*r)+float64(cell))), "cpu_s": 0.1, "gen_delay_pct": 1}
			if cell == 2 && delayed[r] {
				m["cost"] *= 3
				m["gen_delay_pct"] = 40
			}
			if cell == 2 && starved[r] { // 2 s on 2 CPUs: ready on 1.5, waiting two thirds of it
				m["cpu_s"], m["gen_cpu_wait_s"], m["gen_cpu_wait_pct"] = 1, 2, 66.7
			}
			d.Runs = append(d.Runs, store.Run{CellID: cell, Round: r, Status: store.StatusOK,
				Result: &metrics.Result{Duration: 2 * time.Second, Derived: m}})
		}
	}
	var v analysis.BisectStep
	b.judge(d, names, &v)
	if v.Rounds != rounds-3 || v.ClientDelayed != 3 {
		t.Fatalf("%d rounds counted, %d left out; want %d and 3", v.Rounds, v.ClientDelayed, rounds-3)
	}
	if v.Verdict == bisect.Between || v.Whole == nil || v.Whole.Ratio > 1.02 {
		t.Errorf("the ends judged %s, bad/good %+v: the client's rounds were counted", v.Verdict, v.Whole)
	}
	if said := b.said(&v); !strings.Contains(said, "and 3 not counted") {
		t.Errorf("the step's line does not say what it left out: %s", said)
	}
}
