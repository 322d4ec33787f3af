package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/iolab/iolab/internal/history"
)

// historyScenario is a history of n experiments' medians (log scale) with
// noise sd between experiments, and a change: the levels after index at
// are shifted by step (a ratio), or a drift over the whole history.
type historyScenario struct {
	name  string
	n, at int
	step  float64
	sd    float64
	drift float64 // the ratio of the last level to the first, spread evenly
}

var historyScenarios = []historyScenario{
	{"no change, 5% noise", 8, 0, 1, 0.05, 1},
	{"no change, 5% noise", 12, 0, 1, 0.05, 1},
	{"no change, 5% noise", 30, 0, 1, 0.05, 1},
	{"no change, 20% noise", 12, 0, 1, 0.20, 1},
	{"slow drift to 1.3x, 5% noise", 30, 0, 1, 0.05, 1.3},
	{"+25% after 4 of 8, 5% noise", 8, 4, 1.25, 0.05, 1},
	{"+25% after 9 of 12 (3 after), 5% noise", 12, 9, 1.25, 0.05, 1},
	{"+25% after 10 of 12 (2 after), 5% noise", 12, 10, 1.25, 0.05, 1},
	{"+10% after 15 of 30, 5% noise", 30, 15, 1.10, 0.05, 1},
	{"no change, 5% noise", 16, 0, 1, 0.05, 1},
	{"+10% after 8 of 16, 5% noise", 16, 8, 1.10, 0.05, 1},
	{"+9.7% after 9 of 16, 5.4% noise (the real history)", 16, 9, 1.097, 0.054, 1},
	{"6x after 6 of 12 (the block-layer history), 20% noise", 12, 6, 6, 0.20, 1},
}

// historyTable is how often e-divisive means finds a change point where
// there is none, and finds the one there is.
func historyTable(trials int) {
	trials = max(trials/4, 100) // each trial is hundreds of permutation tests
	fmt.Printf("history change points, %d histories per row (one value per experiment: its median)\n\n", trials)
	fmt.Println("| history | experiments | any change point found | the change found within ±1 experiment | found, and the true step inside its 95% location range | a likelihood-ratio test for one step at 5%: the most any test finds |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, s := range historyScenarios {
		anyCP, found, located := 0, 0, 0
		for i := range trials {
			rng := rand.New(rand.NewPCG(uint64(i)+1, 77))
			x := make([]float64, s.n)
			for k := range x {
				x[k] = s.sd*rng.NormFloat64() + math.Log(s.drift)*float64(k)/float64(s.n-1)
				if s.at > 0 && k >= s.at {
					x[k] += math.Log(s.step)
				}
			}
			cps := history.Find(x, uint64(i))
			if len(cps) > 0 {
				anyCP++
			}
			for _, cp := range cps {
				if s.at > 0 && cp.Index >= s.at-1 && cp.Index <= s.at+1 {
					found++
					if cp.Located[0] <= s.at && s.at <= cp.Located[1] {
						located++
					}
					break
				}
			}
		}
		col, loc := "—", "—"
		if s.at > 0 {
			col, loc = pct(found, trials), fmt.Sprintf("%.1f%% of those", 100*float64(located)/float64(max(found, 1)))
		}
		fmt.Printf("| %s | %d | %s | %s | %s | %s |\n", s.name, s.n, pct(anyCP, trials), col, loc, oracle(s, trials))
	}
}

// oracle is the power of the likelihood-ratio test for one step in a
// series of independent normal values (the largest F statistic of a
// two-level fit over every split), at the 5% critical value of that
// statistic under no change, found by simulating it: what a test that
// knows the noise is normal and the change a single step can find.
// Nothing that keeps its false alarms at 5% finds more such steps.
func oracle(s historyScenario, trials int) string {
	if s.at == 0 || s.drift != 1 {
		return "—"
	}
	rng := rand.New(rand.NewPCG(uint64(s.n), 5))
	x := make([]float64, s.n)
	null := make([]float64, 20000)
	for i := range null {
		for k := range x {
			x[k] = rng.NormFloat64()
		}
		null[i] = maxF(x)
	}
	slices.Sort(null)
	crit := null[len(null)*95/100]
	hit := 0
	for range 10 * trials {
		for k := range x {
			x[k] = s.sd * rng.NormFloat64()
			if k >= s.at {
				x[k] += math.Log(s.step)
			}
		}
		if maxF(x) > crit {
			hit++
		}
	}
	return pct(hit, 10*trials)
}

// maxF is the largest F statistic of a step over the splits of x.
func maxF(x []float64) float64 {
	n := float64(len(x))
	var tot, ss float64
	for _, v := range x {
		tot += v
	}
	for _, v := range x {
		ss += (v - tot/n) * (v - tot/n)
	}
	best, left := 0.0, 0.0
	for k := 1; k < len(x); k++ {
		left += x[k-1]
		m1, m2 := left/float64(k), (tot-left)/(n-float64(k))
		between := float64(k) * (n - float64(k)) / n * (m1 - m2) * (m1 - m2)
		best = max(best, between/((ss-between)/(n-2)))
	}
	return best
}

func pct(k, n int) string {
	p := float64(k) / float64(n)
	return fmt.Sprintf("%.1f%% ± %.1f%%", 100*p, 100*math.Sqrt(p*(1-p)/float64(n)))
}
