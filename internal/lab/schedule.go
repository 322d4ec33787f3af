package lab

import (
	"fmt"
	"math/rand/v2"

	"github.com/iolab/iolab/internal/store"
)

// Orders of the runs within an experiment.
const (
	// OrderRandom runs every cell once per round, in a fresh seeded random
	// permutation each round: drift over time then hits every variant alike.
	OrderRandom = "random"
	// OrderSequential runs each cell's rounds back to back, cell after
	// cell. It exists only to reproduce legacy results: drift during the
	// experiment becomes a difference between variants.
	OrderSequential = "sequential"
)

// Entry is one scheduled run.
type Entry struct {
	Warmup bool
	Round  int // counts from 0 among warm-up and among measured rounds
	Slot   int // position within the round (random order) or the cell index (sequential)
	Cell   int
	// Block groups the entries between two environment snapshots: a round
	// in random order, a cell's series in sequential order.
	Block int
}

// Schedule lists every run of an experiment in the order they run. The same
// seed always gives the same schedule, so a resumed experiment continues it.
func Schedule(order string, cells, warmup, rounds int, seed uint64) []Entry {
	var out []Entry
	at := func(i int) (bool, int) {
		if i < warmup {
			return true, i
		}
		return false, i - warmup
	}
	if order == OrderSequential {
		for c := 0; c < cells; c++ {
			for i := 0; i < warmup+rounds; i++ {
				w, r := at(i)
				out = append(out, Entry{Warmup: w, Round: r, Slot: c, Cell: c, Block: c})
			}
		}
		return out
	}
	rng := rand.New(rand.NewPCG(seed, 0x1ab))
	for i := 0; i < warmup+rounds; i++ {
		w, r := at(i)
		for slot, c := range rng.Perm(cells) {
			out = append(out, Entry{Warmup: w, Round: r, Slot: slot, Cell: c, Block: i})
		}
	}
	return out
}

// MaxRuns is the most runs one experiment may schedule, warm-up runs
// included: a million runs of even one second each is eleven days, and a
// schedule past it is a typo (rounds: 4000000000) that would exhaust memory
// before the first run.
const MaxRuns = 1_000_000

// CheckRuns refuses a schedule of more than MaxRuns runs, naming the
// numbers. cells may be a saturated count (math.MaxInt).
func CheckRuns(cells, warmup, rounds int) error {
	total := float64(cells) * (float64(warmup) + float64(rounds))
	if total <= MaxRuns {
		return nil
	}
	return fmt.Errorf("%d cells x (%d warm-up + %d rounds) = %.4g runs; an experiment schedules at most %d runs: use fewer rounds, matrix values or variants, or split the study",
		cells, warmup, rounds, total, MaxRuns)
}

// VariantWarmup lists each variant's own warm-up runs: n runs of each
// variant back to back (its cells in turn), variants in a seeded random
// order, stored as warm-up runs of rounds -1, -2, ... of their cell. Each
// variant's runs are one block. variantOf names the variant of each cell.
func VariantWarmup(variantOf []string, n int, seed uint64) []Entry {
	if n <= 0 {
		return nil
	}
	var names []string
	cellsOf := map[string][]int{}
	for c, v := range variantOf {
		if _, ok := cellsOf[v]; !ok {
			names = append(names, v)
		}
		cellsOf[v] = append(cellsOf[v], c)
	}
	rng := rand.New(rand.NewPCG(seed, 0x7a2))
	var out []Entry
	for b, i := range rng.Perm(len(names)) {
		cells := cellsOf[names[i]]
		for k := range n {
			c := cells[k%len(cells)]
			out = append(out, Entry{Warmup: true, Round: -1 - k/len(cells), Slot: k, Cell: c, Block: -1 - b})
		}
	}
	return out
}

// scheduleCells lists every run of the plan in the order they run: the
// variants' own warm-up runs (of the cells no calibration paces), the
// cells' calibration runs (each variant's as one block, the variants in a
// seeded random order), then the rounds — each cell's own number of them,
// when it has one.
func scheduleCells(plan Plan, cells []Cell) []Entry {
	var own []int // the cells a variant's warm-up runs cycle through
	var variantOf []string
	for i, c := range cells {
		if !c.Calibrated {
			own = append(own, i)
			variantOf = append(variantOf, c.Variant)
		}
	}
	out := VariantWarmup(variantOf, plan.VariantWarmup, plan.Seed)
	for i := range out {
		out[i].Cell = own[out[i].Cell]
	}
	var names []string
	calibrated := map[string][]int{}
	for i, c := range cells {
		if c.Calibrate == nil {
			continue
		}
		if _, ok := calibrated[c.Variant]; !ok {
			names = append(names, c.Variant)
		}
		calibrated[c.Variant] = append(calibrated[c.Variant], i)
	}
	// Each variant's calibration runs, interleaved: every variant's
	// first, in a random order, then every variant's second ...
	rng := rand.New(rand.NewPCG(plan.Seed, 0xca1))
	for k := range store.CalibrationRuns {
		for b, v := range rng.Perm(len(names)) {
			for slot, c := range calibrated[names[v]] {
				out = append(out, Entry{Warmup: true, Round: store.CalibrationRound + k, Slot: slot, Cell: c, Block: store.CalibrationRound - k*len(names) - b})
			}
		}
	}
	// A cell of rounds of its own (a search) runs in rounds past the
	// plan's, alone with its kind.
	rounds := plan.Rounds
	for _, c := range cells {
		rounds = max(rounds, c.Rounds)
	}
	for _, e := range Schedule(plan.Order, len(cells), plan.Warmup, rounds, plan.Seed) {
		own := cells[e.Cell].Rounds
		if own == 0 {
			own = plan.Rounds
		}
		if e.Warmup || e.Round < own {
			out = append(out, e)
		}
	}
	return out
}
