package metrics

import (
	"maps"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// OpStats is the aggregate of one direction over a whole run.
type OpStats struct {
	Ops    int64
	Bytes  int64
	Errors int64
	Lat    *hdrhistogram.Histogram // nil when the kind saw no operation
	TTFB   *hdrhistogram.Histogram // time to first byte, for operations that have one
	// Response is the time from each operation's intended start — its
	// place on a paced schedule — to its end, where Lat is its service
	// time, from its actual start: a late start is queueing a client
	// would have seen (coordinated omission, as wrk2 names it). Nil for
	// an unpaced run.
	Response *hdrhistogram.Histogram
	// StartLag is how late each paced operation actually started, from
	// its intended start, whatever made it late: what Response counts
	// and Lat does not. Nil for an unpaced run.
	StartLag *hdrhistogram.Histogram
	// ActiveS is the time this kind's rates divide by, when the kinds of
	// a run took turns (an upload, then its download) rather than running
	// side by side: the seconds spent in this kind, per worker. 0 means
	// the run's duration.
	ActiveS float64
}

// Result is everything measured in one run.
type Result struct {
	Start    time.Time
	Duration time.Duration
	ByOp     [NumOps]OpStats
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
	// ErrorCodes counts failed operations by "op:code" (put:SlowDown,
	// get:503, write:ENOSPC).
	ErrorCodes map[string]int64
	// Frames is the per-frame series of a frame test: one entry per frame,
	// so bounded by the frames the run was asked for.
	Frames []FrameTiming
	// Extra holds figures of workloads that are not operation streams,
	// such as a command's wall_s, user_s and max_rss_bytes.
	Extra map[string]float64
	// ServerSeries is the watched server's seconds (a plan variant's), when
	// loaded with the series.
	ServerSeries []ServerSecond
	// EnvSeries is the machine's seconds during the run (envinfo's
	// per-second watch), when loaded with the series.
	EnvSeries []EnvSecond
	// Profiles are the profiles taken of the server during the run, by
	// kind (go_pprof, perf), gzipped pprof; stored, not loaded with it.
	Profiles map[string][]byte
	// Derived, when set, are the run's metrics as RunMetrics computed them
	// when the run was stored: a run read without its measurements (a
	// history's summary) has nothing else to compute them from, and
	// RunMetrics returns them.
	Derived map[string]float64
}

// EnvSecond is one second of the machine during a run: the share of it
// in which some task waited for a CPU, for memory, for I/O (PSI), and the
// one-minute load average at its end.
type EnvSecond struct {
	T           int64   `json:"t"` // Unix second
	CPUStall    float64 `json:"cpu_stall"`
	MemoryStall float64 `json:"memory_stall"`
	IOStall     float64 `json:"io_stall"`
	Load1       float64 `json:"load1"`
}

// ServerSecond is one second of a server iolab watched: what its process
// tree held at the end of the second and used during it.
type ServerSecond struct {
	T          int64   `json:"t"`
	RSSBytes   int64   `json:"rss_bytes"`
	CPUS       float64 `json:"cpu_s"`
	ReadBytes  int64   `json:"read_bytes"`
	WriteBytes int64   `json:"write_bytes"`
	Threads    int     `json:"threads"`
	FDs        int     `json:"fds"`
}

// WithExtra adds figures to a run's Extra (made if nil), and returns it:
// the driver's figures and the workload's meet there, neither replacing
// the other's.
func WithExtra(extra, figures map[string]float64) map[string]float64 {
	if extra == nil {
		extra = make(map[string]float64, len(figures))
	}
	maps.Copy(extra, figures)
	return extra
}

// Note is a fact the workload observed that the summary should warn about.
type Note struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Ops is the number of operations that move data, of every kind but
// Sync: fio's IOPS do not count its fsyncs either (they have a line of
// their own, as iolab's sync.* metrics).
func (r *Result) Ops() int64 {
	var n int64
	for op, d := range r.ByOp {
		if Op(op) != Sync {
			n += d.Ops
		}
	}
	return n
}

// Bytes is the number of bytes moved in all directions.
func (r *Result) Bytes() int64 {
	var n int64
	for _, d := range r.ByOp {
		n += d.Bytes
	}
	return n
}

// RateOf divides n (operations or bytes of kind d) by the time d was
// active: its ActiveS when set, else the run's duration.
func (r *Result) RateOf(d Op, n int64) float64 {
	if s := r.ByOp[d].ActiveS; s > 0 {
		return float64(n) / s
	}
	return r.PerSecond(n)
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
	var late, ownLate, ownDelay int64
	paced := false
	series.mu.Lock()
	res.ByOp = series.dirs
	series.mu.Unlock()
	for _, rec := range recs {
		res.Errors += rec.errors
		if res.FirstError == "" && rec.firstErr != nil {
			res.FirstError = rec.firstErr.Error()
		}
		for d := range rec.opErrors {
			res.ByOp[d].Errors += rec.opErrors[d]
			if h := rec.ttfb[d]; h != nil {
				if res.ByOp[d].TTFB == nil {
					res.ByOp[d].TTFB = NewHistogram()
				}
				res.ByOp[d].TTFB.Merge(h)
			}
			res.ByOp[d].Response = MergeHistogram(res.ByOp[d].Response, rec.response[d])
			res.ByOp[d].StartLag = MergeHistogram(res.ByOp[d].StartLag, rec.startLag[d])
		}
		if rec.paced {
			paced = true
			late, ownLate, ownDelay = late+rec.late, ownLate+rec.ownLate, ownDelay+rec.ownDelayNs
		}
		for code, n := range rec.codes {
			if res.ErrorCodes == nil {
				res.ErrorCodes = map[string]int64{}
			}
			res.ErrorCodes[code] += n
		}
	}
	if paced {
		res.Extra = WithExtra(res.Extra, map[string]float64{"late_starts": float64(late),
			"gen_late_starts": float64(ownLate), "gen_delay_s": float64(ownDelay) / 1e9})
	}
	secs := int64((duration + time.Second - 1) / time.Second)
	res.Series = series.Seconds(secs)
	return res
}

// FrameTiming is one video frame of a frame test: when it started (from the
// run's start), how long open, I/O and close took, and how late it finished
// (0 when on time); a dropped frame was never started.
type FrameTiming struct {
	Frame int `json:"frame"`
	// Pos is the frame's position in play order (its number, unless the
	// order is reverse or random): it is released at Pos/fps and due at
	// (Pos+1)/fps.
	Pos     int   `json:"pos,omitempty"`
	Thread  int   `json:"thread"`
	StartNs int64 `json:"start_ns"`
	OpenNs  int64 `json:"open_ns"`
	IONs    int64 `json:"io_ns"`
	CloseNs int64 `json:"close_ns"`
	LateNs  int64 `json:"late_ns"`
	Dropped bool  `json:"dropped,omitempty"`
}
