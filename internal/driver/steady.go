package driver

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/units"
)

// Steady-state criteria, as fio names them (steadystate=iops:2%), and
// lat: every second's p99 latency.
var SteadyCriteria = []string{"iops", "iops_slope", "bw", "bw_slope", "lat", "lat_slope"}

// SteadyState ends a run once it is steady, as fio's steadystate does:
// over a rolling window of seconds (after a ramp), every second's figure
// within Limit of the window's mean (iops, bw, lat), or the slope of
// their least-squares line within Limit per second (the _slope forms).
// Limit is a share of the window's mean when Percent, else in the
// figure's unit (operations/s, bytes/s, ns).
type SteadyState struct {
	Criterion string
	Limit     float64
	Percent   bool
	Window    time.Duration
	Ramp      time.Duration
}

// ParseSteadyState reads fio's form: iops:2%, bw_slope:0.1%, lat:500.
func ParseSteadyState(s string) (SteadyState, error) {
	what, limit, ok := strings.Cut(s, ":")
	var ss SteadyState
	if !ok || !slices.Contains(SteadyCriteria, what) {
		return ss, fmt.Errorf("want CRITERION:LIMIT such as iops:2%% or bw_slope:0.1%%; criteria: %s", strings.Join(SteadyCriteria, ", "))
	}
	ss.Criterion = what
	ss.Percent = strings.HasSuffix(limit, "%")
	v, err := units.ParseFloat(strings.TrimSuffix(limit, "%"), 0, math.MaxFloat64)
	if err != nil || v <= 0 {
		return ss, fmt.Errorf("limit %q: want a number above 0, or a percentage of the window's mean such as 2%%", limit)
	}
	ss.Limit = v
	if ss.Percent {
		ss.Limit /= 100
	}
	return ss, nil
}

// String is the criterion as fio writes it.
func (s SteadyState) String() string {
	if s.Criterion == "" {
		return ""
	}
	limit := strconv.FormatFloat(s.Limit, 'g', -1, 64)
	if s.Percent {
		limit = strconv.FormatFloat(100*s.Limit, 'g', -1, 64) + "%"
	}
	return s.Criterion + ":" + limit
}

// Enabled says a criterion is set.
func (s SteadyState) Enabled() bool { return s.Criterion != "" }

// steadyJudge takes a run's seconds in order and says when the window
// last seen is steady.
type steadyJudge struct {
	SteadyState
	window []float64
	// At is the second (from the measured start) whose end made the
	// window steady; -1 until then.
	At int64
}

func newSteadyJudge(s SteadyState) *steadyJudge { return &steadyJudge{SteadyState: s, At: -1} }

// add takes the next second and says whether the run is now steady.
func (j *steadyJudge) add(sec metrics.Second) bool {
	if j.At >= 0 {
		return true
	}
	if sec.T < int64(j.Ramp/time.Second) {
		return false
	}
	var v float64
	switch strings.TrimSuffix(j.Criterion, "_slope") {
	case "iops":
		v = float64(sec.Ops)
	case "bw":
		v = float64(sec.Bytes)
	case "lat":
		v = float64(sec.P99Ns)
	}
	n := int(j.Window / time.Second)
	if j.window = append(j.window, v); len(j.window) > n {
		j.window = j.window[1:]
	}
	if len(j.window) < n {
		return false
	}
	mean := 0.0
	for _, x := range j.window {
		mean += x
	}
	mean /= float64(n)
	limit := j.Limit
	if j.Percent {
		limit *= mean
	}
	steady := true
	if strings.HasSuffix(j.Criterion, "_slope") {
		// The least-squares slope over the window, per second.
		xm := float64(n-1) / 2
		var sxy, sxx float64
		for i, y := range j.window {
			sxy += (float64(i) - xm) * (y - mean)
			sxx += (float64(i) - xm) * (float64(i) - xm)
		}
		steady = math.Abs(sxy/sxx) <= limit
	} else {
		for _, x := range j.window {
			steady = steady && math.Abs(x-mean) <= limit
		}
	}
	if steady && mean > 0 {
		j.At = sec.T + 1
	}
	return j.At >= 0
}
