// Command slo_calibration checks iolab's SLO search by simulation: a
// queue whose highest rate under an objective is known (M/D/c or M/M/1,
// run-to-run noise, runs of a given number of requests), searched as
// iolab searches it (stats.SLOSearch, the plan's defaults), a thousand
// times a row. It prints how often the truth lies in the reported range —
// from the rate the objective was shown to hold at to the lowest it was
// shown to fail at (unbounded when none was) — and how often the rate
// reported as sustained is above the truth.
//
//	go run ./bench/slo_calibration [-searches 1000] [-rows all|quick]
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"

	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
)

// queue is a server of c workers; each request takes d times a factor
// drawn per run (the run-to-run noise, log-normal of CV cv), and times an
// exponential draw of mean 1 when exp (M/M/c) or exactly (M/D/c).
// Requests arrive as a Poisson process.
type queue struct {
	name string
	c    int
	d    float64
	exp  bool
}

// row is one line of the table: a queue, the requests of each run, the
// noise between runs, the percentile judged, and where the truth lies as
// a share of the queue's capacity c/d.
type row struct {
	q        queue
	requests int
	cv       float64
	quantile float64
	truth    float64
}

func main() {
	searches := flag.Int("searches", 1000, "searches a row")
	rows := flag.String("rows", "all", "all, or quick (three rows)")
	flag.Parse()
	md4 := queue{name: "M/D/4, 20.7 ms", c: 4, d: 0.0207}
	mm1 := queue{name: "M/M/1, 10 ms", c: 1, d: 0.010, exp: true}
	table := []row{
		{md4, 2000, 0.05, 0.99, 0.6}, {md4, 500, 0.05, 0.99, 0.6}, {md4, 2000, 0.15, 0.99, 0.6},
		{md4, 2000, 0.05, 0.99, 0.3}, {md4, 2000, 0.05, 0.99, 0.95}, {mm1, 2000, 0.05, 0.5, 0.6},
		{mm1, 2000, 0.05, 0.99, 0.6}, {mm1, 500, 0.05, 0.99, 0.5}, {mm1, 2000, 0.15, 0.99, 0.6}, {mm1, 2000, 0.15, 0.99, 0.9},
		{md4, 2000, 0.15, 0.99, 0.9},
	}
	if *rows == "quick" {
		table = table[:3]
	}
	fmt.Printf("%d searches a row; each load's runs judged as iolab judges them (3 to 6 runs a load, at most %d loads, precision 5%%)\n\n", *searches, plan.SLOMaxSteps)
	fmt.Println("| queue | requests a run | run CV | objective | truth (share of capacity) | truth in the range | sustained above the truth | reported / truth (median) | loads (mean) |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, r := range table {
		inside, above, loads := 0, 0, 0
		var ratios []float64
		rng := rand.New(rand.NewPCG(uint64(r.requests), uint64(r.truth*1000)))
		truth := r.truth * float64(r.q.c) / r.q.d
		bound := meanQuantile(r, truth, 4000, rng)
		for range *searches {
			held, failed, n := search(r, bound, rng)
			loads += n
			if held <= truth && truth <= failed {
				inside++
			}
			if held > truth {
				above++
			}
			ratios = append(ratios, held/truth)
		}
		slices.Sort(ratios)
		fmt.Printf("| %s | %d | %.0f%% | p%g < %.3g ms | %.2f | %.1f%% | %.1f%% | %.3f | %.1f |\n", r.q.name, r.requests, 100*r.cv, 100*r.quantile, 1e3*bound,
			r.truth, pct(inside, *searches), pct(above, *searches), ratios[len(ratios)/2], float64(loads)/float64(*searches))
	}
}

func pct(n, of int) float64 { return 100 * float64(n) / float64(of) }

// search runs one search of the row's queue for the highest rate at which
// the mean of its runs' quantile stays below bound, and returns the rate
// it reports sustained, the lowest rate it showed to fail at (+Inf: none)
// and how many loads it tried.
func search(r row, bound float64, rng *rand.Rand) (held, failed float64, loads int) {
	flat := calibrate(r, rng)
	s := plan.SLO{Precision: 0.05}.NewSearch(6) // as a plan's search, of rounds: 6
	for guard := 0; !s.Done(); guard++ {
		if guard > s.MaxTotalRuns() {
			fmt.Fprintln(os.Stderr, "slo_calibration: a search did not end")
			os.Exit(1)
		}
		s.Add(runQuantile(r, s.Share()*flat, rng)/bound, true)
	}
	failed = math.Inf(1)
	for _, st := range s.Steps {
		if st.Verdict == stats.Fails {
			failed = math.Min(failed, st.Share*flat)
		}
	}
	return s.Lo * flat, failed, len(s.Steps)
}

// calibrate is iolab's calibration: store.CalibrationRuns flat-out
// runs, each a closed loop that keeps every worker busy, its rate the
// requests over the time the workers took; the highest of them.
func calibrate(r row, rng *rand.Rand) float64 {
	top := 0.0
	for range store.CalibrationRuns {
		f := runFactor(r, rng)
		busy := 0.0
		for range r.requests {
			busy += service(r, f, rng)
		}
		top = math.Max(top, float64(r.requests)*float64(r.q.c)/busy)
	}
	return top
}

// runQuantile is one run at rate: its requests' response times' quantile.
func runQuantile(r row, rate float64, rng *rand.Rand) float64 {
	f := runFactor(r, rng)
	free := make([]float64, r.q.c) // when each worker is next free
	resp := make([]float64, r.requests)
	t := 0.0
	for i := range resp {
		t += rng.ExpFloat64() / rate
		w := 0
		for j := range free {
			if free[j] < free[w] {
				w = j
			}
		}
		start := math.Max(t, free[w])
		free[w] = start + service(r, f, rng)
		resp[i] = free[w] - t
	}
	slices.Sort(resp)
	return resp[min(len(resp)-1, int(math.Ceil(r.quantile*float64(len(resp))))-1)]
}

// meanQuantile is the mean of the quantile over n runs at rate: the
// bound that makes rate the truth.
func meanQuantile(r row, rate float64, n int, rng *rand.Rand) float64 {
	sum := 0.0
	for range n {
		sum += runQuantile(r, rate, rng)
	}
	return sum / float64(n)
}

func runFactor(r row, rng *rand.Rand) float64 {
	sigma := math.Sqrt(math.Log(1 + r.cv*r.cv))
	return math.Exp(sigma*rng.NormFloat64() - sigma*sigma/2)
}

func service(r row, f float64, rng *rand.Rand) float64 {
	if r.q.exp {
		return r.q.d * f * rng.ExpFloat64()
	}
	return r.q.d * f
}
