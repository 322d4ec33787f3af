package httpload

import (
	"testing"
	"time"
)

// A search's paced run of a runtime is lengthened to hold the operations
// its objective's percentile needs, at most MaxLengthened times as long as
// asked; a run of a count, the user's, is not.
func TestAtLeastLengthensRunsOfARuntime(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rate    float64
		runtime time.Duration
		count   int64
		changed bool
		want    time.Duration
	}{
		{100, time.Second, 0, true, 10 * time.Second},   // 1000 requests at 100/s
		{5, 2 * time.Second, 0, true, 20 * time.Second}, // 200 s needed: 10x at most
		{1000, 2 * time.Second, 0, false, 2 * time.Second},
		{100, 0, 8, false, 0},
	} {
		o := &Flags{Job: DefaultOptions()}
		o.Job.Rate, o.Job.Runtime, o.Job.Count = c.rate, c.runtime, c.count
		if got := o.AtLeast(1000); got != c.changed || o.Job.Runtime != c.want || o.Job.Count != c.count {
			t.Errorf("%+v: changed %v, runtime %v, count %d", c, got, o.Job.Runtime, o.Job.Count)
		}
	}
}
