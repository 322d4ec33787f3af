package metrics

import (
	"context"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Second is one per-second bucket of a run: operations completed in that
// second (all directions), their bytes and latency quantiles.
type Second struct {
	T     int64 `json:"t"`
	Ops   int64 `json:"ops"`
	Bytes int64 `json:"bytes"`
	P50Ns int64 `json:"p50_ns"`
	P99Ns int64 `json:"p99_ns"`
	MaxNs int64 `json:"max_ns"`
}

// Series collects the per-second buckets of all recorders of a run. A second
// stays open, with its histogram, until every recorder has moved past it; it
// is then reduced to a Second and its histogram released, so memory is
// bounded by the seconds an operation can span, not by run length.
type Series struct {
	// flight is the bytes of operations under way (Recorder.InFlight),
	// for progress lines only: a long download shows before it ends.
	flight  atomic.Int64
	mu      sync.Mutex
	open    map[int64]*openSecond
	current []int64 // per recorder: the second it is filling; MaxInt64 once closed
	low     int64   // the lowest of current: every second before it is final
	closed  []Second
	// drained is the first second Drain has not handed out yet.
	drained int64
	// spare holds the histograms of closed seconds for the next ones: a
	// second's histogram is tens of KiB, and allocating one a second made
	// a long run's memory creep between garbage collections.
	spare []*hdrhistogram.Histogram
	ops   int64
	bytes int64
	// The whole run per direction, merged from the recorders' seconds.
	dirs [NumOps]OpStats
}

type openSecond struct {
	hist       *hdrhistogram.Histogram
	ops, bytes int64
	max        int64
}

// secondHistogram returns an empty histogram for a second that opens.
func (s *Series) secondHistogram() *hdrhistogram.Histogram {
	if n := len(s.spare); n > 0 {
		h := s.spare[n-1]
		s.spare = s.spare[:n-1]
		return h
	}
	return newSecondHistogram()
}

// NewSeries returns an empty series.
func NewSeries() *Series { return &Series{open: map[int64]*openSecond{}} }

// NewRecorder returns a recorder whose seconds feed s. All recorders of a
// run must be created before any of them records.
func (s *Series) NewRecorder() *Recorder {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current = append(s.current, 0)
	return &Recorder{series: s, id: len(s.current) - 1, secEndNs: int64(time.Second)}
}

// Totals returns the operations and bytes flushed so far (at most about one
// second behind), with the bytes of operations under way, for progress
// lines.
func (s *Series) Totals() (ops, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ops, s.bytes + s.flight.Load()
}

// add takes a recorder's second: its latencies either as histograms per
// direction (lat) or as values (vals), with counts per direction.
func (s *Series) add(sec int64, lat *[NumOps]*hdrhistogram.Histogram, vals []opLatency, ops, bytes *[NumOps]int64, max int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var o *openSecond
	for d := range ops {
		if ops[d] == 0 && bytes[d] == 0 { // bytes alone: a long operation's share (Recorder.spread)
			continue
		}
		if o == nil {
			if o = s.open[sec]; o == nil {
				o = &openSecond{hist: s.secondHistogram()}
				s.open[sec] = o
			}
		}
		if Op(d) != Sync { // as Result.Ops
			o.ops += ops[d]
			s.ops += ops[d]
		}
		o.bytes += bytes[d]
		s.bytes += bytes[d]
		run := &s.dirs[d]
		if run.Lat == nil {
			run.Lat = NewHistogram()
		}
		if lat != nil {
			o.hist.Merge(lat[d])
			run.Lat.Merge(lat[d])
		}
		run.Ops += ops[d]
		run.Bytes += bytes[d]
	}
	for _, v := range vals {
		recordClamped(o.hist, v.ns)
		recordClamped(s.dirs[v.d].Lat, v.ns)
	}
	if o != nil && max > o.max {
		o.max = max
	}
}

// addBytes books bytes of direction d in second sec, which every recorder
// has yet to finish: part of an operation that ended later (Recorder.spread).
func (s *Series) addBytes(sec int64, d Op, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.open[sec]
	if o == nil {
		o = &openSecond{hist: s.secondHistogram()}
		s.open[sec] = o
	}
	o.bytes += bytes
	s.bytes += bytes
	s.dirs[d].Bytes += bytes
}

func (s *Series) advance(id int, next int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if next < 0 {
		next = math.MaxInt64
	}
	s.current[id] = next
	low := int64(math.MaxInt64)
	for _, c := range s.current {
		low = min(low, c)
	}
	s.low = low
	for sec, o := range s.open {
		if sec < low {
			s.closed = append(s.closed, Second{
				T: sec, Ops: o.ops, Bytes: o.bytes, MaxNs: o.max,
				P50Ns: o.hist.ValueAtQuantile(50), P99Ns: o.hist.ValueAtQuantile(99),
			})
			delete(s.open, sec)
			o.hist.Reset()
			s.spare = append(s.spare, o.hist)
		}
	}
}

// Drain hands over, in order and with empty seconds filled in, the seconds
// that every recorder has finished and that no Drain handed out before,
// and forgets them. A long run whose seconds are drained as it goes (to
// the store) keeps only the last few in memory.
func (s *Series) Drain() []Second {
	s.mu.Lock()
	defer s.mu.Unlock()
	limit := s.low
	if limit == math.MaxInt64 { // every recorder closed: up to the last second seen
		limit = s.drained
		for _, c := range s.closed {
			limit = max(limit, c.T+1)
		}
	}
	sort.Slice(s.closed, func(i, j int) bool { return s.closed[i].T < s.closed[j].T })
	var out []Second
	i := 0
	for t := s.drained; t < limit; t++ {
		if i < len(s.closed) && s.closed[i].T == t {
			out = append(out, s.closed[i])
			i++
		} else {
			out = append(out, Second{T: t})
		}
	}
	s.closed = append(s.closed[:0], s.closed[i:]...)
	s.drained = max(s.drained, limit)
	return out
}

// Final returns, without forgetting them, the seconds from from on that
// every recorder has finished (and no Drain handed out), in order, with
// empty seconds filled in: what a judge of the run so far may read.
func (s *Series) Final(from int64) []Second {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.low == math.MaxInt64 {
		return nil // the run has ended: Seconds has them
	}
	sort.Slice(s.closed, func(i, j int) bool { return s.closed[i].T < s.closed[j].T })
	var out []Second
	i := 0
	for t := max(from, s.drained); t < s.low; t++ {
		for i < len(s.closed) && s.closed[i].T < t {
			i++
		}
		if i < len(s.closed) && s.closed[i].T == t {
			out = append(out, s.closed[i])
		} else {
			out = append(out, Second{T: t})
		}
	}
	return out
}

// Seconds returns the buckets from the first second not drained to the
// last, with empty seconds filled in, once every recorder is closed.
func (s *Series) Seconds(durationSec int64) []Second {
	s.mu.Lock()
	defer s.mu.Unlock()
	sort.Slice(s.closed, func(i, j int) bool { return s.closed[i].T < s.closed[j].T })
	var out []Second
	next := s.drained
	for _, c := range s.closed {
		for ; next < c.T; next++ {
			out = append(out, Second{T: next})
		}
		out = append(out, c)
		next = c.T + 1
	}
	for ; next < durationSec; next++ {
		out = append(out, Second{T: next})
	}
	return out
}

type secondSinkKey struct{}

// secondSink is a sink and how often it is handed seconds.
type secondSink struct {
	fn    func([]Second)
	every time.Duration
}

// SinkEvery is how often a run hands its finished seconds to its sink by
// default: a store write every few seconds, not every second, on the
// machine whose disk may be the one measured.
const SinkEvery = 5 * time.Second

// WithSecondSink returns a context under which a run hands its finished
// seconds to sink as it goes (every `every`, SinkEvery when 0, from the
// driver's goroutine, never a worker's), instead of keeping them all for
// its result: the store writes them while the run goes on, and memory
// stays flat however long the run. sink must return at once: the run's
// clock and stop are watched between its calls (lab hands the seconds to
// a writer of their own).
func WithSecondSink(ctx context.Context, sink func([]Second), every time.Duration) context.Context {
	if every <= 0 {
		every = SinkEvery
	}
	return context.WithValue(ctx, secondSinkKey{}, secondSink{sink, every})
}

// SecondSink returns the sink ctx carries (nil for none) and how often
// it takes seconds.
func SecondSink(ctx context.Context) (func([]Second), time.Duration) {
	sink, ok := ctx.Value(secondSinkKey{}).(secondSink)
	if !ok {
		return nil, SinkEvery
	}
	return sink.fn, sink.every
}
