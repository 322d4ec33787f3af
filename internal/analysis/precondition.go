package analysis

import (
	"fmt"
	"sort"

	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
)

// PreconditionView is how the warm-up rounds of a plan with a
// precondition: ended: steady after Rounds of them (SNIA's rule on each
// cell's primary metric), or at the rule's most without.
type PreconditionView struct {
	stats.Precondition
	Steady bool   `json:"steady"`
	Rounds int    `json:"warmup_rounds"`
	Metric string `json:"metric"`
}

// Rule says the rule in words.
func (p PreconditionView) Rule() string {
	return fmt.Sprintf("the last %d rounds within %.0f%% of their mean, their slope within %.0f%%", p.Window, 100*p.Range, 100*p.Slope)
}

// Preconditioned judges the warm-up rounds stored so far: steady when
// every cell's primary metric is, by pc, over the rounds up to one —
// the first such round ends them. (A cell of no repeats, a search, and
// rounds before the warm-up ones, a variant's own or a calibration,
// take no part.)
func Preconditioned(dm derivedMetrics, d *store.Data, perCell [][]store.Run, pc stats.Precondition) *PreconditionView {
	v := &PreconditionView{Precondition: pc}
	byRound := make([]map[int]float64, len(d.Cells))
	last := -1
	for i, c := range d.Cells {
		byRound[i] = map[int]float64{}
		if Searched(c) {
			continue
		}
		metric := PrimaryMetric(c.Workload)
		v.Metric = metric
		for _, run := range perCell[i] {
			if run.Warmup && run.Round >= 0 && run.Status == store.StatusOK {
				if x, ok := dm.of(run.Result)[metric]; ok {
					byRound[i][run.Round] = x
					last = max(last, run.Round)
				}
			}
		}
	}
	for round := 0; round <= last; round++ {
		steady := true
		for i, c := range d.Cells {
			if Searched(c) {
				continue
			}
			var rounds []int
			for r := range byRound[i] {
				if r <= round {
					rounds = append(rounds, r)
				}
			}
			sort.Ints(rounds)
			values := make([]float64, len(rounds))
			for k, r := range rounds {
				values[k] = byRound[i][r]
			}
			steady = steady && pc.Steady(values)
		}
		v.Rounds = round + 1
		if steady {
			v.Steady = true
			return v
		}
	}
	return v
}

// PreconditionOf judges a stored experiment's warm-up rounds so far, as
// Preconditioned does: what the lab asks after each warm-up round.
func PreconditionOf(d *store.Data, pc stats.Precondition) *PreconditionView {
	index := map[int64]int{}
	for i, c := range d.Cells {
		index[c.ID] = i
	}
	perCell := make([][]store.Run, len(d.Cells))
	for _, run := range d.Runs {
		if i, ok := index[run.CellID]; ok {
			perCell[i] = append(perCell[i], run)
		}
	}
	return Preconditioned(derivedMetrics{}, d, perCell, pc)
}
