package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/bisect"
)

// A step that measured a culprit against its parent says what it found
// against the way the whole range changed: a culprit shown to change
// the other way is refuted, not confirmed, in the text and on the page.
func TestBisectConfirmationGoesTheWayOfTheChange(t *testing.T) {
	up := analysis.RatioEstimate{Ratio: 1.15, CI95: [2]float64{1.1, 1.2}, Rounds: 6}
	step := func(ratio, lo, hi float64) analysis.BisectStep {
		return analysis.BisectStep{Step: 5, Low: "aaaaaaaaaaaa", High: "bbbbbbbbbbbb", MidIndex: -1, Confirms: true,
			Verdict: bisect.Between, Whole: &analysis.RatioEstimate{Ratio: ratio, CI95: [2]float64{lo, hi}, Rounds: 9}}
	}
	for _, c := range []struct {
		step analysis.BisectStep
		want string
	}{
		{step(1.14, 1.05, 1.24), "confirmed"},
		{step(0.9, 0.85, 0.95), "refuted"},
	} {
		v := &analysis.BisectView{ID: "b", Differ: true, Change: up, Commits: 3, Good: bisect.Commit{Hash: "aaaaaaaaaaaa"},
			Bad: bisect.Commit{Hash: "cccccccccccc"}, Steps: []analysis.BisectStep{c.step}}
		var text, page bytes.Buffer
		if err := WriteBisect(&text, v); err != nil {
			t.Fatal(err)
		}
		if err := BisectHTML(&page, v); err != nil {
			t.Fatal(err)
		}
		line := "bbbbbbbbbb on its parent"
		if !strings.Contains(text.String(), line) || !strings.Contains(text.String(), c.want) {
			t.Errorf("a step of %.2f on a change of %.2f: the text says\n%s\nwant %q", c.step.Whole.Ratio, up.Ratio, text.String(), c.want)
		}
		if !strings.Contains(page.String(), "<td>"+c.want+"</td>") {
			t.Errorf("a step of %.2f on a change of %.2f: the page lacks %q", c.step.Whole.Ratio, up.Ratio, c.want)
		}
	}
}

// A change without its interval, or without a ratio, says so: never NaN
// (an audit saw "NaN%" in a bisect step's line).
func TestChangeTextHasNoNaN(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		e    analysis.RatioEstimate
		want string
	}{
		{analysis.RatioEstimate{Ratio: 1.148, CI95: [2]float64{1.112, 1.185}}, "+14.8% [+11.2%, +18.5%]"},
		{analysis.RatioEstimate{Ratio: 1.148, CI95: [2]float64{nan, nan}}, "+14.8% (no interval yet)"},
		{analysis.RatioEstimate{Ratio: 0.9, CI95: [2]float64{0, inf}}, "-10.0% (no interval yet)"},
		{analysis.RatioEstimate{Ratio: nan, CI95: [2]float64{nan, nan}}, "not measured"},
	} {
		if got := ChangeText(c.e); got != c.want {
			t.Errorf("%+v: %q, want %q", c.e, got, c.want)
		}
	}
}
