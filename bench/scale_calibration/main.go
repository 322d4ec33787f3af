// Command scale_calibration checks iolab's scale fits by simulation: it
// runs experiments of known cost curves — linear with a start-up cost,
// n·log n, n^1.2, and a curve with a knee — at 5 scales over two decades
// with multiplicative run noise, and prints how often the exponent's 95%
// interval covers the true exponent and the 95% prediction intervals
// cover the true cost 100x and 1000x beyond the largest scale.
//
//	go run ./bench/scale_calibration [-trials 200]
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/iolab/iolab/internal/scaling"
)

// curve is a cost with its true exponent (NaN where there is none).
type curve struct {
	name     string
	cost     func(n float64) float64
	exponent float64
}

var curves = []curve{
	{"0.5 + 2e-5·n (start-up 20% of the smallest)", func(n float64) float64 { return 0.5 + 2e-5*n }, 1},
	{"1e-6·n·log n", func(n float64) float64 { return 1e-6 * n * math.Log(n) }, math.NaN()},
	{"0.2 + 1e-6·n^1.2", func(n float64) float64 { return 0.2 + 1e-6*math.Pow(n, 1.2) }, 1.2},
	// Start-up-dominated: 83% of the cost at the smallest scale.
	{"0.5 + 1e-5·n (start-up 83% of the smallest)", func(n float64) float64 { return 0.5 + 1e-5*n }, 1},
	// Linear until a cache of 3e5 items fills, then every item costs 3x:
	// a change of regime inside the measured range.
	{"knee: 1e-5·n, 3x per item past 3e5", func(n float64) float64 {
		if n <= 3e5 {
			return 1e-5 * n
		}
		return 3 + 3e-5*(n-3e5)
	}, math.NaN()},
}

var scales = []float64{1e4, 3.16e4, 1e5, 3.16e5, 1e6}

func main() {
	trials := flag.Int("trials", 200, "simulated experiments per row")
	flag.Parse()
	at := []float64{100 * scales[len(scales)-1], 1000 * scales[len(scales)-1]}
	fmt.Printf("%d trials per row; 5 scales from 1e4 to 1e6, 6 rounds; extrapolations to %g (100x) and %g (1000x)\n\n", *trials, at[0], at[1])
	fmt.Println("| curve | CV | exponent CI (a + c·n^b) covers the truth | best model's 95% PI covers the truth at 100x | the PI across indistinct models covers it at 100x | the PI across indistinct models covers it at 1000x | best model | a residual pattern flagged |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, c := range curves {
		for _, cv := range []float64{0.05, 0.30, 0.45} {
			covered, piBest, piAcross, far, flagged := 0, 0, 0, 0, 0
			best := map[string]int{}
			for i := 0; i < *trials; i++ {
				rng := rand.New(rand.NewPCG(uint64(i), 3))
				var pts []scaling.Point
				for r := range 6 {
					for _, n := range scales {
						pts = append(pts, scaling.Point{N: n, Round: r, Value: c.cost(n) * math.Exp(cv*rng.NormFloat64())})
					}
				}
				res, err := scaling.FitAll(pts, scaling.Options{At: at, Seed: uint64(i)})
				if err != nil {
					continue
				}
				truth := c.cost(at[0])
				for _, f := range res.Fits {
					if f.Model == scaling.PowerConst && f.ExponentCI[0] <= c.exponent && c.exponent <= f.ExponentCI[1] {
						covered++
					}
				}
				b := res.Fits[0]
				best[b.Model]++
				if e := b.Extrapolations[0]; e.PI95[0] <= truth && truth <= e.PI95[1] {
					piBest++
				}
				if e := res.Across[0]; e.PI95[0] <= truth && truth <= e.PI95[1] {
					piAcross++
				}
				if e := res.Across[1]; e.PI95[0] <= c.cost(at[1]) && c.cost(at[1]) <= e.PI95[1] {
					far++
				}
				for _, f := range res.Fits {
					if f.Model == b.Model && slices.ContainsFunc([]rune(f.Pattern), func(r rune) bool { return r == '+' || r == '-' }) {
						flagged++
					}
				}
			}
			cover := "—"
			if !math.IsNaN(c.exponent) {
				cover = rate(covered, *trials)
			}
			top, topN := "", 0
			for m, k := range best {
				if k > topN || k == topN && m < top {
					top, topN = m, k
				}
			}
			fmt.Printf("| %s | %.0f%% | %s | %s | %s | %s | %s (%.0f%%) | %s |\n", c.name, 100*cv, cover, rate(piBest, *trials), rate(piAcross, *trials),
				rate(far, *trials), top, 100*float64(topN)/float64(*trials), rate(flagged, *trials))
		}
	}
}

// rate prints a proportion with its Monte-Carlo standard error.
func rate(k, n int) string {
	p := float64(k) / float64(n)
	return fmt.Sprintf("%.1f%% ± %.1f%%", 100*p, 100*math.Sqrt(p*(1-p)/float64(n)))
}
