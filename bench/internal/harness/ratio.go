package harness

import (
	"fmt"

	"github.com/iolab/iolab/internal/stats"
)

// MedianRatio formats the median of per-pair ratios with its 95% CI, as the
// benches print it; fewer than 6 pairs have no 95% interval of the median.
func MedianRatio(ratios []float64) string {
	sum := stats.Summarize(ratios)
	if sum.CI95 == nil {
		return fmt.Sprintf("%.3f (fewer than 6 pairs: no CI)", sum.Median)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f]", sum.Median, sum.CI95[0], sum.CI95[1])
}
