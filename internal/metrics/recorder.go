package metrics

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Dir is the direction of an operation; each has its own histogram.
type Dir uint8

const (
	Read Dir = iota
	Write
	Sync // fsync/fdatasync issued by the workload
	NumDirs
)

func (d Dir) String() string {
	switch d {
	case Read:
		return "read"
	case Write:
		return "write"
	case Sync:
		return "sync"
	}
	return "unknown"
}

// Clock gives monotonic nanoseconds since the start of a run. Reading it costs
// one vDSO clock read (time.Since on a monotonic base), which is the cheapest
// honest timestamp Go offers.
type Clock struct{ base time.Time }

// NewClock starts a clock at the current instant.
func NewClock() Clock { return Clock{base: time.Now()} }

// Now returns nanoseconds since the clock started.
func (c Clock) Now() int64 { return int64(time.Since(c.base)) }

// Start is the wall-clock instant the clock started.
func (c Clock) Start() time.Time { return c.base }

// Recorder aggregates the operations of one worker. It is not safe for
// concurrent use: each worker goroutine owns exactly one.
type Recorder struct {
	_      [64]byte // recorders of different workers must not share cache lines
	series *Series
	id     int

	lat   [NumDirs]*hdrhistogram.Histogram
	ops   [NumDirs]int64
	bytes [NumDirs]int64

	errors   int64
	firstErr error

	// The second currently being filled, flushed to series when an
	// operation completes in a later second.
	sec      int64
	secHist  *hdrhistogram.Histogram
	secOps   int64
	secBytes int64
	secMax   int64
	_        [64]byte
}

// Record adds one completed operation: its direction, bytes moved, the
// completion time (Clock.Now) and its latency, both in nanoseconds.
func (r *Recorder) Record(d Dir, sizeBytes, endNs, latencyNs int64) {
	if s := endNs / int64(time.Second); s != r.sec {
		r.flush(s)
	}
	h := r.lat[d]
	if h == nil {
		h = NewHistogram()
		r.lat[d] = h
	}
	recordClamped(h, latencyNs)
	recordClamped(r.secHist, latencyNs)
	r.ops[d]++
	r.bytes[d] += sizeBytes
	r.secOps++
	r.secBytes += sizeBytes
	if latencyNs > r.secMax {
		r.secMax = latencyNs
	}
}

// Error counts one failed operation; the first error is kept for the report.
func (r *Recorder) Error(err error) {
	r.errors++
	if r.firstErr == nil {
		r.firstErr = err
	}
}

// Errors is the number of failed operations so far.
func (r *Recorder) Errors() int64 { return r.errors }

// Close flushes the open second; the recorder must not be used afterwards
// except by Merge.
func (r *Recorder) Close() { r.flush(-1) }

func (r *Recorder) flush(next int64) {
	if r.secOps > 0 {
		r.series.add(r.sec, r.secHist, r.secOps, r.secBytes, r.secMax)
		r.secHist.Reset()
		r.secOps, r.secBytes, r.secMax = 0, 0, 0
	}
	r.series.advance(r.id, next)
	r.sec = next
}
