package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/iolab/iolab/internal/datagen"
	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/metrics"
)

// worker issues one operation at a time.
type worker struct {
	s       *S3
	c       *client        // its endpoint's
	ep      *endpointStats // with several endpoints
	id      int
	prefix  string
	rng     *rand.Rand
	budget  *atomic.Int64
	limited bool
	pace    *driver.Pacer
	// reserve, if set, is the run's reserve of workers; in it (a worker past
	// the run's concurrency) the worker waits idle until a late start
	// wakes it.
	reserve *driver.Reserve
	written []object // this run's objects, for delete, dedup and verify
	seq     int
	keyBuf  []byte
	buf     []byte
	sizes   *sizeBuckets
	size    int64 // object size of the operation in progress, for sizes
	fast    *fastConn
	stamp   func() // marks the first response byte of the operation in progress
	// firstByte is when the operation in progress saw its first response
	// byte (0: not yet); a retry starts it again.
	firstByte atomic.Int64
	op        metrics.Op // the operation in progress
	att       attempts   // minio-go's requests of the operation in progress
	retries   [metrics.NumOps]int64
	check     *datagen.Checker // --check-reads
}

func (w *worker) loop(ctx context.Context, clock metrics.Clock, stop *driver.Stop, rec *metrics.Recorder) error {
	if w.reserve != nil && w.id >= w.s.opts.Concurrency && !w.reserve.Wait(stop, rec) {
		return nil
	}
	firstByte := &w.firstByte
	tctx := context.WithValue(httpTrace(ctx, clock, firstByte), attemptsKey{}, &w.att)
	w.buf = make([]byte, 32<<10)
	w.check = w.s.content.Checker()
	w.stamp = func() { firstByte.CompareAndSwap(0, clock.Now()) }
	if w.s.opts.Client != ClientSDK {
		w.fast = newFastConn(w.c, &w.s.opts)
		defer func() {
			if w.fast != nil {
				w.fast.close()
			}
		}()
	}
	for !stop.Stopped() {
		if w.limited && w.budget.Add(-1) < 0 {
			w.reserve.Spent()
			return nil
		}
		due, asked := int64(-1), int64(0) // the intended start of a paced operation, and when it was asked for
		if w.pace != nil {
			asked = clock.Now()
			due = w.pace.Due(clock, asked)
			if !driver.SleepUntil(clock, due, stop) { // the run ended while this worker waited for its turn
				return nil
			}
		}
		op := w.s.opts.Mix.pick(w.rng)
		w.size, w.op = 0, op
		firstByte.Store(0)
		start := clock.Now()
		n, err := w.do(tctx, op)
		end := clock.Now()
		w.retries[op] += w.att.take()
		if !w.record(ctx, rec, op, n, err, start, end, paced{due, asked}, firstByte.Load()) {
			return nil
		}
	}
	return nil
}

// paced is a paced operation's place on the schedule (due; -1 for an
// unpaced one) and when its worker asked for it.
type paced struct{ due, asked int64 }

var unpaced = paced{due: -1}

// record counts an operation that ended at end: its bytes, latency, time
// to first byte (firstByte, 0 if none came) and, paced, its response time
// and start lag (metrics.Recorder.RecordPaced); or its error. It says
// false when the run's hard stop cut the operation: the worker ends.
func (w *worker) record(ctx context.Context, rec *metrics.Recorder, op metrics.Op, n int64, err error, start, end int64, p paced, firstByte int64) bool {
	if err != nil {
		if ctx.Err() != nil {
			// The run's hard stop cut it: still an operation that failed.
			rec.OpError(op, "cut", cutError(op, end-start))
			return false
		}
		rec.OpError(op, errorCode(err), explain(op, err))
		if w.ep != nil {
			w.ep.errors++
		}
		return true
	}
	rec.Record(op, n, end, end-start)
	if p.due >= 0 {
		rec.RecordPaced(op, p.due, p.asked) // a late start waited in the client's queue: it counts
	}
	if w.ep != nil {
		w.ep.ops++
		w.ep.bytes += n
		metrics.RecordLatency(w.ep.lat, end-start)
	}
	w.sizes.record(op, w.size, end-start)
	if firstByte > start && op != metrics.Multipart {
		rec.RecordTTFB(op, firstByte-start)
	}
	return true
}

// cutError is an operation the run's hard stop cut after d nanoseconds.
func cutError(op metrics.Op, d int64) error {
	return fmt.Errorf("%s: still in flight when the run's grace period ended; cut after %v", op, time.Duration(d).Round(time.Millisecond))
}

// announcedLength is a GET answered with another length than the object's
// (or the range's): closed unread.
func announcedLength(key string, got, want int64) error {
	return fmt.Errorf("%w: GET %s: the server announced %d bytes, the object (or range) has %d", errBodyLength, key, got, want)
}

// do performs one operation and returns the payload bytes it moved.
func (w *worker) do(ctx context.Context, op metrics.Op) (int64, error) {
	o := &w.s.opts
	switch op {
	case metrics.Put:
		obj := w.newObject()
		var err error
		if w.fast != nil {
			_, err = w.send(ctx, http.MethodPut, obj.key, func() io.Reader { return w.s.content.Body(obj.seed, obj.size) }, obj.size, "", io.Discard)
		} else {
			_, err = w.c.PutObject(ctx, o.Bucket, obj.key, w.s.content.Body(obj.seed, obj.size), obj.size, w.s.putOptions())
		}
		if err != nil {
			return 0, err
		}
		w.written = append(w.written, obj)
		w.size = obj.size
		return obj.size, nil
	case metrics.Get:
		return w.get(ctx)
	case metrics.Head:
		if w.fast != nil {
			_, err := w.send(ctx, http.MethodHead, w.existing().key, nil, 0, "", io.Discard)
			return 0, err
		}
		_, err := w.c.StatObject(ctx, o.Bucket, w.existing().key, minio.StatObjectOptions{})
		return 0, err
	case metrics.List:
		return 0, w.list(ctx)
	case metrics.Delete:
		return 0, w.delete(ctx)
	case metrics.Multipart:
		return w.multipart(ctx)
	case metrics.Copy:
		src, dst := w.existing(), w.newObject()
		dst.seed, dst.size = src.seed, src.size
		_, err := w.c.CopyObject(ctx, minio.CopyDestOptions{Bucket: o.Bucket, Object: dst.key},
			minio.CopySrcOptions{Bucket: o.Bucket, Object: src.key})
		if err != nil {
			return 0, err
		}
		w.written = append(w.written, dst)
		return src.size, nil
	}
	return 0, fmt.Errorf("operation %s not supported", op)
}

// send makes a request on the worker's own connection (again); body
// makes the request's body afresh for each attempt.
func (w *worker) send(ctx context.Context, method, key string, body func() io.Reader, size int64, rangeHdr string, dst io.Writer) (int64, error) {
	return w.again(ctx, func() (int64, error) {
		var b io.Reader
		if body != nil {
			b = body()
		}
		return w.fast.do(ctx, method, w.s.opts.Bucket, key, b, size, rangeHdr, dst, w.buf, w.stamp)
	})
}

// again makes an attempt, and again up to --retries times (after
// minio-go's backoff) while it fails in a way that may pass; each retry is
// counted against the operation in progress.
func (w *worker) again(ctx context.Context, attempt func() (int64, error)) (int64, error) {
	for try := 0; ; try++ {
		n, err := attempt()
		if err == nil || try >= w.s.opts.Retries || !retryable(err) || !backoff(ctx, w.rng, try) {
			return n, err
		}
		w.retries[w.op]++
		w.firstByte.Store(0) // the answer that counts is the retry's
	}
}

// errContent is a read whose bytes are not what was written.
var errContent = errors.New("content differs")

// errShortList is a LIST that returned fewer keys than were written under
// its prefix.
var errShortList = errors.New("LIST returned fewer keys than were written")

// list lists a page of the prepared objects' keys. A store that returns
// fewer than were written there (one that flattens or rewrites "/" in keys
// lists nothing under the prefix) fails the operation rather than look
// fast.
func (w *worker) list(ctx context.Context) error {
	o := &w.s.opts
	var got int
	_, err := w.again(ctx, func() (n int64, err error) {
		got, err = w.c.listPage(ctx, o.Bucket, w.s.listPrefix, o.PageSize)
		return 0, err
	})
	if err != nil {
		return err
	}
	want := min(o.PageSize, len(w.s.pool))
	w.s.listKeys.Add(int64(got))
	if got < want {
		return fmt.Errorf("%w: %d keys under %q, where %d were written (a store that flattens or rewrites '/' in keys? try --key-layout flat)",
			errShortList, got, w.s.listPrefix, want)
	}
	return nil
}

// newObject names the next object this worker writes; with --dedup some
// repeat the content of one it wrote before.
func (w *worker) newObject() object {
	w.seq++
	// Seeds are unique within 39 bits across runs (32 runs x 16384 workers x
	// 1M objects before they wrap); prepared objects use the 40th.
	seed := (uint64(w.s.runs)<<34 | uint64(w.id)<<20 | uint64(w.seq)) & (1<<39 - 1)
	key := append(append(w.keyBuf[:0], w.prefix...), 'w') // w.prefix + fmt's "w%04d-%08d", without fmt
	key = append(appendPadded(key, w.id, 4), '-')
	w.keyBuf = appendPadded(key, w.seq, 8)
	obj := object{key: string(w.keyBuf), seed: seed}
	if n := len(w.written); n > 0 && w.s.opts.DedupPct > 0 && w.rng.IntN(100) < w.s.opts.DedupPct {
		prev := w.written[w.rng.IntN(n)]
		obj.seed, obj.size = prev.seed, prev.size
		return obj
	}
	obj.size = w.s.opts.Sizes.Pick(w.rng)
	return obj
}

// appendPadded appends n in decimal, zero-padded to width digits.
func appendPadded(b []byte, n, width int) []byte {
	digits := 1
	for m := n; m >= 10; m /= 10 {
		digits++
	}
	for ; digits < width; digits++ {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, int64(n), 10)
}

// existing picks an object to read: one of the prepared pool.
func (w *worker) existing() object {
	return w.s.pool[w.rng.IntN(len(w.s.pool))]
}

func (w *worker) get(ctx context.Context) (int64, error) {
	g, err := w.planGet()
	if err != nil {
		return 0, err
	}
	n, err := w.getBody(ctx, g.obj, g.opts, g.rangeHdr, g.want, g.dst)
	if err = w.checkGet(g, n, err); errors.Is(err, errBodyLength) && w.fast != nil {
		// What followed a wrong Content-Length on the connection is not
		// the next answer's, so the connection goes with it.
		w.fast.close()
	}
	return n, err
}

// getPlan is what one GET asks for: an object, or a range of it, and
// where its bytes go (--check-reads' checker, else nowhere).
type getPlan struct {
	obj      object
	opts     minio.GetObjectOptions
	rangeHdr string
	want     int64
	dst      io.Writer
}

// discard is where a GET's bytes go when nothing checks them: io.Discard
// behind a plain Writer, so io.Copy reads into the caller's buffer, not
// Discard's pool. Made once: converting it to an interface per GET
// allocated (1% of a loop's CPU on 1 KiB GETs).
var discard io.Writer = struct{ io.Writer }{io.Discard}

// planGet picks the object (and range) of the next GET.
func (w *worker) planGet() (getPlan, error) {
	o := &w.s.opts
	g := getPlan{obj: w.existing(), dst: discard}
	w.size = g.obj.size
	from, want := int64(0), g.obj.size
	if o.RangeSize > 0 && g.obj.size > o.RangeSize {
		from, want = w.rng.Int64N(g.obj.size-o.RangeSize+1), o.RangeSize
		if err := g.opts.SetRange(from, from+want-1); err != nil {
			return g, err
		}
		g.rangeHdr = fmt.Sprintf("bytes=%d-%d", from, from+want-1)
	}
	g.want = want
	if o.CheckReads {
		w.check.Reset(g.obj.seed, g.obj.size, from, from+want)
		g.dst = w.check
	}
	return g, nil
}

// checkGet fails a GET that read n bytes of g, and err, whose bytes are
// not what was written (--check-reads) or not as many as asked for.
func (w *worker) checkGet(g getPlan, n int64, err error) error {
	if err == nil && w.s.opts.CheckReads && n == g.want {
		if at := w.check.Differs(); at >= 0 {
			err = fmt.Errorf("%w: GET %s: byte %d is not what was written", errContent, g.obj.key, at)
		}
	}
	if err == nil && n != g.want {
		// A whole answer of the wrong size is no success either.
		err = fmt.Errorf("%w: GET %s: %d bytes, the object (or range) has %d", errBodyLength, g.obj.key, n, g.want)
	}
	return err
}

// getBody reads an object (or a range of it) to its end, into dst.
// An answer that announces another length than want is closed unread (its
// connection with it: what follows a wrong Content-Length on it is no
// answer to the next request).
func (w *worker) getBody(ctx context.Context, obj object, opts minio.GetObjectOptions, rangeHdr string, want int64, dst io.Writer) (int64, error) {
	o := &w.s.opts
	if w.fast != nil {
		return w.send(ctx, http.MethodGet, obj.key, nil, 0, rangeHdr, dst)
	}
	// Core.GetObject is one request; Client.GetObject adds a goroutine and
	// channels per object for seeking, which a benchmark does not need.
	r, info, _, err := w.c.core.GetObject(ctx, o.Bucket, obj.key, opts)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	if info.Size >= 0 && info.Size != want {
		return 0, announcedLength(obj.key, info.Size, want)
	}
	// Plain Writer and Reader, so the copy uses the worker's buffer and not
	// io.Discard's small pooled ones.
	n, err := io.CopyBuffer(dst, struct{ io.Reader }{r}, w.buf)
	return n, cutShort(err)
}

// delete removes objects this worker wrote, newest first, else ones
// prepared for deletes (never the ones reads pick), DeleteBatch at a time.
func (w *worker) delete(ctx context.Context) error {
	o := &w.s.opts
	keys, err := w.deleteKeys()
	if err != nil {
		return err
	}
	if len(keys) == 1 && w.fast != nil {
		_, err := w.send(ctx, http.MethodDelete, keys[0], nil, 0, "", io.Discard)
		return err
	}
	if len(keys) == 1 {
		return w.c.RemoveObject(ctx, o.Bucket, keys[0], minio.RemoveObjectOptions{})
	}
	ch := make(chan minio.ObjectInfo, len(keys))
	for _, k := range keys {
		ch <- minio.ObjectInfo{Key: k}
	}
	close(ch)
	for e := range w.c.RemoveObjects(ctx, o.Bucket, ch, minio.RemoveObjectsOptions{}) {
		return e.Err
	}
	return nil
}

// deleteKeys picks the keys of the next DELETE.
func (w *worker) deleteKeys() ([]string, error) {
	var keys []string
	for len(keys) < w.s.opts.DeleteBatch {
		if n := len(w.written); n > 0 {
			keys = append(keys, w.written[n-1].key)
			w.written = w.written[:n-1]
			continue
		}
		i := w.s.reserveAt.Add(1) - 1
		if i >= int64(len(w.s.reserve)) {
			w.s.reserveAt.Add(-1)
			break
		}
		keys = append(keys, w.s.reserve[i].key)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("nothing left to delete: raise --objects or add put to the mix")
	}
	return keys, nil
}

// multipart uploads one object in parts of PartSize, up to 4 in parallel.
func (w *worker) multipart(ctx context.Context) (int64, error) {
	o := &w.s.opts
	obj := w.newObject()
	id, err := w.c.core.NewMultipartUpload(ctx, o.Bucket, obj.key, w.s.putOptions())
	if err != nil {
		return 0, err
	}
	nparts := int((obj.size + o.PartSize - 1) / o.PartSize)
	parts := make([]minio.CompletePart, nparts)
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	sem := make(chan struct{}, 4)
	for p := 0; p < nparts; p++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			off := int64(p) * o.PartSize
			size := min(o.PartSize, obj.size-off)
			b := w.s.content.Body(obj.seed, obj.size)
			_, _ = b.Seek(off, io.SeekStart)
			part, err := w.c.core.PutObjectPart(ctx, o.Bucket, obj.key, id, p+1, io.LimitReader(b, size), size,
				minio.PutObjectPartOptions{})
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			parts[p] = minio.CompletePart{PartNumber: p + 1, ETag: part.ETag}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		_ = w.c.core.AbortMultipartUpload(context.WithoutCancel(ctx), o.Bucket, obj.key, id)
		return 0, firstErr
	}
	if _, err := w.c.core.CompleteMultipartUpload(ctx, o.Bucket, obj.key, id, parts, w.s.putOptions()); err != nil {
		return 0, err
	}
	w.written = append(w.written, obj)
	return obj.size, nil
}

func copyBuffer(dst io.Writer, src io.Reader) (int64, error) {
	return io.CopyBuffer(dst, src, make([]byte, 32<<10))
}
