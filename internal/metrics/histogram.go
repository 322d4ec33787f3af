package metrics

import (
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Latency histograms cover 1 ns to 1 hour with 3 significant digits; a value
// beyond the range is clamped to the highest trackable value and still counted.
const (
	minLatencyNs = 1
	maxLatencyNs = int64(3600e9)
	sigFigs      = 3
	// Per-second histograms only feed p50/p99 of a one-second bucket, so
	// they use 2 significant digits (about 1% resolution) to stay small.
	secondSigFigs = 2
)

// NewHistogram returns an empty latency histogram in nanoseconds.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(minLatencyNs, maxLatencyNs, sigFigs)
}

func newSecondHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(minLatencyNs, maxLatencyNs, secondSigFigs)
}

func recordClamped(h *hdrhistogram.Histogram, v int64) {
	if v < minLatencyNs {
		v = minLatencyNs
	}
	if v > maxLatencyNs {
		v = maxLatencyNs
	}
	// The value is inside the trackable range, so RecordValue cannot fail.
	_ = h.RecordValue(v)
}

// RecordLatency adds one latency to h, clamped to the trackable range.
func RecordLatency(h *hdrhistogram.Histogram, latencyNs int64) { recordClamped(h, latencyNs) }

// EncodeHistogram returns the compressed, base64 encoded form of h that
// HdrHistogram implementations in other languages can read too.
func EncodeHistogram(h *hdrhistogram.Histogram) (string, error) {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encode histogram: %w", err)
	}
	return string(b), nil
}

// DecodeHistogram is the inverse of EncodeHistogram.
func DecodeHistogram(s string) (*hdrhistogram.Histogram, error) {
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	return h, nil
}

// Percentiles are the latency quantiles every report shows.
type Percentiles struct {
	P50  int64   `json:"p50"`
	P90  int64   `json:"p90"`
	P99  int64   `json:"p99"`
	P999 int64   `json:"p999"`
	Max  int64   `json:"max"`
	Min  int64   `json:"min"`
	Mean float64 `json:"mean"`
}

// PercentilesOf reads the report quantiles off h; all zero for an empty h.
// Max and Min are the 100th and 0th percentiles, the values HdrHistogram's
// Max and Min give: its percentiles scan the counts directly, where Max
// walks every bucket through its iterator (Mean still does).
func PercentilesOf(h *hdrhistogram.Histogram) Percentiles {
	if h == nil || h.TotalCount() == 0 {
		return Percentiles{}
	}
	return Percentiles{
		P50:  h.ValueAtQuantile(50),
		P90:  h.ValueAtQuantile(90),
		P99:  h.ValueAtQuantile(99),
		P999: h.ValueAtQuantile(99.9),
		Max:  h.ValueAtQuantile(100),
		Min:  h.ValueAtQuantile(0),
		Mean: h.Mean(),
	}
}

// CountAbove is how many of h's values lie above v, to h's precision (0
// for a nil h).
func CountAbove(h *hdrhistogram.Histogram, v int64) int64 {
	if h == nil {
		return 0
	}
	var n int64
	for _, b := range h.Distribution() {
		if b.From > v {
			n += b.Count
		}
	}
	return n
}

// RecordLatencyN adds n occurrences of one latency to h, clamped to the
// trackable range (used to replay other tools' histograms).
func RecordLatencyN(h *hdrhistogram.Histogram, latencyNs, n int64) {
	latencyNs = max(minLatencyNs, min(maxLatencyNs, latencyNs))
	_ = h.RecordValues(latencyNs, n)
}

// MergeHistogram adds h into into and returns the sum (into itself, or a
// new histogram): a copy of h when into is nil. Two histograms of one
// geometry — every histogram iolab records — add count by count, which is
// many times faster than HdrHistogram's Merge (it re-records every
// non-empty bucket through an iterator: most of what reading a load of
// 100 segments cost); histograms of different geometries merge by value.
func MergeHistogram(into, h *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	switch {
	case h == nil:
		return into
	case into == nil:
		return h.Clone()
	}
	a, b := into.Export(), h.Export()
	if a.LowestTrackableValue != b.LowestTrackableValue || a.HighestTrackableValue != b.HighestTrackableValue ||
		a.SignificantFigures != b.SignificantFigures || len(a.Counts) != len(b.Counts) || a.IntegerToDoubleConversionRatio != b.IntegerToDoubleConversionRatio {
		into.Merge(h)
		return into
	}
	for i, c := range b.Counts {
		a.Counts[i] += c
	}
	return hdrhistogram.Import(a)
}

// HistogramSum adds many histograms into one array of counts: each added
// costs one copy of its counts and an addition, where MergeHistogram
// costs three copies. The zero value is an empty sum.
type HistogramSum struct {
	sum   *hdrhistogram.Snapshot
	other *hdrhistogram.Histogram // histograms of another geometry, merged by value
}

// Add adds h (nil adds nothing).
func (s *HistogramSum) Add(h *hdrhistogram.Histogram) {
	if h == nil {
		return
	}
	b := h.Export()
	switch a := s.sum; {
	case a == nil:
		s.sum = b
	case a.LowestTrackableValue == b.LowestTrackableValue && a.HighestTrackableValue == b.HighestTrackableValue &&
		a.SignificantFigures == b.SignificantFigures && len(a.Counts) == len(b.Counts) && a.IntegerToDoubleConversionRatio == b.IntegerToDoubleConversionRatio:
		for i, c := range b.Counts {
			a.Counts[i] += c
		}
	default:
		s.other = MergeHistogram(s.other, h)
	}
}

// Histogram is the sum; nil when nothing was added.
func (s *HistogramSum) Histogram() *hdrhistogram.Histogram {
	if s.sum == nil {
		return s.other
	}
	return MergeHistogram(hdrhistogram.Import(s.sum), s.other)
}
