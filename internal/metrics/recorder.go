package metrics

import (
	"sort"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Op is the kind of an operation; each has its own histograms and counts.
type Op uint8

// File and block I/O directions, then object operations.
const (
	Read Op = iota
	Write
	Sync // fsync/fdatasync issued by the workload
	Put
	Get
	Head
	List
	Delete
	Multipart // a multipart upload, from create to complete
	Copy
	Upload   // an HTTP request that sends a body
	Download // an HTTP request that receives one
	Open     // opening a file (a video frame)
	Close    // closing it
	Trim     // discarding a block's data (fio's trim: BLKDISCARD, a punched hole)
	NumOps
)

var opNames = [NumOps]string{"read", "write", "sync", "put", "get", "head", "list", "delete", "multipart", "copy",
	"upload", "download", "open", "close", "trim"}

func (d Op) String() string {
	if d < NumOps {
		return opNames[d]
	}
	return "unknown"
}

// ParseOp is the inverse of Op.String.
func ParseOp(name string) (Op, bool) {
	for i, n := range opNames {
		if n == name {
			return Op(i), true
		}
	}
	return 0, false
}

// Clock gives monotonic nanoseconds since the start of a run. Reading it costs
// one vDSO clock read (time.Since on a monotonic base), which is the cheapest
// honest timestamp Go offers.
type Clock struct{ base, began time.Time }

// NewClock starts a clock at the current instant.
func NewClock() Clock { t := time.Now(); return Clock{base: t, began: t} }

// NewClockAt is a clock whose zero is t, started now: before t, Now is
// negative.
func NewClockAt(t time.Time) Clock { return Clock{base: t, began: time.Now()} }

// Began is the reading at which the clock was started: when a run's
// workers were let go, before its ramp (negative with one). A paced run's
// schedule begins there, whenever its first worker gets to ask for it.
func (c Clock) Began() int64 { return int64(c.began.Sub(c.base)) }

// Now returns nanoseconds since the clock started.
func (c Clock) Now() int64 { return int64(time.Since(c.base)) }

// Start is the wall-clock instant the clock started.
func (c Clock) Start() time.Time { return c.base }

// Recorder aggregates the operations of one worker. It is not safe for
// concurrent use: each worker goroutine owns exactly one.
//
// Each operation is recorded once, into the histogram of the current second
// for its direction; when an operation completes in a later second, the
// closed second is handed to the Series, which merges it into the run's
// histograms and the per-second bucket. Recording one value per operation
// keeps the hot path at a single histogram update.
type Recorder struct {
	_      [64]byte // recorders of different workers must not share cache lines
	series *Series
	id     int

	errors   int64
	firstErr error
	opErrors [NumOps]int64
	codes    map[string]int64 // "put:SlowDown" -> count
	ttfb     [NumOps]*hdrhistogram.Histogram
	response [NumOps]*hdrhistogram.Histogram
	// startLag is how late each paced operation actually started, from
	// its place on the schedule, whatever made it late (a worker busy
	// with the operations before, or one that woke late or waited for a
	// CPU); late counts those past LateAfter, ownLate and ownDelayNs the
	// generator's own part (RecordPaced).
	startLag   [NumOps]*hdrhistogram.Histogram
	late       int64 // paced operations that started late
	ownLate    int64 // of them, those late by the generator's own delay
	ownDelayNs int64 // the generator's own delay, over all paced operations
	paced      bool
	// joined is when the worker joined the run (Joined): free from then,
	// until its first paced start; asked, once it asked for one.
	joined int64
	asked  bool
	// busy is the worker's operations before the one recorded last
	// (busyHistory), whether paced or not: an upload's download, a sync.
	busy    busyHistory
	lastEnd int64 // the operation recorded last: its end and latency
	lastNs  int64

	sec      int64 // the second being filled
	secEndNs int64 // where it ends: a comparison per op, not a division
	secLat   [NumOps]*hdrhistogram.Histogram
	secOps   [NumOps]int64
	secBytes [NumOps]int64
	secMax   int64
	// The second's first latencies are kept as values (4 KiB): a worker that
	// completes few operations a second — an object store client with many
	// connections — hands them over one by one, where merging its
	// histograms would walk every bucket up to their largest value. A
	// busier worker spills them into secLat and is merged.
	secVals [secValues]opLatency
	secN    int // values kept; secValues+1 once spilled
	_       [64]byte
	// ramping says the operation recorded last ended before the clock's
	// zero, so its TTFB is not measured either.
	ramping bool
	// lat, when set, writes every measured operation to a latency log.
	lat *latWriter
}

// secValues is how many latencies a second keeps as values before spilling.
const secValues = 256

type opLatency struct {
	d  Op
	ns int64
}

// Record adds one completed operation: its direction, bytes moved, the
// completion time (Clock.Now) and its latency, both in nanoseconds.
func (r *Recorder) Record(d Op, sizeBytes, endNs, latencyNs int64) {
	// An operation that ended before the clock's zero ended during the
	// ramp (fio's ramp_time): it ran, and is not measured.
	r.lastEnd, r.lastNs = endNs, latencyNs
	r.busy.next(endNs-latencyNs, latencyNs)
	if r.ramping = endNs < 0; r.ramping {
		return
	}
	booked := sizeBytes // of its bytes, those its last second books
	if endNs >= r.secEndNs && sizeBytes > 0 && endNs-latencyNs < endNs/int64(time.Second)*int64(time.Second) {
		// It began in an earlier second: its bytes moved over all of them.
		booked = r.spread(d, sizeBytes, endNs, latencyNs)
	}
	if endNs >= r.secEndNs || endNs < r.secEndNs-int64(time.Second) {
		r.flush(endNs / int64(time.Second))
	}
	if r.secN < secValues {
		r.secVals[r.secN] = opLatency{d, latencyNs}
		r.secN++
	} else {
		if r.secN == secValues {
			r.spill()
		}
		recordClamped(r.secHist(d), latencyNs)
	}
	r.secOps[d]++
	r.secBytes[d] += booked
	if latencyNs > r.secMax {
		r.secMax = latencyNs
	}
	if r.lat != nil {
		r.lat.add(d, endNs, latencyNs, sizeBytes)
	}
}

// spread books the bytes of an operation that ended in a later second
// than the one being filled over the seconds it lasted, in proportion to
// its time in each (as fio's bandwidth log does), and returns the share of
// its last second, where the operation itself counts. A part before the
// second being filled (already handed over) is booked in that second.
func (r *Recorder) spread(d Op, sizeBytes, endNs, latencyNs int64) int64 {
	const sec = int64(time.Second)
	startNs, last := endNs-latencyNs, endNs/sec
	left := sizeBytes
	for t := r.sec; t < last && left > 0; t++ {
		from, to := max(startNs, t*sec), (t+1)*sec
		if t == r.sec {
			from = startNs // a part before it is booked in it
		}
		share := min(left, int64(float64(sizeBytes)*float64(to-from)/float64(latencyNs)))
		if share <= 0 {
			continue
		}
		left -= share
		if t == r.sec {
			r.secBytes[d] += share
		} else {
			r.series.addBytes(t, d, share)
		}
	}
	return left
}

func (r *Recorder) secHist(d Op) *hdrhistogram.Histogram {
	h := r.secLat[d]
	if h == nil {
		h = NewHistogram()
		r.secLat[d] = h
	}
	return h
}

// spill moves the second's kept values into its histograms.
func (r *Recorder) spill() {
	for _, v := range r.secVals[:r.secN] {
		recordClamped(r.secHist(v.d), v.ns)
	}
	r.secN = secValues + 1
}

// InFlight adds n bytes moved by an operation still under way (n < 0 takes
// them back when it ends, as Record then counts them), for progress
// lines alone: no figure of the run reads it.
func (r *Recorder) InFlight(n int64) { r.series.flight.Add(n) }

// Error counts one failed operation; the first error is kept for the report.
func (r *Recorder) Error(err error) {
	r.errors++
	if r.firstErr == nil {
		r.firstErr = err
	}
}

// OpError counts one failed operation of kind op, by its error code (an S3
// error code, an HTTP status, an errno name).
func (r *Recorder) OpError(op Op, code string, err error) {
	r.Error(err)
	r.opErrors[op]++
	if r.codes == nil {
		r.codes = map[string]int64{}
	}
	r.codes[op.String()+":"+code]++
}

// RecordTTFB adds the time to the first byte of a response of kind op.
func (r *Recorder) RecordTTFB(op Op, ttfbNs int64) {
	if r.ramping { // the operation recorded last ended during the ramp
		return
	}
	h := r.ttfb[op]
	if h == nil {
		h = NewHistogram()
		r.ttfb[op] = h
	}
	recordClamped(h, ttfbNs)
}

// RecordPaced completes the operation of kind op just recorded, which
// was due at dueNs on a paced schedule and whose worker asked for its
// slot at askedNs (Clock readings): its response time, from its due time
// to its end (what a client would have waited: coordinated omission if
// left out), and how late it started. Late past LateAfter counts as a
// late start whatever made it late; the part of the lateness after the
// later of its due time and when its worker was last busy is the
// generator's own delay — its worker was free and was not running (it
// woke late, waited for a CPU, was slow to get going), where lateness up
// to the asked time is a worker busy with the operations before. A
// worker's first start had no operations before: it was free from when
// it joined (Joined).
func (r *Recorder) RecordPaced(op Op, dueNs, askedNs int64) {
	start := r.lastEnd - r.lastNs
	busy := askedNs
	if !r.asked {
		busy, r.asked = min(r.joined, askedNs), true
	}
	// A worker that runs one operation at a time knows exactly how much of
	// the lateness its operations before took (the target's): the rest was
	// iolab's — a generator that stalled for 200 ms has the starts it
	// catches up on after late by its stall, though it asked for them
	// after it; one with several in flight knows the asked time alone.
	own := max(start-max(dueNs, busy), 0)
	if busy > dueNs { // asked for late: its lateness before the ask is weighed
		from := max(dueNs, r.joined)
		own = max(own, start-from-r.busy.since(from, start))
	}
	if r.ramping {
		return
	}
	r.paced = true
	h := r.response[op]
	if h == nil {
		h = NewHistogram()
		r.response[op] = h
	}
	recordClamped(h, r.lastEnd-dueNs)
	lag := max(start-dueNs, 0)
	if r.startLag[op] == nil {
		r.startLag[op] = NewHistogram()
	}
	recordClamped(r.startLag[op], lag)
	if lag > int64(LateAfter) {
		r.late++
	}
	r.ownDelayNs += own
	if own > int64(LateAfter) {
		r.ownLate++
	}
}

// Joined says the worker joined the run at the clock reading at — when
// the run began, or when the schedule called it in from a reserve: free
// from then (RecordPaced).
func (r *Recorder) Joined(at int64) { r.joined = at }

// LateAfter is how long after its time on the schedule an operation may
// start and not be counted late (fio's and wrk2's schedules are kept to
// the millisecond).
const LateAfter = time.Millisecond

// Errors is the number of failed operations so far.
func (r *Recorder) Errors() int64 { return r.errors }

// Close flushes the open second; the recorder must not be used afterwards
// except by Merge.
func (r *Recorder) Close() {
	r.flush(-1)
	if r.lat != nil {
		r.lat.flush()
	}
}

func (r *Recorder) flush(next int64) {
	if r.secN <= secValues {
		r.series.add(r.sec, nil, r.secVals[:r.secN], &r.secOps, &r.secBytes, r.secMax)
	} else {
		r.series.add(r.sec, &r.secLat, nil, &r.secOps, &r.secBytes, r.secMax)
		for d := range r.secLat {
			if r.secOps[d] > 0 {
				r.secLat[d].Reset()
			}
		}
	}
	r.secN = 0
	r.secOps, r.secBytes, r.secMax = [NumOps]int64{}, [NumOps]int64{}, 0
	r.series.advance(r.id, next)
	r.sec = next
	r.secEndNs = (next + 1) * int64(time.Second)
}

// busyHistory is a worker's operations and the time they took, while it
// runs one at a time: how much of an interval its worker spent in
// operations — the target's time — for the lateness of a start it could
// not make sooner. Bounded: once full, neighbours are merged in pairs, so
// the older an interval, the coarser what is known of it (busy evenly
// over a merged span).
type busyHistory struct {
	spans   [busyKept]busySpan
	n       int   // spans kept
	total   int64 // the time of every operation added
	overlap bool  // operations overlapped: the worker has several in flight
	// last is the operation recorded last, added when the next one is:
	// the lateness of a start is weighed against what came before it.
	last    busySpan
	hasLast bool
}

// next records an operation that ran from start for ns, after adding
// the one before it.
func (h *busyHistory) next(start, ns int64) {
	if h.hasLast {
		h.add(h.last.start, h.last.busy)
	}
	h.last, h.hasLast = busySpan{start: start, busy: ns}, true
}

// busySpan is a stretch of the worker's time, from the start of its
// first operation to the end of its last: how much of it the operations
// took, and the busy time before it.
type busySpan struct{ start, end, busy, before int64 }

// busyKept is how many spans a busyHistory keeps.
const busyKept = 64

// add records an operation that ran from start for ns.
func (h *busyHistory) add(start, ns int64) {
	if h.overlap {
		return
	}
	if h.n > 0 && start < h.spans[h.n-1].end {
		h.overlap = true
		return
	}
	if h.n == busyKept {
		for i := range busyKept / 2 {
			a, b := h.spans[2*i], h.spans[2*i+1]
			h.spans[i] = busySpan{start: a.start, end: b.end, busy: a.busy + b.busy, before: a.before}
		}
		h.n = busyKept / 2
	}
	h.spans[h.n] = busySpan{start: start, end: start + ns, busy: ns, before: h.total}
	h.n++
	h.total += ns
}

// since is how long the worker was busy with operations from t on; with
// operations in flight together, it cannot say (every moment since t, up
// to now).
func (h *busyHistory) since(t, now int64) int64 {
	if h.overlap {
		return max(now-t, 0)
	}
	// The last span that starts at or before t.
	i := sort.Search(h.n, func(k int) bool { return h.spans[k].start > t }) - 1
	if i < 0 {
		return h.total
	}
	sp := h.spans[i]
	within := int64(0) // its busy time from t on
	if t < sp.end {
		within = int64(float64(sp.busy) * float64(sp.end-t) / float64(sp.end-sp.start))
	}
	return h.total - sp.before - sp.busy + within
}
