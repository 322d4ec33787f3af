package metrics

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Workers writing to one latency log at once leave whole lines: every
// operation once, with its run, op, end, latency and bytes; and the lines
// hold exactly what the histograms hold.
func TestLatencyLogLinesAreWhole(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "lat.csv")
	log, err := CreateLatencyLog(path, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithLatencyLog(context.Background(), log, 42)
	series, clock := NewSeries(), NewClock()
	recs := make([]*Recorder, 8)
	for i := range recs {
		recs[i] = series.NewRecorder()
		recs[i].LogTo(ctx, clock)
	}
	const each = 20000
	var wg sync.WaitGroup
	for w, rec := range recs {
		wg.Go(func() {
			for i := range each {
				rec.Record(Read, int64(w), int64(i)*1000, int64(w*each+i+1))
			}
			rec.Close()
		})
	}
	wg.Wait()
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	res := Merge(recs, series, clock.Start(), 1)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if lines[0]+"\n" != LatencyLogHeader || len(lines) != 1+len(recs)*each {
		t.Fatalf("%d lines, the first %q", len(lines), lines[0])
	}
	seen := make([]bool, len(recs)*each+1)
	h := NewHistogram()
	for _, line := range lines[1:] {
		f := strings.Split(line, ",")
		lat, err := strconv.Atoi(f[3])
		if len(f) != 5 || f[0] != "42" || f[1] != "read" || err != nil || lat < 1 || lat >= len(seen) || seen[lat] {
			t.Fatalf("line %q", line)
		}
		seen[lat] = true
		if end, _ := strconv.ParseInt(f[2], 10, 64); end < clock.Start().UnixNano() {
			t.Fatalf("line %q ends before the run began", line)
		}
		RecordLatencyN(h, int64(lat), 1)
	}
	if got := res.ByOp[Read].Lat; got.TotalCount() != h.TotalCount() || got.ValueAtQuantile(99) != h.ValueAtQuantile(99) || got.Max() != h.Max() {
		t.Fatalf("the run's histogram (%d ops, p99 %d) and its log's (%d, %d)", got.TotalCount(), got.ValueAtQuantile(99), h.TotalCount(), h.ValueAtQuantile(99))
	}
	if _, err := CreateLatencyLog(filepath.Join(t.TempDir(), "no", "such", "dir.csv"), false); err == nil {
		t.Fatal("a log in a missing directory")
	}
}

// An operation that spans a second boundary is logged with its own bytes,
// whole, while the seconds book the bytes that moved in each (issue 44:
// the log had the last second's share, 36 of 400 lines short).
func TestLatencyLogBytesOfAnOperationAcrossSeconds(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "lat.csv")
	log, err := CreateLatencyLog(path, false)
	if err != nil {
		t.Fatal(err)
	}
	series, clock := NewSeries(), NewClock()
	rec := series.NewRecorder()
	rec.LogTo(WithLatencyLog(context.Background(), log, 1), clock)
	const size = 1 << 20
	rec.Record(Write, size, 500_000_000, 400_000_000)     // within second 0
	rec.Record(Write, size, 1_500_000_000, 1_000_000_000) // half in second 0, half in 1
	rec.Record(Write, size, 3_250_000_000, 1_000_000_000) // three quarters in second 2, one in 3
	rec.Close()
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")[1:]
	if len(lines) != 3 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if !strings.HasSuffix(l, ","+strconv.Itoa(size)) {
			t.Errorf("line %q: want the operation's %d bytes", l, size)
		}
	}
	res := Merge([]*Recorder{rec}, series, clock.Start(), 4_000_000_000)
	var want = []int64{size + size/2, size / 2, size - size/4, size / 4}
	for i, s := range res.Series {
		if s.T != int64(i) || s.Bytes != want[i] {
			t.Errorf("second %d: %d bytes, want %d", s.T, s.Bytes, want[i])
		}
	}
	if res.ByOp[Write].Bytes != 3*size {
		t.Errorf("the run moved %d bytes, want %d", res.ByOp[Write].Bytes, 3*size)
	}
}
