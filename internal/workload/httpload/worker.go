package httpload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/iolab/iolab/internal/datagen"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/redact"
)

// worker issues one request at a time.
type worker struct {
	h          *HTTP
	id         int
	ctx        context.Context
	clock      metrics.Clock
	rec        *metrics.Recorder
	rng        *rand.Rand
	buf        []byte
	firstByte  atomic.Int64
	mismatched *atomic.Int64
	verified   *atomic.Int64
	check      *datagen.Checker // --verify's, made at the first download
	// busyNs is the time spent uploading and downloading, for rates of
	// each direction over its own time when they take turns.
	busyNs [2]int64
	// paced: operations start on a schedule, the current one at due; its
	// first request's response time counts from there (responded once
	// recorded: a download after an upload was not scheduled).
	paced, responded bool
	due, asked       int64 // and when the worker asked for its slot
}

// operation performs operation i: an upload (and the download of what it
// stored, with --download-url), or a download.
func (w *worker) operation(i int64) {
	o := &w.h.opts
	if o.Mode == Download {
		// Entry k of a URL or id file is what the upload of index k
		// stored: its size and content are those of body k.
		url, k := expand(o.URL, i, w.id, ""), i
		switch h := w.h; {
		case len(h.urls) > 0:
			k = i % int64(len(h.urls))
			url = h.urls[k]
		case len(h.ids) > 0:
			k = i % int64(len(h.ids))
			url = expand(o.URL, k, w.id, h.ids[k])
		}
		w.download(url, uint64(k), w.size(k))
		return
	}
	size := w.size(i)
	t0 := w.clock.Now()
	id, ok := w.upload(i, size)
	t1 := w.clock.Now()
	w.busyNs[0] += t1 - t0
	if ok && o.KeepIDs {
		if id == "" {
			id = strconv.FormatInt(i, 10)
		}
		w.h.keep(i, id)
	}
	if ok && o.DownloadURL != "" {
		w.download(expand(o.DownloadURL, i, w.id, id), uint64(i), size)
		w.busyNs[1] += w.clock.Now() - t1
	}
}

// size of body i: fixed sizes are the same for the same i in every run, so
// downloads can be checked against uploads of another run.
// A download given no size reads what the server sends: 0 here.
func (w *worker) size(i int64) int64 {
	s := w.h.opts.Sizes
	if s.Empty() {
		return 0
	}
	if s.Max == 0 && len(s.Fixed) == 1 {
		return s.Fixed[0]
	}
	return s.Pick(rand.New(rand.NewPCG(uint64(i), 11)))
}

func (w *worker) upload(i, size int64) (string, bool) {
	o := &w.h.opts
	sent := &flightReader{r: w.h.content.Body(uint64(i), size), rec: w.rec}
	defer sent.finish()
	var body io.Reader = sent
	length, ctype := size, "application/octet-stream"
	if o.FormField != "" {
		body, length, ctype = formBody(o.FormField, o.Form, fmt.Sprintf("iolab-%d.bin", i), body, size)
	}
	req, err := http.NewRequestWithContext(w.ctx, o.Method, expand(o.URL, i, w.id, ""), body)
	if err != nil {
		w.rec.OpError(metrics.Upload, "request", err)
		return "", false
	}
	req.ContentLength = length
	req.Header.Set("Content-Type", ctype)
	w.h.decorate(req)
	start := w.begin()
	resp, err := w.h.client.Do(req)
	if err != nil {
		w.rec.OpError(metrics.Upload, errorCode(w.ctx, err), redact.Err(err))
		return "", false
	}
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_, _ = io.CopyBuffer(io.Discard, resp.Body, w.buf)
	resp.Body.Close()
	end := w.clock.Now()
	if resp.StatusCode >= 300 {
		w.rec.OpError(metrics.Upload, strconv.Itoa(resp.StatusCode), fmt.Errorf("upload %s: %s: %s", redact.URL(req.URL.String()), resp.Status, snippet(reply)))
		return "", false
	}
	w.done(metrics.Upload, size, start, end)
	if o.IDFromJSON == "" {
		return "", true
	}
	id, err := jsonField(reply, o.IDFromJSON)
	if err != nil {
		w.rec.OpError(metrics.Upload, "no-id", fmt.Errorf("--id-from-json %s: %w in %s", o.IDFromJSON, err, snippet(reply)))
		return "", false
	}
	return id, true
}

func (w *worker) download(url string, seed uint64, size int64) {
	o := &w.h.opts
	req, err := http.NewRequestWithContext(w.ctx, http.MethodGet, url, nil)
	if err != nil {
		w.rec.OpError(metrics.Download, "request", err)
		return
	}
	w.h.decorate(req)
	from, want := int64(0), size
	if o.RangeSize > 0 && size > o.RangeSize {
		from, want = w.rng.Int64N(size-o.RangeSize+1), o.RangeSize
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", from, from+want-1))
	}
	start := w.begin()
	resp, err := w.h.client.Do(req)
	if err != nil {
		w.rec.OpError(metrics.Download, errorCode(w.ctx, err), redact.Err(err))
		return
	}
	defer resp.Body.Close()
	// Plain Writers on both sides, so CopyBuffer reads in the worker's
	// 256 KiB buffer rather than io.Discard's 8 KiB ones; with --verify
	// every byte is compared, as it arrives, with what the upload sent.
	var dst io.Writer = struct{ io.Writer }{io.Discard}
	if o.Verify {
		if w.check == nil {
			w.check = w.h.content.Checker()
		}
		if resp.StatusCode == http.StatusOK { // the whole body: a server that ignores Range sends it
			from, want = 0, size
		}
		w.check.Reset(seed, size, from, from+want)
		dst = w.check
		if resp.StatusCode < 300 && resp.ContentLength >= 0 && resp.ContentLength != want {
			// Not read: a body of another length than the one announced
			// leaves its rest on the connection, which is closed, not
			// handed to the next request.
			w.verified.Add(1)
			w.mismatched.Add(1)
			w.rec.OpError(metrics.Download, "body-length", fmt.Errorf("download %s: the server announced %d bytes where the upload sent %d", redact.URL(url), resp.ContentLength, want))
			return
		}
	}
	src := &flightReader{r: resp.Body, rec: w.rec}
	n, err := io.CopyBuffer(dst, src, w.buf)
	src.finish()
	end := w.clock.Now()
	switch {
	case resp.StatusCode >= 300:
		w.rec.OpError(metrics.Download, strconv.Itoa(resp.StatusCode), fmt.Errorf("download %s: %s", redact.URL(url), resp.Status))
		return
	case err != nil:
		w.rec.OpError(metrics.Download, errorCode(w.ctx, err), fmt.Errorf("download %s: %w", redact.URL(url), redact.Err(err)))
		return
	}
	if o.Verify {
		w.verified.Add(1)
		if at := w.check.Differs(); at >= 0 {
			w.mismatched.Add(1)
			// Whatever spoiled the body may have left bytes on the
			// connection, now idle: the next request gets a new one.
			w.h.client.CloseIdleConnections()
			w.rec.OpError(metrics.Download, "content", fmt.Errorf("download %s: byte %d of %d is not what the upload of it sent", redact.URL(url), at, n))
			return
		}
	}
	w.done(metrics.Download, n, start, end)
}

// errorCode is how a failed request is counted: "timeout" for one --timeout
// ended, "cut" for one the run's hard stop ended, else "network".
func errorCode(ctx context.Context, err error) string {
	var ne net.Error
	switch {
	case ctx.Err() != nil:
		return "cut"
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "network"
}

func (w *worker) begin() int64 {
	w.firstByte.Store(0)
	return w.clock.Now()
}

func (w *worker) done(op metrics.Op, bytes, start, end int64) {
	w.rec.Record(op, bytes, end, end-start)
	if w.paced && !w.responded {
		w.rec.RecordPaced(op, w.due, w.asked)
		w.responded = true
	}
	if fb := w.firstByte.Load(); fb > start {
		w.rec.RecordTTFB(op, fb-start)
	}
}

// flightReader tells the run's progress line the bytes of a body as they
// pass, so a long upload or download shows before it ends; the operation
// takes them back when it does (Recorder.InFlight). An upload's body may
// still be read by the HTTP transport's goroutine after its request
// returned: n is -1 once finished, and what it reads then is not counted.
type flightReader struct {
	r   io.Reader
	rec *metrics.Recorder
	n   atomic.Int64
}

func (f *flightReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	for n > 0 {
		cur := f.n.Load()
		if cur < 0 {
			break
		}
		if f.n.CompareAndSwap(cur, cur+int64(n)) {
			f.rec.InFlight(int64(n))
			break
		}
	}
	return n, err
}

// finish takes the body's bytes back from the progress line.
func (f *flightReader) finish() {
	if n := f.n.Swap(-1); n > 0 {
		f.rec.InFlight(-n)
	}
}
