package metrics

import (
	"testing"
	"time"
)

// A paced operation's lateness is split where it arose: up to when its
// worker asked for its slot (the operations before it kept the worker
// busy: the target's), and after the later of that and its due time (a
// free worker that did not run: the generator's own delay). Every start
// late past LateAfter counts, whatever made it late.
func TestRecordPacedSplitsLateness(t *testing.T) {
	t.Parallel()
	const ms = int64(time.Millisecond)
	for _, c := range []struct {
		name                 string
		due, asked, start    int64
		lag, own             int64
		late, ownLate, paced bool
	}{
		{name: "on time", due: 10 * ms, asked: 5 * ms, start: 10*ms + 50_000, lag: 50_000, own: 50_000},
		{name: "woke late", due: 10 * ms, asked: 5 * ms, start: 22 * ms, lag: 12 * ms, own: 12 * ms, late: true, ownLate: true},
		{name: "asked late, started at once", due: 10 * ms, asked: 30 * ms, start: 30*ms + 20_000, lag: 20*ms + 20_000, own: 20_000, late: true},
		{name: "asked late, then waited for a CPU", due: 10 * ms, asked: 30 * ms, start: 35 * ms, lag: 25 * ms, own: 5 * ms, late: true, ownLate: true},
	} {
		rec := NewSeries().NewRecorder()
		const service = 3 * time.Millisecond
		end := c.start + int64(service)
		rec.Record(Read, 4096, end, int64(service))
		rec.RecordPaced(Read, c.due, c.asked)
		rec.Close()
		res := Merge([]*Recorder{rec}, rec.series, time.Now(), time.Second)
		ds := res.ByOp[Read]
		if got := ds.Response.Max(); got < end-c.due-end/500 || got > end-c.due+end/500 {
			t.Errorf("%s: response %d, want %d", c.name, got, end-c.due)
		}
		if got := ds.StartLag.Max(); got < c.lag*999/1000 || got > c.lag*1001/1000 {
			t.Errorf("%s: start lag %d, want %d", c.name, got, c.lag)
		}
		want := map[string]float64{"late_starts": b2f(c.late), "gen_late_starts": b2f(c.ownLate), "gen_delay_s": float64(c.own) / 1e9}
		for k, v := range want {
			if res.Extra[k] != v {
				t.Errorf("%s: %s %v, want %v", c.name, k, res.Extra[k], v)
			}
		}
		m := RunMetrics(res)
		if m["late_start_pct"] != 100*b2f(c.late) || m["read.start_lag_p99_ns"] != float64(ds.StartLag.ValueAtQuantile(99)) {
			t.Errorf("%s: derived %v", c.name, m)
		}
	}
	// Unpaced: no response, no lag, no late starts at all (not zero).
	rec := NewSeries().NewRecorder()
	rec.Record(Write, 1, 5*ms, ms)
	rec.Close()
	res := Merge([]*Recorder{rec}, rec.series, time.Now(), time.Second)
	if _, ok := res.Extra["late_starts"]; ok || res.ByOp[Write].StartLag != nil || res.ByOp[Write].Response != nil {
		t.Errorf("an unpaced run: %v %v", res.Extra, res.ByOp[Write])
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
