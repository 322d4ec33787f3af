// Command stats_calibration checks iolab's comparison by simulation: it
// repeats A/A experiments (no real difference) under the ways real targets
// misbehave, and experiments with a real effect, and prints the rate of
// false faster/slower verdicts and the power, with Monte-Carlo errors, for
// the randomized schedule and for the sequential one legacy benchmarks use.
//
//	go run ./bench/stats_calibration [-trials 2000]
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/stats"
)

// scenario is a target's behaviour over one experiment of two variants.
type scenario struct {
	name   string
	effect float64 // true ratio b/a of the metric (a time: lower is better)
	cv     float64
	rounds int
	// level is the target's slowdown at a fraction f of the experiment.
	level func(f float64) float64
	// firstRunFactor multiplies the very first measured run.
	firstRunFactor float64
}

var scenarios = []scenario{
	{name: "A/A, no drift, CV 5%", effect: 1, cv: 0.05, rounds: 20, level: flat},
	{name: "A/A, linear 3x drift", effect: 1, cv: 0.05, rounds: 20, level: func(f float64) float64 { return 1 + 2*f }},
	{name: "A/A, step change halfway", effect: 1, cv: 0.05, rounds: 20, level: func(f float64) float64 {
		if f < 0.5 {
			return 1
		}
		return 1.5
	}},
	{name: "A/A, first run 2x", effect: 1, cv: 0.05, rounds: 20, level: flat, firstRunFactor: 2},
	{name: "10% effect, CV 5%", effect: 1.10, cv: 0.05, rounds: 20, level: flat},
	{name: "10% effect, CV 5%, 3x drift", effect: 1.10, cv: 0.05, rounds: 20, level: func(f float64) float64 { return 1 + 2*f }},
}

func flat(float64) float64 { return 1 }

// trial simulates one experiment and returns the comparison of b with a.
func trial(s scenario, order string, seed uint64) stats.Comparison {
	rng := rand.New(rand.NewPCG(seed, 99))
	entries := lab.Schedule(order, 2, 0, s.rounds, seed)
	var a, b []stats.Obs
	for i, e := range entries {
		v := 100 * s.level(float64(i)/float64(len(entries)-1)) * (1 + s.cv*rng.NormFloat64())
		if e.Cell == 1 {
			v *= s.effect
		}
		if i == 0 && s.firstRunFactor > 0 {
			v *= s.firstRunFactor
		}
		o := stats.Obs{Round: e.Round, Slot: e.Slot, Value: v}
		if e.Cell == 0 {
			a = append(a, o)
		} else {
			b = append(b, o)
		}
	}
	c := stats.Compare(a, b, stats.Metric{LowerIsBetter: true}, 0.02)
	stats.Finish([]*stats.Comparison{&c}, 0.02)
	return c
}

func main() {
	trials := flag.Int("trials", 2000, "simulated experiments per scenario and order")
	flag.Parse()
	fmt.Printf("%d trials each; threshold 2%%; a time metric (b slower = ratio > 1)\n\n", *trials)
	fmt.Println("| scenario | rounds | order | 95% CI misses the true ratio | false faster/slower | power (correct 'slower') |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, s := range scenarios {
		for _, order := range []string{lab.OrderRandom, lab.OrderSequential} {
			wrong, right, missed := 0, 0, 0
			for i := 0; i < *trials; i++ {
				c := trial(s, order, uint64(i)+1)
				if c.CI95[0] > s.effect || c.CI95[1] < s.effect {
					missed++
				}
				v := c.Verdict
				switch {
				case s.effect == 1 && (v == stats.Faster || v == stats.Slower):
					wrong++
				case s.effect > 1 && v == stats.Slower:
					right++
				case s.effect > 1 && v == stats.Faster:
					wrong++
				}
			}
			power := "—"
			if s.effect > 1 {
				power = rate(right, *trials)
			}
			fmt.Printf("| %s | %d | %s | %s | %s | %s |\n", s.name, s.rounds, order, rate(missed, *trials), rate(wrong, *trials), power)
		}
	}
}

// rate prints a proportion with its Monte-Carlo standard error.
func rate(k, n int) string {
	p := float64(k) / float64(n)
	return fmt.Sprintf("%.1f%% ± %.1f%%", 100*p, 100*math.Sqrt(p*(1-p)/float64(n)))
}
