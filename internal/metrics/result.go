package metrics

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// DirStats is the aggregate of one direction over a whole run.
type DirStats struct {
	Ops   int64
	Bytes int64
	Lat   *hdrhistogram.Histogram // nil when the direction saw no operation
}

// Result is everything measured in one run.
type Result struct {
	Start    time.Time
	Duration time.Duration
	Dirs     [NumDirs]DirStats
	Errors   int64
	// FirstError is the message of the first failed operation, if any.
	FirstError string
	Series     []Second
	CPUUserS   float64
	CPUSysS    float64
	// TimingOverheadNs is the measured cost of timing and recording one
	// operation (two clock reads and histogram updates).
	TimingOverheadNs float64
	// Warnings raised by the workload during the run (e.g. O_DIRECT
	// fallback), as codes understood by the report.
	Notes []Note
	// Extra holds figures of workloads that are not operation streams,
	// such as a command's wall_s, user_s and max_rss_bytes.
	Extra map[string]float64
}

// Note is a fact the workload observed that the summary should warn about.
type Note struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Ops is the number of operations of all directions.
func (r *Result) Ops() int64 {
	var n int64
	for _, d := range r.Dirs {
		n += d.Ops
	}
	return n
}

// Bytes is the number of bytes moved in all directions.
func (r *Result) Bytes() int64 {
	var n int64
	for _, d := range r.Dirs {
		n += d.Bytes
	}
	return n
}

// PerSecond divides n by the run's duration.
func (r *Result) PerSecond(n int64) float64 {
	if r.Duration <= 0 {
		return 0
	}
	return float64(n) / r.Duration.Seconds()
}

// Merge combines closed recorders into one result. Histograms are merged
// exactly; the series must be the one the recorders were created from.
func Merge(recs []*Recorder, series *Series, start time.Time, duration time.Duration) *Result {
	res := &Result{Start: start, Duration: duration}
	series.mu.Lock()
	res.Dirs = series.dirs
	series.mu.Unlock()
	for _, rec := range recs {
		res.Errors += rec.errors
		if res.FirstError == "" && rec.firstErr != nil {
			res.FirstError = rec.firstErr.Error()
		}
	}
	secs := int64((duration + time.Second - 1) / time.Second)
	res.Series = series.Seconds(secs)
	return res
}
