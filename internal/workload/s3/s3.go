// Package s3 is the object-store workload: PUT, GET (whole or a range),
// HEAD, LIST, DELETE (single or batch), multipart upload and COPY, alone or
// in a weighted mix run in parallel, against any S3-compatible endpoint.
//
// Prepare checks the endpoint, the credentials and the bucket before any
// load, then uploads the objects that reads need. Each run drives
// Concurrency workers; every operation is recorded per kind with its
// latency and time to first byte; failures are counted by S3 error code.
// Object content comes from seeds, so --verify regenerates what each object
// should hold and compares it with what the server returns.
package s3

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/units"
)

// object is a key the workload wrote, with what it should hold.
type object struct {
	key  string
	seed uint64
	size int64
}

// S3 is the workload.
type S3 struct {
	opts    Options
	content content
	c       *client
	pool    []object // prepared for get/head/copy/list/delete
	poolAt  atomic.Int64
	runs    int
}

// New validates opts.
func New(opts Options) (*S3, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &S3{opts: opts, content: newContent(opts.Data)}, nil
}

// Kind implements workload.Workload.
func (s *S3) Kind() string { return "s3" }

// Params implements workload.Workload.
func (s *S3) Params() map[string]string {
	o := &s.opts
	p := map[string]string{"endpoint": o.Endpoint, "bucket": o.Bucket, "mix": o.Mix.String(), "size": o.Sizes.String(),
		"concurrency": fmt.Sprint(o.Concurrency)}
	if o.Runtime > 0 {
		p["runtime"] = o.Runtime.String()
	}
	if o.Count > 0 {
		p["count"] = fmt.Sprint(o.Count)
	}
	if o.RangeSize > 0 {
		p["range_size"] = units.FormatSize(o.RangeSize)
	}
	if o.Rate > 0 {
		p["rate"] = fmt.Sprint(o.Rate)
	}
	if o.HTTP2 {
		p["http2"] = "1"
	}
	return p
}

func (s *S3) needsPool() bool {
	m := s.opts.Mix
	return m.has(metrics.Get) || m.has(metrics.Head) || m.has(metrics.Copy) || m.has(metrics.List) || m.has(metrics.Delete)
}

// Prepare checks the endpoint and uploads the objects reads need.
func (s *S3) Prepare(ctx context.Context) error {
	c, err := newClient(&s.opts)
	if err != nil {
		return err
	}
	s.c = c
	if err := c.preflight(ctx, &s.opts); err != nil {
		return err
	}
	if !s.needsPool() {
		return nil
	}
	n := s.opts.Objects
	if n == 0 {
		n = max(4*s.opts.Concurrency, 64)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	prefix := fmt.Sprintf("%s/%d/pool-", s.opts.Prefix, time.Now().UnixNano())
	for i := 0; i < n; i++ {
		s.pool = append(s.pool, object{key: fmt.Sprintf("%s%07d", prefix, i), seed: 1<<39 | uint64(i), size: s.opts.Sizes.pick(rng)})
	}
	return s.upload(ctx, s.pool)
}

// upload puts objects with Concurrency uploaders; it is not timed.
func (s *S3) upload(ctx context.Context, objs []object) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, s.opts.Concurrency)
	for w := 0; w < s.opts.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(objs)); i = next.Add(1) - 1 {
				o := objs[i]
				if _, err := s.c.PutObject(ctx, s.opts.Bucket, o.key, s.content.body(o.seed, o.size), o.size, s.putOptions()); err != nil {
					errs <- fmt.Errorf("prepare: put %s: %w", o.key, describe(&s.opts, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func (s *S3) putOptions() minio.PutObjectOptions {
	return minio.PutObjectOptions{DisableMultipart: true, DisableContentSha256: true, ContentType: "application/octet-stream"}
}

// Run implements workload.Workload.
func (s *S3) Run(ctx context.Context, progress func(ops, bytes int64)) (*metrics.Result, error) {
	s.runs++
	o := &s.opts
	workers := make([]*worker, o.Concurrency)
	var budget atomic.Int64
	budget.Store(o.Count)
	pace := newPacer(o.Rate)
	prefix := fmt.Sprintf("%s/%d/run%d-", o.Prefix, time.Now().UnixNano(), s.runs)
	for i := range workers {
		workers[i] = &worker{s: s, id: i, prefix: prefix, rng: rand.New(rand.NewPCG(uint64(i)+1, uint64(s.runs))),
			budget: &budget, limited: o.Count > 0, pace: pace}
	}
	dialed := s.c.dialed.Load()
	dopts := driver.Options{Workers: o.Concurrency, Runtime: o.Runtime}
	if progress != nil {
		dopts.Progress = func(_ time.Duration, ops, bytes int64) { progress(ops, bytes) }
	}
	res, err := driver.Run(ctx, dopts, func(ctx context.Context, i int, clock metrics.Clock, stop *driver.Stop, rec *metrics.Recorder) error {
		return workers[i].loop(ctx, clock, stop, rec)
	})
	if res == nil {
		return nil, err
	}
	res.Extra = map[string]float64{"connections_opened": float64(s.c.dialed.Load() - dialed)}
	if o.Rate > 0 {
		res.Extra["late_starts"] = float64(pace.late.Load())
	}
	var written []object
	for _, w := range workers {
		written = append(written, w.written...)
	}
	cctx := context.WithoutCancel(ctx)
	if o.Verify && err == nil {
		s.verify(cctx, written, res)
	}
	if !o.Keep {
		s.remove(cctx, written)
	}
	return res, err
}

// Close removes the prepared objects unless --keep.
func (s *S3) Close() error {
	if s.c != nil && !s.opts.Keep {
		s.remove(context.Background(), s.pool)
	}
	return nil
}

// remove deletes objects in batches; it is not timed.
func (s *S3) remove(ctx context.Context, objs []object) {
	ch := make(chan minio.ObjectInfo, 1000)
	go func() {
		defer close(ch)
		for _, o := range objs {
			ch <- minio.ObjectInfo{Key: o.key}
		}
	}()
	for range s.c.RemoveObjects(ctx, s.opts.Bucket, ch, minio.RemoveObjectsOptions{}) {
	}
}

// verify reads back every object the run wrote and compares its checksum
// with the content its seed generates.
func (s *S3) verify(ctx context.Context, written []object, res *metrics.Result) {
	var checked, mismatched, missing atomic.Int64
	var mu sync.Mutex
	var bad []string
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < s.opts.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(written)); i = next.Add(1) - 1 {
				o := written[i]
				got, err := s.readChecksum(ctx, o.key)
				checked.Add(1)
				problem := ""
				switch {
				case err != nil && errorCode(err) == "NoSuchKey":
					missing.Add(1)
					problem = "missing"
				case err != nil:
					missing.Add(1)
					problem = errorCode(err)
				case got != s.content.checksum(o.seed, o.size):
					mismatched.Add(1)
					problem = "content differs"
				}
				if problem != "" {
					mu.Lock()
					if len(bad) < 5 {
						bad = append(bad, o.key+" ("+problem+")")
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	res.Extra["verify_checked"] = float64(checked.Load())
	res.Extra["verify_mismatched"] = float64(mismatched.Load())
	res.Extra["verify_missing"] = float64(missing.Load())
	if len(bad) > 0 {
		res.Errors += mismatched.Load() + missing.Load()
		res.FirstError = "verify: " + bad[0]
		res.Notes = append(res.Notes, metrics.Note{Code: "verify-failed", Message: fmt.Sprintf(
			"%d of %d objects read back wrong or missing; first: %s", mismatched.Load()+missing.Load(), checked.Load(), strings.Join(bad, ", "))})
	}
}

func (s *S3) readChecksum(ctx context.Context, key string) (uint64, error) {
	obj, err := s.c.GetObject(ctx, s.opts.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return 0, err
	}
	defer obj.Close()
	h := newCRC()
	if _, err := copyBuffer(h, obj); err != nil {
		return 0, err
	}
	return h.Sum64(), nil
}

// httpTrace timestamps the first response byte of a worker's operation
// (the first of its requests, for operations that make several at once).
func httpTrace(ctx context.Context, clock metrics.Clock, firstByte *atomic.Int64) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotFirstResponseByte: func() { firstByte.CompareAndSwap(0, clock.Now()) },
	})
}
