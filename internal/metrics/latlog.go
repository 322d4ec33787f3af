package metrics

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// LatencyLog writes every measured operation to a file, a line each, as
// fio's write_lat_log does: to check a run's percentiles against the raw
// values, or to plot them with another tool. Its lines are CSV:
//
//	run,op,end_unix_ns,latency_ns,bytes
//
// where run is the stored run's ID. Each worker writes through a buffer
// of its own and hands the file whole lines (O_APPEND), so workers share
// no lock; the histograms stay the measurement, the log is a copy.
//
// In fio's format (NewFioLatencyLogs) each run has a file of its own, as
// each of fio's jobs has, PATH_lat.RUN.log, of fio's lines:
//
//	msec, latency_ns, direction, bytes
//
// msec since the run began, at the operation's end; the direction 0 for
// reads (read, get, head, list, download), 1 for writes (write, put,
// upload, multipart, copy), 2 for deletes (fio's trim); an operation fio
// has no direction for (sync, open, close) is not in it. Four columns,
// as fio2gnuplot and fiologparser read them (fio 3.33 adds a fifth, its
// I/O priority, which fiologparser refuses).
type LatencyLog struct {
	path string
	f    *os.File
	fio  bool
	mu   sync.Mutex
	err  error // the first write that failed
}

// LatencyLogFio is the name of fio's format of a latency log.
const LatencyLogFio = "fio"

// LatencyLogFormats are the formats of a latency log.
var LatencyLogFormats = []string{"csv", LatencyLogFio}

// NewFioLatencyLogs is the logs in fio's format whose files start with
// prefix: each run's is opened by ForRun.
func NewFioLatencyLogs(prefix string) *LatencyLog { return &LatencyLog{path: prefix, fio: true} }

// FioLatencyLogPath is the file of run's log in fio's format, as fio
// names a job's: PREFIX_lat.N.log.
func FioLatencyLogPath(prefix string, run int64) string {
	return prefix + "_lat." + strconv.FormatInt(run, 10) + ".log"
}

// ForRun is the log run writes to, and what closes it: in fio's format a
// file of its own, created (never over a file that is there: a run's ID
// is new, so what is there is another's); else the log itself.
func (l *LatencyLog) ForRun(run int64) (*LatencyLog, func() error, error) {
	if !l.fio {
		return l, func() error { return nil }, nil
	}
	path := FioLatencyLogPath(l.path, run)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, nil, fmt.Errorf("--lat-log %s: %s is there already; each run's file is written new, never over another (remove it, or give --lat-log another start)", l.path, path)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("--lat-log %s: %w", l.path, err)
	}
	child := &LatencyLog{path: path, f: f, fio: true}
	return child, child.Close, nil
}

// Fio says whether the log is in fio's format.
func (l *LatencyLog) Fio() bool { return l.fio }

// LatencyLogHeader is the log's first line.
const LatencyLogHeader = "run,op,end_unix_ns,latency_ns,bytes\n"

// CreateLatencyLog creates (or truncates) the log at path; with keep, a
// log already there is added to (a resumed experiment's). Its errors are
// the file's (open PATH: ..., write PATH: ...).
func CreateLatencyLog(path string, keep bool) (*LatencyLog, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if !keep {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.Size() == 0 {
		if _, err := f.WriteString(LatencyLogHeader); err != nil {
			f.Close()
			return nil, err
		}
	}
	return &LatencyLog{path: path, f: f}, nil
}

// LatencyLogOnFile is a log on a file another process opened (and wrote
// the header to), in fio's format or not: a job's process adds its
// operations to its parent's log, whose file it was handed.
func LatencyLogOnFile(f *os.File, path string, fio bool) *LatencyLog {
	return &LatencyLog{path: path, f: f, fio: fio}
}

// Path is where the log is.
func (l *LatencyLog) Path() string { return l.path }

// File is the log's open file, to hand to another process.
func (l *LatencyLog) File() *os.File { return l.f }

// IsLatencyLog says whether a file's first bytes are a latency log's.
func IsLatencyLog(head []byte) bool { return strings.HasPrefix(string(head), LatencyLogHeader) }

// Close closes the file; it returns the first error of any write.
func (l *LatencyLog) Close() error {
	if l.f == nil { // fio's format: each run's file is its own
		return l.Err()
	}
	if err := l.f.Close(); err != nil && l.Err() == nil {
		return fmt.Errorf("latency log %s: %w", l.path, err)
	}
	return l.Err()
}

// Err is the first write that failed, naming the file.
func (l *LatencyLog) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *LatencyLog) write(b []byte) {
	if _, err := l.f.Write(b); err != nil {
		l.mu.Lock()
		if l.err == nil {
			l.err = fmt.Errorf("latency log %s: %w", l.path, err)
		}
		l.mu.Unlock()
	}
}

type latencyLogKey struct{}

type runLog struct {
	log *LatencyLog
	run int64
}

// WithLatencyLog returns a context under which a run writes its
// operations to log as run number run.
func WithLatencyLog(ctx context.Context, log *LatencyLog, run int64) context.Context {
	return context.WithValue(ctx, latencyLogKey{}, runLog{log, run})
}

// LatencyLogFrom returns the log ctx carries, and the run's number in it.
func LatencyLogFrom(ctx context.Context) (*LatencyLog, int64, bool) {
	rl, ok := ctx.Value(latencyLogKey{}).(runLog)
	if !ok || rl.log == nil {
		return nil, 0, false
	}
	return rl.log, rl.run, true
}

// LogTo makes the recorder write every operation it records from now on
// to the log ctx carries (none: nothing), with end times from clock.
func (r *Recorder) LogTo(ctx context.Context, clock Clock) {
	rl, ok := ctx.Value(latencyLogKey{}).(runLog)
	if !ok || rl.log == nil {
		return
	}
	r.lat = &latWriter{log: rl.log, base: clock.Start().UnixNano(),
		prefix: strconv.AppendInt(nil, rl.run, 10), buf: make([]byte, 0, latBuffer)}
}

// latBuffer is a worker's buffer of lines: a write(2) every ~1,500 ops.
const latBuffer = 64 << 10

// latWriter is one recorder's lines, handed to the file whole.
type latWriter struct {
	log    *LatencyLog
	base   int64 // the clock's zero, Unix ns
	prefix []byte
	buf    []byte
}

func (w *latWriter) add(d Op, endNs, latencyNs, bytes int64) {
	if len(w.buf)+128 > cap(w.buf) {
		w.flush()
	}
	if w.log.fio {
		w.addFio(d, endNs, latencyNs, bytes)
		return
	}
	b := append(w.buf, w.prefix...)
	b = append(b, ',')
	b = append(b, opNames[d]...)
	b = append(b, ',')
	b = strconv.AppendInt(b, w.base+endNs, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, latencyNs, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, bytes, 10)
	w.buf = append(b, '\n')
}

// fioDirection is an operation's data direction in fio's logs; -1: none.
var fioDirection = [NumOps]int8{Read: 0, Write: 1, Sync: -1, Put: 1, Get: 0, Head: 0, List: 0, Delete: 2,
	Multipart: 1, Copy: 1, Upload: 1, Download: 0, Open: -1, Close: -1, Trim: 2}

func (w *latWriter) addFio(d Op, endNs, latencyNs, bytes int64) {
	dir := fioDirection[d]
	if dir < 0 {
		return
	}
	b := strconv.AppendInt(w.buf, endNs/1e6, 10)
	b = append(b, ", "...)
	b = strconv.AppendInt(b, latencyNs, 10)
	b = append(b, ", "...)
	b = strconv.AppendInt(b, int64(dir), 10)
	b = append(b, ", "...)
	b = strconv.AppendInt(b, bytes, 10)
	w.buf = append(b, '\n')
}

func (w *latWriter) flush() {
	if len(w.buf) > 0 {
		w.log.write(w.buf)
		w.buf = w.buf[:0]
	}
}
