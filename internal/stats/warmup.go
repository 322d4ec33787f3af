package stats

import (
	"math"
	"sort"
)

// SkipWarmup leaves out the rounds at the start of a comparison that were
// still warming up — one side alone slower or faster at first (a fresh
// build's cold caches), which the shared warm-up rounds did not absorb —
// and returns the rest with how many paired rounds it left out.
//
// The cut is MSER (White 1997, the marginal standard error rule of
// simulation output analysis): over the per-round log ratios in round
// order (pairing cancels drift both sides share), the k that minimises
// the standard error of the mean of what is left, sum((x-mean)²)/(n-k)²,
// for k up to a third of the rounds. A cut is kept only when what it
// leaves out lies beyond the rest — its mean more than warmupZ standard
// errors from the rest's — so a stationary series, whose start only
// happens to be on one side, is left whole.
func SkipWarmup(base, variant []Obs) (b, v []Obs, k int) {
	ps := logRatios(base, variant)
	if len(ps) < 2*MinPairs {
		return base, variant, 0
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].round < ps[j].round })
	d := make([]float64, len(ps))
	for i, p := range ps {
		d[i] = p.d
	}
	k = mser(d, len(d)/3)
	if k == 0 || !apart(d[:k], d[k:]) {
		return base, variant, 0
	}
	// The round the cut fell on is as likely still warming up as not: a
	// decay that has fallen under the noise still biases the mean of
	// what is left, so one more round goes.
	k = min(k+1, len(d)/3)
	first := ps[k].round
	keep := func(obs []Obs) []Obs {
		var out []Obs
		for _, o := range obs {
			if o.Round >= first {
				out = append(out, o)
			}
		}
		return out
	}
	return keep(base), keep(variant), k
}

// roundRatio is one round's log ratio of the variant's run to the
// baseline's.
type roundRatio struct {
	round int
	d     float64
}

// logRatios pairs the runs of each round (values not finite or not
// positive left out: a zero cannot be a ratio), in the variant's order.
func logRatios(base, variant []Obs) []roundRatio {
	byRound := map[int]float64{}
	for _, o := range base {
		if finite(o.Value) && o.Value > 0 {
			byRound[o.Round] = o.Value
		}
	}
	var out []roundRatio
	for _, o := range variant {
		if b, ok := byRound[o.Round]; ok && finite(o.Value) && o.Value > 0 {
			out = append(out, roundRatio{o.Round, math.Log(o.Value / b)})
		}
	}
	return out
}

// mser is the truncation, at most most, that minimises
// sum((x-mean)²)/(n-k)² over what is left.
func mser(x []float64, most int) int {
	best, bestK := math.Inf(1), 0
	// Suffix sums, from the end, give every candidate in one pass.
	var sum, sumSq float64
	stat := make([]float64, len(x))
	for i := len(x) - 1; i >= 0; i-- {
		sum += x[i]
		sumSq += x[i] * x[i]
		m := float64(len(x) - i)
		stat[i] = (sumSq - sum*sum/m) / (m * m)
	}
	for k := 0; k <= most; k++ {
		if stat[k] < best {
			best, bestK = stat[k], k
		}
	}
	return bestK
}

// warmupZ is how many standard errors a prefix must lie from the rest to
// be left out as warm-up.
const warmupZ = 3

// apart says the mean of head lies more than warmupZ standard errors (of
// a mean of len(head) values like those of rest) from rest's mean.
func apart(head, rest []float64) bool {
	m := mean(rest)
	var ss float64
	for _, x := range rest {
		ss += (x - m) * (x - m)
	}
	sd := math.Sqrt(ss / float64(len(rest)-1))
	return math.Abs(mean(head)-m) > warmupZ*sd/math.Sqrt(float64(len(head)))
}
