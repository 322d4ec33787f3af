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
// past its share of what it measured, or iolab starved of CPU on the
// machine the experiment records — is left out of a step's judgement and
// said: here the ends are alike in every clean round, and the rounds a
// burst of other work hit made the bad end three times as costly.
func TestBisectStepLeavesOutTheRoundsTheClientSpoiled(t *testing.T) {
	t.Parallel()
	b := &Bisect{metric: "cost", o: Options{Threshold: 0.05, MinRounds: 5, MaxRounds: 50},
		commits: []bisect.Commit{{Hash: "aaaaaaaaaaaaaaaa"}, {Hash: "bbbbbbbbbbbbbbbb"}}}
	names := []string{b.label(0), b.label(1)}
	d := &store.Data{
		Cells: []store.Cell{{ID: 1, Name: "c", Variant: names[0]}, {ID: 2, Name: "c", Variant: names[1]}},
		Env:   []store.EnvSnapshot{{Snapshot: []byte(`{"cpus":2}`)}},
	}
	const rounds = 12
	delayed, starved := map[int]bool{2: true, 5: true, 8: true}, map[int]bool{10: true, 11: true}
	for r := range rounds {
		for cell := int64(1); cell <= 2; cell++ {
			m := map[string]float64{"cost": 100 * (1 + 0.01*math.Sin(float64(3*r)+float64(cell))), "cpu_s": 0.1, "gen_delay_pct": 1}
			if cell == 2 && (delayed[r] || starved[r]) {
				m["cost"] *= 3
			}
			if cell == 2 && delayed[r] {
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
	if v.Rounds != rounds-5 || v.ClientDelayed != 5 {
		t.Fatalf("%d rounds counted, %d left out; want %d and 5", v.Rounds, v.ClientDelayed, rounds-5)
	}
	if v.Verdict == bisect.Between || v.Whole == nil || v.Whole.Ratio > 1.02 {
		t.Errorf("the ends judged %s, bad/good %+v: the client's rounds were counted", v.Verdict, v.Whole)
	}
	if said := b.said(&v); !strings.Contains(said, "and 5 not counted") {
		t.Errorf("the step's line does not say what it left out: %s", said)
	}

	// The same runs on a machine of 8 CPUs: the wait of the starved
	// rounds took under half the CPUs, the machine had room, and the bad
	// end's cost is the commit's.
	d.Env[0].Snapshot = []byte(`{"cpus":8}`)
	b.judge(d, names, &v)
	if v.ClientDelayed != 3 || v.Rounds != rounds-3 {
		t.Errorf("on 8 CPUs: %d rounds counted, %d left out; want %d and 3", v.Rounds, v.ClientDelayed, rounds-3)
	}
}
