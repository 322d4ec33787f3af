package metrics

import (
	"math/rand/v2"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Merging per-worker histograms must give exactly the percentiles of one
// histogram that saw every operation, and never their average.
func TestMergeIsExact(t *testing.T) {
	t.Parallel()
	series := NewSeries()
	all := NewHistogram()
	rng := rand.New(rand.NewPCG(1, 2))
	recs := []*Recorder{series.NewRecorder(), series.NewRecorder(), series.NewRecorder(), series.NewRecorder()}
	for w, rec := range recs {
		// Workers with very different latency: an average of their p99s
		// would be far from the p99 of all operations.
		scale := int64(1000 * (w*w*10 + 1))
		for i := 0; i < 5000; i++ {
			lat := scale + rng.Int64N(scale)
			end := int64(i) * int64(time.Millisecond) // spreads over 5 seconds
			rec.Record(Read, 4096, end, lat)
			RecordLatency(all, lat)
		}
		rec.Close()
	}
	res := Merge(recs, series, time.Now(), 5*time.Second)
	got, want := PercentilesOf(res.ByOp[Read].Lat), PercentilesOf(all)
	if got != want {
		t.Fatalf("merged percentiles %+v, want %+v", got, want)
	}
	if res.ByOp[Read].Ops != 20000 || res.ByOp[Read].Bytes != 20000*4096 {
		t.Fatalf("ops=%d bytes=%d", res.ByOp[Read].Ops, res.ByOp[Read].Bytes)
	}
	if res.ByOp[Write].Lat != nil {
		t.Fatal("write histogram allocated without writes")
	}
	var sum int64
	for i, s := range res.Series {
		if s.T != int64(i) {
			t.Fatalf("series[%d].T = %d", i, s.T)
		}
		sum += s.Ops
		if s.Ops == 1000*4 && s.MaxNs < s.P99Ns {
			t.Fatalf("second %d: max %d < p99 %d", i, s.MaxNs, s.P99Ns)
		}
	}
	if len(res.Series) != 5 || sum != 20000 {
		t.Fatalf("series has %d seconds and %d ops; want 5 and 20000", len(res.Series), sum)
	}
}

func TestSeriesFillsGapsAndKeepsOpenSecondsBounded(t *testing.T) {
	t.Parallel()
	series := NewSeries()
	fast, slow := series.NewRecorder(), series.NewRecorder()
	slow.Record(Write, 1, int64(500*time.Millisecond), 1)
	for s := int64(0); s < 10; s += 3 { // seconds 0, 3, 6, 9
		fast.Record(Read, 1, s*int64(time.Second), 1)
	}
	// slow is still in second 0, so seconds >= 0 stay open.
	if n := len(series.open); n == 0 {
		t.Fatal("no open seconds while a recorder lags")
	}
	slow.Close()
	fast.Close()
	if n := len(series.open); n != 0 {
		t.Fatalf("%d seconds left open after all recorders closed", n)
	}
	got := series.Seconds(12)
	if len(got) != 12 {
		t.Fatalf("got %d seconds, want 12", len(got))
	}
	wantOps := map[int64]int64{0: 2, 3: 1, 6: 1, 9: 1}
	for _, s := range got {
		if s.Ops != wantOps[s.T] {
			t.Errorf("second %d: ops %d, want %d", s.T, s.Ops, wantOps[s.T])
		}
	}
}

func TestHistogramEncodingRoundTrip(t *testing.T) {
	t.Parallel()
	h := NewHistogram()
	for v := int64(1); v < 1e9; v *= 3 {
		RecordLatency(h, v)
	}
	s, err := EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeHistogram(s)
	if err != nil {
		t.Fatal(err)
	}
	if PercentilesOf(back) != PercentilesOf(h) || back.TotalCount() != h.TotalCount() {
		t.Fatalf("round trip changed the histogram: %+v vs %+v", PercentilesOf(back), PercentilesOf(h))
	}
}

// Seconds with few operations hand their latencies over as values, busier
// ones as histograms; either way, and mixed within a run, the run's
// histogram per direction is exactly the one of every latency recorded.
func TestMergeIsExactAtAnyRate(t *testing.T) {
	t.Parallel()
	series := NewSeries()
	want := map[Op]*hdrhistogram.Histogram{Read: NewHistogram(), Write: NewHistogram()}
	rng := rand.New(rand.NewPCG(3, 4))
	// Operations per second: values only, exactly full, one past full
	// (spills), and far past.
	rates := []int{7, secValues, secValues + 1, 3000}
	recs := make([]*Recorder, len(rates))
	for i := range recs {
		recs[i] = series.NewRecorder()
	}
	for i, rec := range recs {
		for sec := int64(0); sec < 3; sec++ {
			for k := 0; k < rates[i]; k++ {
				d := Read
				if rng.IntN(3) == 0 {
					d = Write
				}
				lat := 1 + rng.Int64N(50_000_000)
				end := sec*int64(time.Second) + int64(k)*int64(time.Second)/int64(rates[i])
				rec.Record(d, 100, end, lat)
				RecordLatency(want[d], lat)
			}
		}
		rec.Close()
	}
	res := Merge(recs, series, time.Now(), 3*time.Second)
	for d, h := range want {
		got := res.ByOp[d].Lat
		if got == nil || !got.Equals(h) || res.ByOp[d].Ops != h.TotalCount() {
			t.Fatalf("%s: merged histogram differs from the recorded latencies (%d ops, want %d)", d, res.ByOp[d].Ops, h.TotalCount())
		}
	}
	var sum int64
	for _, s := range res.Series {
		sum += s.Ops
	}
	if total := want[Read].TotalCount() + want[Write].TotalCount(); sum != total {
		t.Fatalf("series holds %d ops, want %d", sum, total)
	}
}

// Drain hands over finished seconds once, in order, with empty seconds
// filled in; what it handed over is not kept, and Seconds continues after
// it.
func TestDrain(t *testing.T) {
	t.Parallel()
	s := NewSeries()
	a, b := s.NewRecorder(), s.NewRecorder()
	sec := int64(time.Second)
	a.Record(Read, 10, 0*sec+1, 5)
	b.Record(Read, 10, 0*sec+2, 5)
	a.Record(Read, 10, 3*sec+1, 5) // a moves to second 3; b is still in 0
	if got := s.Drain(); len(got) != 0 {
		t.Fatalf("drained %v while b still fills second 0", got)
	}
	b.Record(Read, 10, 2*sec+1, 5) // b moves to 2: seconds 0 and 1 are final
	got := s.Drain()
	if len(got) != 2 || got[0].T != 0 || got[0].Ops != 2 || got[1].T != 1 || got[1].Ops != 0 {
		t.Fatalf("drained %+v", got)
	}
	if again := s.Drain(); len(again) != 0 || len(s.closed) != 0 {
		t.Fatalf("drained twice: %+v, or kept %+v", again, s.closed)
	}
	a.Close()
	b.Close()
	rest := s.Seconds(5)
	if len(rest) != 3 || rest[0].T != 2 || rest[0].Ops != 1 || rest[1].T != 3 || rest[1].Ops != 1 || rest[2].T != 4 {
		t.Fatalf("rest %+v", rest)
	}
}

// IOPS are fio's: data operations, not the fsyncs between them.
func TestOpsLeaveSyncsOut(t *testing.T) {
	var r Result
	r.ByOp[Write] = OpStats{Ops: 10, Bytes: 40960}
	r.ByOp[Sync] = OpStats{Ops: 10}
	r.ByOp[Read] = OpStats{Ops: 5, Bytes: 20480}
	if r.Ops() != 15 || r.Bytes() != 61440 {
		t.Fatalf("ops %d bytes %d, want 15 and 61440", r.Ops(), r.Bytes())
	}
}

// A long operation's bytes are booked over the seconds it lasted, in
// proportion to its time in each (fio's bandwidth log), not all in the
// second it ended: a single 10 MiB upload over 3.5 s shows in every
// second's bytes. Its count stays in the second it completed, and the
// run's totals are unchanged.
func TestLongOperationSpreadsItsBytes(t *testing.T) {
	t.Parallel()
	const sec = int64(time.Second)
	series := NewSeries()
	rec, idle := series.NewRecorder(), series.NewRecorder()
	rec.Record(Upload, 10<<20, 3*sec+sec/2, 3*sec+sec/2) // from 0 to 3.5 s
	rec.Record(Upload, 1<<20, 5*sec+sec/2, 1*sec)        // from 4.5 to 5.5 s
	rec.Close()
	idle.Close()
	res := Merge([]*Recorder{rec, idle}, series, time.Now(), 6*time.Second)
	want := []struct{ ops, bytes int64 }{
		{0, 10 << 20 * 2 / 7}, {0, 10 << 20 * 2 / 7}, {0, 10 << 20 * 2 / 7}, {1, 10<<20 - 3*(10<<20*2/7)},
		{0, 1 << 19}, {1, 1 << 19},
	}
	if len(res.Series) != len(want) {
		t.Fatalf("%d seconds: %+v", len(res.Series), res.Series)
	}
	var total int64
	for i, s := range res.Series {
		if s.Ops != want[i].ops || s.Bytes < want[i].bytes-1 || s.Bytes > want[i].bytes+1 {
			t.Errorf("second %d: %d ops %d bytes, want %d ops about %d bytes", i, s.Ops, s.Bytes, want[i].ops, want[i].bytes)
		}
		total += s.Bytes
	}
	if total != 11<<20 || res.ByOp[Upload].Bytes != 11<<20 || res.ByOp[Upload].Ops != 2 {
		t.Fatalf("seconds hold %d bytes, the run %d bytes in %d uploads", total, res.ByOp[Upload].Bytes, res.ByOp[Upload].Ops)
	}
}
