package stats

import (
	"math"
	"strings"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestSummarizeKnownValues(t *testing.T) {
	t.Parallel()
	// 10 values: the 95% order-statistic interval of the median is
	// [x(2), x(9)] (binomial, n=10), as benchmath and benchstat compute it.
	s := Summarize([]float64{5, 1, 3, 2, 4, 9, 7, 8, 6, 10})
	if s.N != 10 || s.Median != 5.5 || s.CI95 == nil || s.CI95[0] != 2 || s.CI95[1] != 9 {
		t.Fatalf("summary %+v ci %v", s, s.CI95)
	}
	if s.Mean != 5.5 || !near(s.SD, 3.02765, 1e-4) || !near(s.CV, 3.02765/5.5, 1e-4) {
		t.Fatalf("mean %v sd %v cv %v", s.Mean, s.SD, s.CV)
	}
	if s.Min != 1 || s.Max != 10 {
		t.Fatalf("min %v max %v", s.Min, s.Max)
	}
}

func TestSummarizeTooFewForCI(t *testing.T) {
	t.Parallel()
	if s := Summarize([]float64{1, 2, 3, 4, 5}); s.CI95 != nil || s.Median != 3 {
		t.Fatalf("5 values: %+v, want median 3 and no 95%% CI", s)
	}
	if s := Summarize([]float64{1, 2, 3, 4, 5, 6}); s.CI95 == nil || s.CI95[0] != 1 || s.CI95[1] != 6 {
		t.Fatalf("6 values: CI %v, want [1 6]", s.CI95)
	}
	if s := Summarize(nil); s.N != 0 {
		t.Fatalf("empty: %+v", s)
	}
}

func TestKendall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		values []float64
		tau, p float64
	}{
		// All 120 orders of 5 values: 1 has 0 inversions, 4 have 1.
		{name: "increasing", values: []float64{1, 2, 3, 4, 5}, tau: 1, p: 2.0 / 120},
		{name: "decreasing", values: []float64{5, 4, 3, 2, 1}, tau: -1, p: 2.0 / 120},
		{name: "one swap", values: []float64{2, 1, 3, 4, 5}, tau: 0.8, p: 2 * 5.0 / 120},
		{name: "no trend", values: []float64{3, 1, 5, 2, 4}, tau: 0.2, p: 0.8167},
	}
	for _, tc := range tests {
		got := Kendall(tc.values)
		if !near(got.Tau, tc.tau, 1e-9) || !near(got.P, tc.p, 1e-3) {
			t.Errorf("%s: Kendall = %+v, want tau %v p %v", tc.name, got, tc.tau, tc.p)
		}
	}
	// 20 values with a strong trend: normal approximation for ties.
	var v []float64
	for i := 0; i < 20; i++ {
		v = append(v, float64(i/2)) // pairs tie
	}
	if got := Kendall(v); got.Tau < 0.9 || got.P > 1e-4 {
		t.Errorf("tied increasing: %+v", got)
	}
}

func TestModifiedZ(t *testing.T) {
	t.Parallel()
	values := []float64{100, 2, 3, 4, 1}
	// median 3, absolute deviations {97,1,0,1,2} -> MAD 1.
	if z := ModifiedZ(100, values); !near(z, 0.6745*97, 1e-9) {
		t.Fatalf("z = %v", z)
	}
	if z := ModifiedZ(3, values); z != 0 {
		t.Fatalf("z of the median = %v", z)
	}
	if z := ModifiedZ(9, []float64{9, 5, 5, 5}); !math.IsInf(z, 1) {
		t.Fatalf("zero MAD: z = %v, want +Inf", z)
	}
}

func codes(ws []Warning) string {
	var c []string
	for _, w := range ws {
		c = append(c, w.Code)
	}
	return strings.Join(c, ",")
}

func TestDiagnose(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		values []float64
		want   string
	}{
		{name: "steady", values: []float64{100, 101, 99, 100, 102, 100}, want: ""},
		{name: "cold first run", values: []float64{40, 100, 101, 99, 100, 102}, want: "high-cv,first-run-outlier"},
		{name: "drift", values: []float64{120, 100, 80, 60, 45, 30}, want: "high-cv,trend"},
		{name: "few", values: []float64{100, 101, 99}, want: "too-few-runs"},
	}
	for _, tc := range tests {
		if got := codes(Diagnose("x", tc.values, nil, "advice")); got != tc.want {
			t.Errorf("%s: warnings %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestMinDetectable(t *testing.T) {
	t.Parallel()
	if got := MinDetectable(0.30, 10); !near(got, 2.8*0.30*math.Sqrt(0.2), 1e-12) {
		t.Fatalf("MDE = %v", got)
	}
}

func TestEarlyRuns(t *testing.T) {
	t.Parallel()
	// A variant 1+e^-k slower over its first runs, then steady with noise.
	warm := []float64{200, 137, 113, 104.5, 101, 100.2, 99, 101, 100, 98.5, 100.5, 99.5}
	if k := EarlyRuns(warm); k != 4 { // 1+e^-3 is still 4.5% above a 1% noise
		t.Errorf("early runs %d of %v, want 4", k, warm)
	}
	if k := EarlyRuns([]float64{100, 99, 101, 100.5, 98.5, 100.2, 99.8}); k != 0 {
		t.Errorf("a steady series: %d early runs", k)
	}
	// A slow drift is a trend, not a warm-up: no leading outliers.
	drift := []float64{100, 101, 102, 103, 104, 105, 106, 107, 108, 109}
	if k := EarlyRuns(drift); k != 0 {
		t.Errorf("a drift: %d early runs", k)
	}
}
