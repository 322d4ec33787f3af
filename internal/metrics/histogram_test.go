package metrics

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// MergeHistogram's sum is Merge's: the same counts, percentiles, min and
// max, whichever way two histograms of iolab's geometry are added, and a
// histogram of another geometry still merges by value.
func TestMergeHistogramIsMerge(t *testing.T) {
	t.Parallel()
	a, b := NewHistogram(), NewHistogram()
	for i := range 5000 {
		RecordLatency(a, int64(1000+37*i))
		RecordLatency(b, int64(3_000_000+i*i))
	}
	want := a.Clone()
	want.Merge(b)
	got := MergeHistogram(a.Clone(), b)
	if !got.Equals(want) || got.TotalCount() != 10000 || got.Max() != want.Max() || got.Min() != want.Min() ||
		got.ValueAtQuantile(99.9) != want.ValueAtQuantile(99.9) {
		t.Fatalf("sum: %d values, p99.9 %d, want %d values, p99.9 %d", got.TotalCount(), got.ValueAtQuantile(99.9), want.TotalCount(), want.ValueAtQuantile(99.9))
	}
	if c := MergeHistogram(nil, b); c == b || !c.Equals(b) {
		t.Fatal("into nil: want a copy of h")
	}
	if MergeHistogram(a, nil) != a {
		t.Fatal("nil h: want into")
	}
	other := hdrhistogram.New(1, 1_000_000, 2)
	_ = other.RecordValue(500)
	if m := MergeHistogram(a.Clone(), other); m.TotalCount() != 5001 {
		t.Fatalf("another geometry: %d values", m.TotalCount())
	}
}

// A HistogramSum of several histograms is their Merge, whatever their
// geometry; empty, it is nil.
func TestHistogramSum(t *testing.T) {
	t.Parallel()
	var sum HistogramSum
	if sum.Histogram() != nil {
		t.Fatal("an empty sum is not nil")
	}
	want := NewHistogram()
	for k := range 5 {
		h := NewHistogram()
		for i := range 1000 {
			RecordLatency(h, int64(1000*(k+1)+i*i))
		}
		sum.Add(h)
		want.Merge(h)
	}
	other := hdrhistogram.New(1, 1_000_000, 2)
	_ = other.RecordValue(777)
	sum.Add(other)
	want.Merge(other)
	sum.Add(nil)
	if got := sum.Histogram(); got.TotalCount() != 5001 || got.ValueAtQuantile(50) != want.ValueAtQuantile(50) || got.Max() != want.Max() {
		t.Fatalf("sum: %d values, p50 %d, max %d; want p50 %d, max %d", got.TotalCount(), got.ValueAtQuantile(50), got.Max(), want.ValueAtQuantile(50), want.Max())
	}
}

// PercentilesOf's max and min are HdrHistogram's Max and Min, for
// histograms of one value, of values spread over every magnitude iolab
// records, and of values clamped at both ends of its range.
func TestPercentilesMaxMinAreHistograms(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 150 {
		h := NewHistogram()
		switch n := 1 + rng.IntN(20000); trial % 3 {
		case 0:
			RecordLatency(h, rng.Int64N(1e12))
		case 1:
			for range n {
				RecordLatency(h, int64(math.Exp(rng.Float64()*28))) // 1 ns to 1.4e12, below the clamp
			}
		default:
			for range n {
				RecordLatency(h, rng.Int64N(1<<62)-1<<61)
			}
		}
		p := PercentilesOf(h)
		if p.Max != h.Max() || p.Min != h.Min() {
			t.Fatalf("trial %d: max %d, min %d; HdrHistogram's max %d, min %d", trial, p.Max, p.Min, h.Max(), h.Min())
		}
	}
}
