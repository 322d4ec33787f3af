package driver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/metrics"
)

// settling is a target whose speed settles after 3 s, climbing until
// then: each worker's operations end on a schedule of its own (so a late
// wake-up does not change how many end in a second), 40, 25 and 15 ms
// apart in the first three seconds, then 10 ms apart.
func settling(_ context.Context, _ int, clock metrics.Clock, stop *Stop, rec *metrics.Recorder) error {
	next := clock.Now()
	for !stop.Stopped() {
		period := 10 * time.Millisecond
		switch {
		case next < int64(time.Second):
			period = 40 * time.Millisecond
		case next < int64(2*time.Second):
			period = 25 * time.Millisecond
		case next < int64(3*time.Second):
			period = 15 * time.Millisecond
		}
		next += int64(period)
		SleepUntil(clock, next, stop)
		rec.Record(metrics.Read, 4096, next, int64(period)) // ended on its schedule
	}
	return nil
}

// A run with fio's steadystate ends once its window is steady — on a
// target that settles after 3 s, a 2 s window of IOPS within 10% is
// first steady 2 s after it settled, far before the 30 s runtime — and
// says when; a criterion it never meets lets it go its whole runtime,
// and says so.
func TestSteadyStateEndsTheRunWhenSteady(t *testing.T) {
	t.Parallel()
	ss, err := ParseSteadyState("iops:10%")
	if err != nil {
		t.Fatal(err)
	}
	ss.Window = 2 * time.Second
	res, err := Run(context.Background(), Options{Workers: 4, Runtime: 30 * time.Second, Steady: ss}, settling)
	if err != nil {
		t.Fatal(err)
	}
	if at := res.Extra["steady_at_s"]; res.Extra["steady"] != 1 || at < 5 || at > 7 || res.Duration > 9*time.Second {
		t.Errorf("steady %v at %vs, the run lasted %v; want steady at 5-7 s, and the run ended then", res.Extra["steady"], at, res.Duration)
	}
	// Nothing this run does holds IOPS within one operation a second.
	ss, _ = ParseSteadyState("iops_slope:0.001")
	ss.Window = 2 * time.Second
	res, err = Run(context.Background(), Options{Workers: 1, Runtime: 3 * time.Second, Steady: ss}, busy)
	if err != nil {
		t.Fatal(err)
	}
	if _, at := res.Extra["steady_at_s"]; res.Extra["steady"] != 0 || at || res.Duration < 3*time.Second {
		t.Errorf("an unmet criterion: steady %v (at %v), the run lasted %v", res.Extra["steady"], at, res.Duration)
	}
}

// The judge reads fio's criteria: within a share of the mean, or within
// an absolute limit; a slope per second.
func TestSteadyJudge(t *testing.T) {
	t.Parallel()
	feed := func(spec string, values ...float64) int64 {
		ss, err := ParseSteadyState(spec)
		if err != nil {
			t.Fatal(err)
		}
		ss.Window = 3 * time.Second
		j := newSteadyJudge(ss)
		for i, v := range values {
			j.add(metrics.Second{T: int64(i), Ops: int64(v), Bytes: int64(v) * 4096, P99Ns: int64(v)})
		}
		return j.At
	}
	for _, c := range []struct {
		spec   string
		values []float64
		want   int64
	}{
		{"iops:5%", []float64{10, 50, 100, 102, 98, 101}, 5},    // steady once 100, 102, 98 are in the window
		{"iops:1%", []float64{10, 50, 100, 102, 98, 101}, -1},   // 102 is 2% off the mean
		{"bw:3", []float64{100, 104, 100, 101, 102}, -1},        // in bytes/s: 4096 x the ops, far more than 3
		{"iops:3", []float64{100, 104, 100, 101, 102}, 3},       // within 3 ops/s of their mean, 101.3
		{"iops_slope:1", []float64{100, 110, 120, 121, 122}, 5}, // the last three rise 1 a second
		{"iops_slope:0.5", []float64{100, 110, 120, 121, 122}, -1},
		{"lat:10%", []float64{1000, 2000, 1000, 1050, 1000}, 5},
	} {
		if got := feed(c.spec, c.values...); got != c.want {
			t.Errorf("%s over %v: steady at %d, want %d", c.spec, c.values, got, c.want)
		}
	}
	for _, bad := range []string{"iops", "speed:2%", "iops:-1", "iops:x%", "iops:0"} {
		if _, err := ParseSteadyState(bad); err == nil || !strings.Contains(err.Error(), "want") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
