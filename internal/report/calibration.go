package report

import (
	"fmt"
	"io"
	"math"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/stats"
)

// CalibrationOf says what a calibration (a plan's baseline against
// itself) is for: the plan whose noise it measured.
type CalibrationOf struct {
	Plan, Baseline string
	// Rounds are the calibration's, PlanRounds the plan's own.
	Rounds, PlanRounds int
	// Family is how many primary comparisons the plan will make, for
	// Holm's correction.
	Family    int
	Threshold float64
}

// Calibration prints what a calibration found, per cell and metric: the
// A/A ratio, the noise of one round, what the plan's rounds can detect
// and how many rounds a difference of 5%, 10% and twice the threshold
// needs.
func Calibration(w io.Writer, rep *analysis.Report, c CalibrationOf, markdown bool) error {
	fmt.Fprintf(w, "calibration of %s: %s against itself, %d rounds (stored as experiment %s)\n\n", c.Plan, c.Baseline, c.Rounds, rep.Experiment)
	t := &Table{Header: []string{"cell", "metric", "A/A ratio [95% CI]", "noise per round",
		fmt.Sprintf("MDE at the plan's %d rounds", c.PlanRounds), "rounds for 5%", "rounds for 10%", fmt.Sprintf("rounds for %.0f%%", 100*2*c.Threshold)}}
	for _, cmp := range rep.Comparisons {
		if !cmp.Primary {
			continue
		}
		rounds := func(effect float64) string {
			n := cmp.RoundsFor(effect, c.Family)
			if n < 0 {
				return fmt.Sprintf("> %d", 100*cmp.N)
			}
			return fmt.Sprint(n)
		}
		noise := "—"
		if cmp.Method == stats.MethodRatio {
			noise = fmt.Sprintf("%.1f%%", 100*math.Expm1(cmp.RoundSD()))
		}
		t.Add(cmp.Cell, cmp.Metric, fmt.Sprintf("%.3f [%.3f, %.3f]", cmp.Ratio, cmp.CI95[0], cmp.CI95[1]), noise,
			fmt.Sprintf("%.1f%%", 100*cmp.MDEAt(c.PlanRounds, c.Family)), rounds(0.05), rounds(0.10), rounds(2*c.Threshold))
	}
	if err := t.Render(w, markdown); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nnoise per round: the spread of one round's ratio of two runs of the same thing; MDE and rounds for the plan's %d primary comparisons (Holm), threshold ±%.0f%%, 80%% probability; an A/A interval far from 1 means the order of runs matters here (a slot effect) or the machine changed during the calibration\n",
		c.Family, 100*c.Threshold)
	return nil
}
