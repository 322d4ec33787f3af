package analysis

import (
	"testing"

	"github.com/iolab/iolab/internal/stats"
)

// The knee is where response time starts to grow faster than the rate it
// buys: on a curve flat up to 70% that climbs at 80% and explodes at 90%,
// the last point before the climb steepens; none on a flat curve or one
// of fewer than three paced points; the flat-out point takes no part.
func TestKneeOfACurve(t *testing.T) {
	t.Parallel()
	pt := func(load string, rate, p99 float64) CurvePoint {
		return CurvePoint{Load: load, Rate: stats.Summary{N: 6, Median: rate}, P99: stats.Summary{N: 6, Median: p99}}
	}
	rising := []CurvePoint{pt("10%", 100, 1e6), pt("50%", 500, 1.1e6), pt("70%", 700, 1.3e6), pt("80%", 800, 2e6),
		pt("90%", 900, 5e7), pt("max", 1000, 1e6)}
	if got := knee(rising); got != "80%" {
		t.Errorf("knee of a rising curve: %q, want 80%%", got)
	}
	flat := []CurvePoint{pt("10%", 100, 1e6), pt("50%", 500, 1e6), pt("90%", 900, 1e6)}
	if got := knee(flat); got != "" {
		t.Errorf("knee of a flat curve: %q", got)
	}
	if got := knee(rising[3:]); got != "" {
		t.Errorf("knee of two paced points: %q", got)
	}
}
