package stats

import "math"

// Precondition is SNIA's steady-state rule for rounds (the Solid State
// Storage Performance Test Specification's): over the last Window rounds,
// the values lie within Range of their mean (max − min ≤ Range·mean) and
// the least-squares line through them moves less than Slope of it over
// the window (|slope|·(Window − 1) ≤ Slope·mean). Its defaults are the
// specification's: 5 rounds, 20%, 10%, at most 25 rounds.
type Precondition struct {
	Rounds int     `json:"rounds"`
	Window int     `json:"window"`
	Range  float64 `json:"range"`
	Slope  float64 `json:"slope"`
}

// DefaultPrecondition is SNIA's.
var DefaultPrecondition = Precondition{Rounds: 25, Window: 5, Range: 0.2, Slope: 0.1}

// Steady says whether the last Window of values (one per round, in
// order) are steady; false with fewer.
func (p Precondition) Steady(values []float64) bool {
	if len(values) < p.Window || p.Window < 2 {
		return false
	}
	w := values[len(values)-p.Window:]
	lo, hi, mean := math.Inf(1), math.Inf(-1), 0.0
	for _, v := range w {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
		lo, hi, mean = math.Min(lo, v), math.Max(hi, v), mean+v
	}
	mean /= float64(len(w))
	if mean <= 0 {
		return false
	}
	xm := float64(len(w)-1) / 2
	var sxy, sxx float64
	for i, v := range w {
		sxy += (float64(i) - xm) * (v - mean)
		sxx += (float64(i) - xm) * (float64(i) - xm)
	}
	return hi-lo <= p.Range*mean && math.Abs(sxy/sxx)*float64(len(w)-1) <= p.Slope*mean
}
