package s3

import (
	"fmt"
	"math/bits"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/units"
)

// sizeBuckets gives per-size statistics when objects have several sizes:
// each listed size is a bucket; a range is cut at powers of two. A worker
// owns one; they are merged after the run.
type sizeBuckets struct {
	sizes units.Sizes
	by    map[bucketKey]*bucketStats
}

type bucketKey struct {
	op     metrics.Op
	bucket int64 // the listed size, or the power of two at or below it
}

type bucketStats struct {
	ops, bytes int64
	lat        *hdrhistogram.Histogram
}

func newSizeBuckets(s units.Sizes) *sizeBuckets {
	if s.Max == 0 && len(s.Fixed) == 1 {
		return nil // one size: the per-operation stats are the bucket
	}
	return &sizeBuckets{sizes: s, by: map[bucketKey]*bucketStats{}}
}

func (b *sizeBuckets) bucket(size int64) int64 {
	if b.sizes.Max > 0 {
		return 1 << (63 - bits.LeadingZeros64(uint64(max(size, 1))))
	}
	return size
}

func (b *sizeBuckets) record(op metrics.Op, size, latencyNs int64) {
	if b == nil || size <= 0 {
		return
	}
	k := bucketKey{op, b.bucket(size)}
	s := b.by[k]
	if s == nil {
		s = &bucketStats{lat: metrics.NewHistogram()}
		b.by[k] = s
	}
	s.ops++
	s.bytes += size
	metrics.RecordLatency(s.lat, latencyNs)
}

// addTo merges the workers' buckets into the run's extra figures:
// size.<op>.<bucket>.{ops_per_s,bytes_per_s,lat_p50_ns,lat_p99_ns}.
func addSizeBuckets(all []*sizeBuckets, duration time.Duration, extra map[string]float64) {
	merged := map[bucketKey]*bucketStats{}
	for _, b := range all {
		if b == nil {
			continue
		}
		for k, s := range b.by {
			m := merged[k]
			if m == nil {
				m = &bucketStats{lat: metrics.NewHistogram()}
				merged[k] = m
			}
			m.ops += s.ops
			m.bytes += s.bytes
			m.lat.Merge(s.lat)
		}
	}
	secs := duration.Seconds()
	for k, s := range merged {
		p := metrics.PercentilesOf(s.lat)
		name := fmt.Sprintf("size.%s.%s.", k.op, units.FormatSize(k.bucket))
		extra[name+"ops_per_s"] = float64(s.ops) / secs
		extra[name+"bytes_per_s"] = float64(s.bytes) / secs
		extra[name+"lat_p50_ns"] = float64(p.P50)
		extra[name+"lat_p99_ns"] = float64(p.P99)
	}
}
