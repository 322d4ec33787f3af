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
	"maps"
	"math/rand/v2"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/minio/minio-go/v7"

	"github.com/iolab/iolab/internal/datagen"
	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/workload"
)

// object is a key the workload wrote, with what it should hold.
type object struct {
	key  string
	seed uint64
	size int64
}

// S3 is the workload.
type S3 struct {
	opts    Options // this segment's share
	whole   Options // the whole load's, as its parameters
	layout  KeyLayout
	content datagen.Content
	clients []*client // one per endpoint; workers are spread over them
	c       *client   // the first, for what is not measured (preparing, removing)
	pool    []object  // prepared for get/head/copy/list: never deleted during runs
	// listPrefix is what the pool's keys begin with, and what LIST lists.
	listPrefix string
	listKeys   atomic.Int64 // keys LIST returned in the run
	// reserve is prepared for deletes alone, so a read never picks an
	// object a delete removed; reserveAt counts the ones deleted, which are
	// uploaded again before the next run.
	reserve   []object
	reserveAt atomic.Int64
	runs      int
	kept      []object // written by the last run and left in place (--keep)
	// ctx is Prepare's: Close, which has none, removes the pool under it.
	ctx context.Context
}

// New validates opts.
func New(opts Options) (*S3, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	layout, _ := ParseKeyLayout(opts.KeyLayout) // validated
	share, err := opts.share()
	if err != nil {
		return nil, err
	}
	return &S3{opts: share, whole: opts, layout: layout, content: datagen.NewContent(opts.Data)}, nil
}

// Kind implements workload.Workload.
func (s *S3) Kind() string { return "s3" }

// Params implements workload.Workload.
func (s *S3) Params() map[string]string {
	o := &s.whole
	p := map[string]string{"endpoint": redact.URL(o.Endpoint), "bucket": o.Bucket, "mix": o.Mix.String(), "size": o.Sizes.String(),
		"concurrency": fmt.Sprint(o.Concurrency), "pool": fmt.Sprint(o.pool())}
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
	if o.RateProcess != driver.Linear {
		p["rate-process"] = o.RateProcess.String()
	}
	if o.HTTP2 {
		p["http2"] = "1"
	}
	if o.CheckReads != DefaultOptions().CheckReads {
		p["check_reads"] = fmt.Sprint(o.CheckReads)
	}
	if o.Data.CompressPct > 0 {
		p["compressible"] = fmt.Sprint(o.Data.CompressPct)
	}
	if o.Data.Zeros {
		p["zeros"] = "1"
	}
	if o.DedupPct > 0 {
		p["dedup"] = fmt.Sprint(o.DedupPct)
	}
	if o.KeyLayout != "" && o.KeyLayout != "prefix" {
		p["key_layout"] = o.KeyLayout
	}
	if o.Segment.Split() {
		p["segments"] = fmt.Sprint(o.Segment.N)
	}
	// What a later `iolab s3 verify` needs to reach the store again.
	if def := DefaultOptions(); o.Region != def.Region {
		p["region"] = o.Region
	}
	if o.Lookup != DefaultOptions().Lookup {
		p["lookup"] = o.Lookup
	}
	if def := DefaultOptions(); o.Timeout != def.Timeout || o.Retries != def.Retries {
		p["timeout"], p["retries"] = o.Timeout.String(), fmt.Sprint(o.Retries)
	}
	if eps := o.endpoints(); len(eps) > 1 {
		shown := make([]string, len(eps))
		for i, ep := range eps {
			shown[i] = redact.URL(ep)
		}
		p["endpoint"] = strings.Join(shown, ",")
	}
	return p
}

func (s *S3) needsPool() bool {
	m := s.opts.Mix
	return m.has(metrics.Get) || m.has(metrics.Head) || m.has(metrics.Copy) || m.has(metrics.List)
}

// Prepare checks the endpoint and uploads the objects reads need.
func (s *S3) Prepare(ctx context.Context) error {
	s.ctx = ctx
	clients, err := newClients(&s.opts)
	if err != nil {
		return err
	}
	s.clients, s.c = clients, clients[0]
	for _, c := range clients {
		if err := c.preflight(ctx, &s.opts); err != nil {
			return err
		}
	}
	n := s.opts.objects()
	rng := rand.New(rand.NewPCG(7, 7))
	stamp := time.Now().UnixNano()
	s.listPrefix = s.layout.Key(s.opts.Prefix, stamp, "pool-")
	objects := func(name string, seedBase uint64) []object {
		objs := make([]object, n)
		for i := range objs {
			objs[i] = object{key: s.layout.Key(s.opts.Prefix, stamp, fmt.Sprintf("%s-%07d", name, i)), seed: seedBase | uint64(i),
				size: s.opts.Sizes.Pick(rng)}
		}
		return objs
	}
	if s.needsPool() {
		s.pool = objects("pool", 1<<39)
	}
	s.reserveAt.Store(0) // prepared again: all of it is there
	if s.opts.Mix.has(metrics.Delete) {
		s.reserve = objects("del", 1<<39|1<<38)
	}
	return s.upload(ctx, append(slices.Clip(s.pool), s.reserve...))
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
				if _, err := s.c.PutObject(ctx, s.opts.Bucket, o.key, s.content.Body(o.seed, o.size), o.size, s.putOptions()); err != nil {
					errs <- fmt.Errorf("prepare: put %s: %w", o.key, s.c.describe(err))
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
	// What the last run deleted of the reserve is put back, untimed.
	if n := s.reserveAt.Swap(0); n > 0 {
		if err := s.upload(ctx, s.reserve[:min(n, int64(len(s.reserve)))]); err != nil {
			return nil, err
		}
	}
	s.runs++
	o := &s.opts
	workers := make([]*worker, max(o.Concurrency, o.MaxConcurrency))
	var budget atomic.Int64
	budget.Store(o.Count)
	pace := driver.NewPacer(o.Rate, o.RateProcess, workload.ArrivalSeed(ctx, o.Segment.I))
	var reserve *driver.Reserve
	if o.MaxConcurrency > o.Concurrency {
		reserve = driver.NewReserve(o.Concurrency, o.MaxConcurrency)
		pace.Grow(reserve)
	}
	prefix := s.layout.Key(o.Prefix, time.Now().UnixNano(), fmt.Sprintf("run%d-", s.runs))
	for i := range workers {
		workers[i] = &worker{s: s, id: i, c: s.clients[i%len(s.clients)], prefix: prefix,
			rng: rand.New(rand.NewPCG(uint64(i)+1, uint64(s.runs))), budget: &budget, limited: o.Count > 0, pace: pace,
			sizes: newSizeBuckets(o.Sizes), reserve: reserve}
		if len(s.clients) > 1 {
			workers[i].ep = &endpointStats{lat: metrics.NewHistogram()}
		}
	}
	s.listKeys.Store(0)
	dialed := s.dialed()
	dopts := driver.Options{Workers: len(workers), Runtime: o.Runtime}
	if progress != nil {
		dopts.Progress = func(_ time.Duration, ops, bytes int64) { progress(ops, bytes) }
	}
	loops, restore, err := s.loops(workers)
	if err != nil {
		return nil, err
	}
	res, err := driver.Run(ctx, dopts, func(ctx context.Context, i int, clock metrics.Clock, stop *driver.Stop, rec *metrics.Recorder) error {
		if loops != nil {
			return loops[i%len(loops)].join(i < len(loops), i/len(loops), ctx, clock, stop, rec)
		}
		return workers[i].loop(ctx, clock, stop, rec)
	})
	restore()
	if res == nil {
		return nil, err
	}
	res.Extra = metrics.WithExtra(res.Extra, map[string]float64{"connections_opened": float64(s.dialed() - dialed), "event_loops": float64(len(loops))})
	s.figures(res, workers, reserve)
	var written []object
	for _, w := range workers {
		written = append(written, w.written...)
	}
	if o.Verify && err == nil {
		// Ctrl-C and SIGTERM end the check as they end the load: the run
		// is kept as interrupted, with what was checked.
		v := verifyObjects(ctx, s.c, o, s.content, written)
		v.addTo(res)
		if ctx.Err() != nil {
			err = ctx.Err()
		}
	}
	if o.Keep {
		s.kept = written
	} else {
		s.remove(ctx, written)
	}
	return res, err
}

// figures adds what the run's workers counted: the keys listed, each
// endpoint's share, each size's, the reserve's, the requests sent again.
func (s *S3) figures(res *metrics.Result, workers []*worker, reserve *driver.Reserve) {
	if n := res.ByOp[metrics.List].Ops; n > 0 {
		res.Extra["list_keys"] = float64(s.listKeys.Load())
		res.Extra["list_keys_per_s"] = float64(s.listKeys.Load()) / res.Duration.Seconds()
	}
	if len(s.clients) > 1 {
		addEndpointStats(workers, len(s.clients), res.Duration, res.Extra)
	}
	buckets := make([]*sizeBuckets, len(workers))
	for i, w := range workers {
		buckets[i] = w.sizes
	}
	addSizeBuckets(buckets, res.Duration, res.Extra)
	if reserve != nil {
		maps.Copy(res.Extra, reserve.Figures())
	}
	addRetries(workers, res.Extra)
}

// addRetries adds the requests sent again, in all and per operation.
func addRetries(workers []*worker, extra map[string]float64) {
	var sum [metrics.NumOps]int64
	for _, w := range workers {
		for op, n := range w.retries {
			sum[op] += n
		}
	}
	var all int64
	for op, n := range sum {
		if n > 0 {
			extra[metrics.Op(op).String()+".retries"] = float64(n)
			all += n
		}
	}
	extra["retries"] = float64(all)
}

// dialed is the connections every endpoint's client opened.
func (s *S3) dialed() int64 {
	var n int64
	for _, c := range s.clients {
		n += c.dialed.Load()
	}
	return n
}

// endpointStats is what one worker did at its endpoint.
type endpointStats struct {
	ops, bytes, errors int64
	lat                *hdrhistogram.Histogram
}

// addEndpointStats adds each endpoint's operations, bytes and errors per
// second and latency percentiles (endpoint.N.*, N from 1 in the order of
// --endpoint), so a slow node shows.
func addEndpointStats(workers []*worker, n int, d time.Duration, extra map[string]float64) {
	for e := range n {
		sum := endpointStats{lat: metrics.NewHistogram()}
		for i, w := range workers {
			if i%n == e && w.ep != nil {
				sum.ops, sum.bytes, sum.errors = sum.ops+w.ep.ops, sum.bytes+w.ep.bytes, sum.errors+w.ep.errors
				sum.lat.Merge(w.ep.lat)
			}
		}
		p := metrics.PercentilesOf(sum.lat)
		name := fmt.Sprintf("endpoint.%d.", e+1)
		extra[name+"ops_per_s"] = float64(sum.ops) / d.Seconds()
		extra[name+"bytes_per_s"] = float64(sum.bytes) / d.Seconds()
		extra[name+"errors"] = float64(sum.errors)
		extra[name+"lat_p50_ns"] = float64(p.P50)
		extra[name+"lat_p99_ns"] = float64(p.P99)
	}
}

// Manifest implements workload.Manifester: with --keep, the objects the
// last run left in the bucket.
func (s *S3) Manifest() (uint64, []workload.Object) {
	out := make([]workload.Object, len(s.kept))
	for i, o := range s.kept {
		out[i] = workload.Object{Key: o.key, Size: o.size, Seed: o.seed}
	}
	s.kept = nil
	return s.content.Seed, out
}

// Outputs implements workload.Outputter: with --keep, the keys the last
// run left in the bucket, in the order its workers wrote them (a plan's
// setup step hands them on as {{ids}}).
func (s *S3) Outputs() []string {
	out := make([]string, len(s.kept))
	for i, o := range s.kept {
		out[i] = o.key
	}
	s.kept = nil
	return out
}

// Close removes the prepared objects unless --keep.
func (s *S3) Close() error {
	if s.c != nil && !s.opts.Keep {
		s.remove(s.ctx, append(slices.Clip(s.pool), s.reserve...))
	}
	return nil
}

// cleanupGrace is how long removing what a run wrote may go on after
// Ctrl-C or SIGTERM: a tidy bucket is worth a second, not a hang.
const cleanupGrace = time.Second

// remove deletes objects in batches; it is not timed. Once ctx ends it
// has cleanupGrace more.
func (s *S3) remove(ctx context.Context, objs []object) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(cleanupGrace, cancel) })
	defer stop()
	ch := make(chan minio.ObjectInfo, 1000)
	go func() {
		defer close(ch)
		for _, o := range objs {
			ch <- minio.ObjectInfo{Key: o.key}
		}
	}()
	for range s.c.RemoveObjects(rctx, s.opts.Bucket, ch, minio.RemoveObjectsOptions{}) {
	}
}

// httpTrace timestamps the first response byte of a worker's operation
// (the first of its requests, for operations that make several at once).
func httpTrace(ctx context.Context, clock metrics.Clock, firstByte *atomic.Int64) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotFirstResponseByte: func() { firstByte.CompareAndSwap(0, clock.Now()) },
	})
}
