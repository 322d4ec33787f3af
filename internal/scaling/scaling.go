// Package scaling fits how a cost grows with scale — the time, CPU or
// memory a run takes at n objects — and extrapolates it, with intervals
// that do not assume the model.
//
// Four models are fitted to every run's value, on the log scale (run
// noise is multiplicative: a CV, not a fixed number of seconds):
//
//	a + c·n          linear, with a start-up cost
//	a + c·n·log n    n log n, with a start-up cost
//	a + c·n^b        a power law with a start-up cost
//	c·n^b            a pure power law
//
// Intervals come from the bootstrap over rounds: every round ran every
// scale once, so resampling whole rounds keeps what a round shares (the
// machine's state then) and makes no assumption about the curve. The
// models are compared by AICc; those within 2 of the best are ones the
// data cannot tell apart, and the report says so rather than pick. An
// extrapolation's 95% prediction interval is the spread of the
// bootstrapped curves at that scale times the run noise; beside each
// model's, the spread across the models the data cannot tell apart is
// the honest answer to "what will 1000x cost".
//
// Google Benchmark's Complexity() fits O(1)..O(n³) by least squares and
// prints an RMS; it gives no interval and does not extrapolate.
package scaling

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/iolab/iolab/internal/stats"
)

// Point is one run's value of a metric at a scale.
type Point struct {
	N     float64
	Round int
	Value float64
}

// Models, by name.
const (
	Linear     = "a + c·n"
	NLogN      = "a + c·n·log n"
	PowerConst = "a + c·n^b"
	Power      = "c·n^b"
)

// Models are all the models, in the order they are described.
var Models = []string{Linear, NLogN, PowerConst, Power}

// Fit is one model fitted to the points.
type Fit struct {
	Model string `json:"model"`
	// A is the start-up cost (0 for the pure power law), C the cost per
	// unit of the growth term, B the exponent of n.
	A, C, B float64
	// Exponent is how the cost grows beyond the start-up: b for the power
	// laws (what an extrapolation far out follows), 1 for linear, the
	// slope 1 + 1/ln n at the largest scale measured for n log n — with
	// its bootstrap 95% interval for the power laws.
	Exponent   float64    `json:"exponent"`
	ExponentCI [2]float64 `json:"exponent_ci95"`
	// AICc ranks the models (lower fits better for its parameters);
	// DeltaAICc is this one's distance from the best.
	AICc      float64 `json:"aic"`
	DeltaAICc float64 `json:"delta_aic"`
	// RMS is the residuals' root mean square on the log scale (0.05: the
	// model misses runs by about 5%).
	RMS float64 `json:"rms_log"`
	// Residuals is the mean residual at each scale, relative (+0.04: runs
	// there took 4% more than the model says); Pattern marks the scales
	// where that is beyond chance (+ or -; at most one scale in twenty
	// experiments is marked when the model is right), else 0.
	Residuals []float64 `json:"residuals"`
	Pattern   string    `json:"residual_pattern"`
	// StartupShare is the start-up cost's share of the cost at the
	// smallest scale.
	StartupShare   float64         `json:"startup_share"`
	Extrapolations []Extrapolation `json:"extrapolations"`
	params         []float64
	boot           [][]float64 // bootstrapped parameters
	sigma          float64     // residual standard deviation, log scale
	rounds         int         // the rounds resampled
}

// Extrapolation is a model's prediction at a scale, with its 95%
// prediction interval (where one run there would land).
type Extrapolation struct {
	At    float64    `json:"at"`
	Value float64    `json:"value"`
	PI95  [2]float64 `json:"pi95"`
}

// Result is every model fitted to one metric's points.
type Result struct {
	// Scales are the distinct scales measured, ascending.
	Scales []float64 `json:"scales"`
	// Fits, best (lowest AICc) first.
	Fits []Fit `json:"fits"`
	// Indistinct are the models within 2 AICc of the best: the data
	// cannot choose among them.
	Indistinct []string `json:"indistinct"`
	// Across is, per extrapolation, the range of the indistinct models'
	// prediction intervals together.
	Across   []Extrapolation `json:"across_models"`
	Warnings []string        `json:"warnings"`
}

// Options are what a fit is asked for.
type Options struct {
	// At are the scales to extrapolate to.
	At []float64
	// Bootstrap is the number of resamples (default 400).
	Bootstrap int
	Seed      uint64
}

// MinScales is the fewest distinct scales a fit needs: a start-up cost,
// a rate and an exponent are three unknowns.
const MinScales = 3

// FitAll fits every model to the points (values must be positive) and
// extrapolates each to opts.At.
func FitAll(points []Point, opts Options) (*Result, error) {
	var pts []Point
	for _, p := range points {
		if p.N > 0 && p.Value > 0 && !math.IsInf(p.Value, 0) && !math.IsNaN(p.Value) {
			pts = append(pts, p)
		}
	}
	r := &Result{}
	for _, p := range pts {
		if !slices.Contains(r.Scales, p.N) {
			r.Scales = append(r.Scales, p.N)
		}
	}
	sort.Float64s(r.Scales)
	if len(r.Scales) < MinScales {
		return nil, fmt.Errorf("%d distinct scales with positive values; a fit needs %d or more", len(r.Scales), MinScales)
	}
	if opts.Bootstrap <= 0 {
		opts.Bootstrap = 400
	}
	rounds := map[int][]Point{}
	var roundIDs []int
	for _, p := range pts {
		if _, ok := rounds[p.Round]; !ok {
			roundIDs = append(roundIDs, p.Round)
		}
		rounds[p.Round] = append(rounds[p.Round], p)
	}
	sort.Ints(roundIDs)
	rng := rand.New(rand.NewPCG(opts.Seed, 0x5ca1e))
	samples := make([][]Point, opts.Bootstrap)
	for i := range samples {
		for range roundIDs {
			samples[i] = append(samples[i], rounds[roundIDs[rng.IntN(len(roundIDs))]]...)
		}
	}
	for _, m := range Models {
		f := fitModel(m, pts)
		if f.params == nil {
			continue // a cost that falls with scale: no growth model fits
		}
		for _, s := range samples {
			if b := fitModel(m, s); b.params != nil {
				f.boot = append(f.boot, b.params)
			}
		}
		f.describe(pts, r.Scales, opts.At, len(roundIDs))
		r.Fits = append(r.Fits, f)
	}
	if len(r.Fits) == 0 {
		return nil, fmt.Errorf("the cost does not grow with scale; no model of growth fits")
	}
	sort.SliceStable(r.Fits, func(i, j int) bool { return r.Fits[i].AICc < r.Fits[j].AICc })
	for i := range r.Fits {
		r.Fits[i].DeltaAICc = r.Fits[i].AICc - r.Fits[0].AICc
		if r.Fits[i].DeltaAICc < 2 {
			r.Indistinct = append(r.Indistinct, r.Fits[i].Model)
		}
	}
	for k, at := range opts.At {
		x := Extrapolation{At: at, Value: r.Fits[0].Extrapolations[k].Value, PI95: [2]float64{math.Inf(1), math.Inf(-1)}}
		for _, f := range r.Fits[:len(r.Indistinct)] {
			e := f.Extrapolations[k]
			x.PI95[0], x.PI95[1] = math.Min(x.PI95[0], e.PI95[0]), math.Max(x.PI95[1], e.PI95[1])
		}
		r.Across = append(r.Across, x)
	}
	r.warn(opts.At)
	return r, nil
}

// curve is a model's cost at n for parameters x (a, c[, b]; c, b for
// the pure power law).
func curve(model string, x []float64, n float64) float64 {
	switch model {
	case Linear:
		return x[0] + x[1]*n
	case NLogN:
		return x[0] + x[1]*n*math.Log(n)
	case PowerConst:
		return x[0] + x[1]*math.Pow(n, x[2])
	}
	return x[0] * math.Pow(n, x[1])
}

// At is the fitted curve's cost at n.
func (f Fit) At(n float64) float64 { return curve(f.Model, f.params, n) }

// parameters counts a model's parameters, the noise's included.
func parameters(model string) int {
	if model == PowerConst {
		return 4
	}
	return 3
}

// fitModel fits a model by least squares on the log scale — the one
// criterion every model is fitted and ranked by (run noise is a CV, so
// a log value's miss is what a run's noise is) — params nil when it
// fails. The pure power law is a line in log-log; the others are fitted
// in a and c for a given b by Gauss–Newton from the relative
// least-squares solution, and the exponent of a + c·n^b is searched
// (golden section).
func fitModel(model string, pts []Point) Fit {
	f := Fit{Model: model}
	logN, logV := make([]float64, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		logN[i], logV[i] = math.Log(p.N), math.Log(p.Value)
	}
	xs := make([]float64, len(pts))
	growth := func(g func(i int) float64) []float64 {
		for i := range xs {
			xs[i] = g(i)
		}
		return xs
	}
	switch model {
	case Power:
		var sx, sy, sxx, sxy float64
		for i := range pts {
			x, y := logN[i], logV[i]
			sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
		}
		n := float64(len(pts))
		b := (n*sxy - sx*sy) / (n*sxx - sx*sx)
		if math.IsNaN(b) || math.IsInf(b, 0) {
			return f
		}
		f.params = []float64{math.Exp((sy - b*sx) / n), b}
	case Linear:
		a, c, _ := affine(pts, growth(func(i int) float64 { return pts[i].N }), logV, newtonSteps)
		f.params = []float64{a, c}
	case NLogN:
		a, c, _ := affine(pts, growth(func(i int) float64 { return pts[i].N * logN[i] }), logV, newtonSteps)
		f.params = []float64{a, c}
	case PowerConst:
		// The search compares exponents after a few steps from the same
		// start (close to converged: each step of Gauss–Newton here
		// gains digits); the one chosen gets every step.
		power := func(b float64) []float64 { return growth(func(i int) float64 { return math.Exp(b * logN[i]) }) }
		cost := func(b float64) float64 {
			_, _, sse := affine(pts, power(b), logV, 4)
			return sse
		}
		b := stats.GoldenMin(cost, 0.05, 4, 40)
		a, c, _ := affine(pts, power(b), logV, newtonSteps)
		f.params = []float64{a, c, b}
	}
	if f.params[1] <= 0 || math.IsNaN(f.params[1]) {
		f.params = nil // a cost that falls with scale is no growth model
	}
	return f
}

// newtonSteps bounds the Gauss–Newton steps of a fit; it stops sooner
// when a step no longer lowers the sum.
const newtonSteps = 30

// affine fits value = a + c·x, a >= 0 (x = g(n) of each point, logV its
// value's log), by least squares on the log scale, returning a, c and the
// sum of squared log misses: Gauss–Newton steps (halved until the sum
// falls, a held at 0 when a step would make it negative) from the
// relative least-squares solution, which is nearly the answer when the
// noise is a few percent and a fair start when it is not.
func affine(pts []Point, xs, logV []float64, iters int) (a, c, sse float64) {
	if a, c = relative(pts, xs); !(c > 0) {
		return a, c, math.Inf(1) // a cost that falls: fitModel drops it
	}
	// r holds the misses at (a, c), try those of a step being tried.
	r, try := make([]float64, len(xs)), make([]float64, len(xs))
	misses := func(a, c float64, out []float64) float64 {
		var s float64
		for i, x := range xs {
			m := a + c*x
			if m <= 0 {
				return math.Inf(1)
			}
			out[i] = logV[i] - math.Log(m)
			s += out[i] * out[i]
		}
		return s
	}
	sse = misses(a, c, r)
	for range iters {
		// Normal equations of the linearised problem: r = log v - log m,
		// ∂r/∂a = -1/m, ∂r/∂c = -x/m.
		var jaa, jac, jcc, ja, jc float64
		for i, x := range xs {
			m := a + c*x
			da, dc := 1/m, x/m
			jaa, jac, jcc = jaa+da*da, jac+da*dc, jcc+dc*dc
			ja, jc = ja+da*r[i], jc+dc*r[i]
		}
		var stepA, stepC float64
		if det := jaa*jcc - jac*jac; det > 0 {
			stepA, stepC = (jcc*ja-jac*jc)/det, (jaa*jc-jac*ja)/det
		}
		if a == 0 && stepA <= 0 && jcc > 0 {
			stepA, stepC = 0, jc/jcc // a held at 0
		}
		before := sse
		for h := 1.0; h > 1e-6; h /= 2 {
			na, nc := math.Max(0, a+h*stepA), c+h*stepC
			if nc <= 0 {
				continue
			}
			if s := misses(na, nc, try); s < sse {
				a, c, sse = na, nc, s
				r, try = try, r
				break
			}
		}
		if before-sse <= 1e-12*before {
			break
		}
	}
	return a, c, sse
}

// relative fits value = a + c·x, a >= 0 (x = g(n) of each point), by
// relative least squares (weights 1/v²), in closed form.
func relative(pts []Point, xs []float64) (a, c float64) {
	var sw, sx, sy, sxx, sxy float64
	for i, p := range pts {
		w, x := 1/(p.Value*p.Value), xs[i]
		sw, sx, sy, sxx, sxy = sw+w, sx+w*x, sy+w*p.Value, sxx+w*x*x, sxy+w*x*p.Value
	}
	det := sw*sxx - sx*sx
	a, c = (sxx*sy-sx*sxy)/det, (sw*sxy-sx*sy)/det
	if a < 0 || det == 0 { // no negative start-up: through the origin
		a, c = 0, sxy/sxx
	}
	return a, c
}

// describe fills what a fit says: its figures, exponent, residuals and
// extrapolations.
func (f *Fit) describe(pts []Point, scales, at []float64, rounds int) {
	if f.params == nil {
		f.AICc = math.Inf(1)
		return
	}
	x := f.params
	switch f.Model {
	case Power:
		f.C, f.B = x[0], x[1]
	case PowerConst:
		f.A, f.C, f.B = x[0], x[1], x[2]
	default:
		f.A, f.C, f.B = x[0], x[1], 1
	}
	var sse float64
	byScale := map[float64][]float64{}
	for _, p := range pts {
		d := math.Log(p.Value) - math.Log(curve(f.Model, x, p.N))
		sse += d * d
		byScale[p.N] = append(byScale[p.N], d)
	}
	n, k := float64(len(pts)), float64(parameters(f.Model))
	f.RMS = math.Sqrt(sse / n)
	f.sigma = math.Sqrt(sse / math.Max(n-k+1, 1))
	f.AICc = n*math.Log(math.Max(sse/n, 1e-300)) + 2*k
	if n-k-1 > 0 {
		f.AICc += 2 * k * (k + 1) / (n - k - 1)
	}
	var marks []string
	// A scale is marked when its mean residual is beyond what chance
	// gives any of the scales 5% of the time (Bonferroni over them).
	z := -math.Sqrt2 * math.Erfcinv(2*(1-0.05/(2*float64(len(scales)))))
	for _, s := range scales {
		ds := byScale[s]
		m := mean(ds)
		f.Residuals = append(f.Residuals, math.Expm1(m))
		se := f.sigma / math.Sqrt(float64(len(ds)))
		switch {
		case m > z*se:
			marks = append(marks, "+")
		case m < -z*se:
			marks = append(marks, "-")
		default:
			marks = append(marks, "0")
		}
	}
	f.Pattern = strings.Join(marks, " ")
	top := scales[len(scales)-1]
	f.Exponent = f.B
	f.ExponentCI = [2]float64{math.NaN(), math.NaN()}
	switch f.Model {
	case NLogN:
		f.Exponent = 1 + 1/math.Log(top)
	case PowerConst, Power:
		exps := make([]float64, 0, len(f.boot))
		for _, b := range f.boot {
			exps = append(exps, b[len(b)-1])
		}
		// Rounds that agree (a figure the program counts, the same in
		// every round) give the bootstrap nothing to resample, while the
		// curve may still miss the points: the exponent's standard error
		// from the residuals, the misfit in them, is the least it spans.
		h := expansion(rounds) * math.Max(sd(exps), f.sigma/math.Sqrt(spreadOfLogs(pts)))
		f.ExponentCI = [2]float64{f.B - h, f.B + h}
	}
	if f.A > 0 {
		f.StartupShare = f.A / curve(f.Model, x, scales[0])
	}
	f.rounds = rounds
	for _, a := range at {
		f.Extrapolations = append(f.Extrapolations, f.Predict(a))
	}
}

// spreadOfLogs is the sum of squares of the points' log scales about
// their mean: with the residuals' sigma, a slope's standard error on the
// log scale.
func spreadOfLogs(pts []Point) float64 {
	var m float64
	for _, p := range pts {
		m += math.Log(p.N)
	}
	m /= float64(len(pts))
	var ss float64
	for _, p := range pts {
		d := math.Log(p.N) - m
		ss += d * d
	}
	return ss
}

// Predict is the model's value at scale n with its 95% prediction
// interval: where one run at n would land, from the curve's uncertainty
// there (the bootstrapped curves' spread) and one run's noise about it,
// on the log scale.
func (f Fit) Predict(n float64) Extrapolation {
	e := Extrapolation{At: n, Value: curve(f.Model, f.params, n)}
	logs := make([]float64, 0, len(f.boot))
	for _, b := range f.boot {
		logs = append(logs, math.Log(curve(f.Model, b, n)))
	}
	h := expansion(f.rounds) * math.Sqrt(sd(logs)*sd(logs)+f.sigma*f.sigma)
	e.PI95 = [2]float64{e.Value * math.Exp(-h), e.Value * math.Exp(h)}
	return e
}

// warn says where the fit and its extrapolations are not to be trusted.
func (r *Result) warn(at []float64) {
	lo, hi := r.Scales[0], r.Scales[len(r.Scales)-1]
	if decades := math.Log10(hi / lo); decades < 2 {
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"the scales span %.1f decades (%s to %s); models that differ by a logarithm (n vs n·log n) or a small exponent cannot be told apart over less than 2: add scales, spaced geometrically",
			decades, Format(lo), Format(hi)))
	}
	for _, a := range at {
		if a > 100*hi {
			r.Warnings = append(r.Warnings, fmt.Sprintf(
				"%s is %.0fx the largest scale measured (%s): beyond 100x, any change of regime (a cache or memory running out, a data structure's next level) is invisible to the fit; measure closer to it",
				Format(a), a/hi, Format(hi)))
			break
		}
	}
	for _, f := range r.Fits {
		if f.Model == PowerConst && f.StartupShare > 0.5 {
			r.Warnings = append(r.Warnings, fmt.Sprintf(
				"a fixed start-up cost is %.0f%% of the cost at the smallest scale (%s): a pure power law fitted there would understate the exponent; the models with a start-up term account for it",
				100*f.StartupShare, Format(lo)))
		}
	}
	if best := r.Fits[0]; strings.ContainsAny(best.Pattern, "+-") {
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"even the best model, %s, misses the runs at some scales (residuals by scale: %s): the cost changes shape within the measured range — a knee, where a cache or memory fills or an algorithm switches — and every extrapolation assumes it does not; measure around the change",
			best.Model, best.Pattern))
	}
	if len(r.Indistinct) > 1 {
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"the data cannot choose between %s (within 2 AICc of each other): trust the extrapolations only as far as these agree",
			strings.Join(r.Indistinct, ", ")))
	}
}

// expansion is the multiple of a bootstrap standard deviation that
// makes a 95% interval from few rounds: the bootstrap over R rounds
// underestimates the spread by sqrt((R-1)/R), and R rounds know their
// noise only as well as a t distribution with R-1 degrees of freedom
// (Hesterberg's expanded bootstrap interval).
func expansion(rounds int) float64 {
	r := float64(max(rounds, 2))
	return math.Sqrt(r/(r-1)) * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: r - 1}.Quantile(0.975)
}

// sd is the standard deviation; NaN for fewer than 2 values.
func sd(v []float64) float64 {
	if len(v) < 2 {
		return math.NaN()
	}
	m := mean(v)
	var ss float64
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(v)-1))
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// Format writes a scale as it is given: whole counts in full (3162278),
// others as %g (1e+12 and beyond stay short).
func Format(n float64) string {
	if n == math.Trunc(n) && math.Abs(n) < 1e12 {
		return strconv.FormatFloat(n, 'f', -1, 64)
	}
	return fmt.Sprintf("%g", n)
}
