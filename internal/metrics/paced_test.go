package metrics

import (
	"testing"
	"time"
)

// A paced operation's lateness is split where it arose: up to when its
// worker asked for its slot (the operations before it kept the worker
// busy: the target's), and after the later of that and its due time (a
// free worker that did not run: the generator's own delay). A worker's
// first start had no operations before: it was free from when it joined
// the run (the run's start; a reserve worker, when the schedule called it
// in). Every start late past LateAfter counts, whatever made it late.
func TestRecordPacedSplitsLateness(t *testing.T) {
	t.Parallel()
	const ms = int64(time.Millisecond)
	for _, c := range []struct {
		name                      string
		joined, due, asked, start int64
		lag, own                  int64
		late, ownLate, paced      bool
	}{
		{name: "on time", due: 10 * ms, asked: 5 * ms, start: 10*ms + 50_000, lag: 50_000, own: 50_000},
		{name: "woke late", due: 10 * ms, asked: 5 * ms, start: 22 * ms, lag: 12 * ms, own: 12 * ms, late: true, ownLate: true},
		{name: "asked late, started at once", joined: -1, due: 10 * ms, asked: 30 * ms, start: 30*ms + 20_000, lag: 20*ms + 20_000, own: 20_000, late: true},
		{name: "asked late, then waited for a CPU", joined: -1, due: 10 * ms, asked: 30 * ms, start: 35 * ms, lag: 25 * ms, own: 5 * ms, late: true, ownLate: true},
		{name: "slow to get going", due: 10 * ms, asked: 30 * ms, start: 30*ms + 20_000, lag: 20*ms + 20_000, own: 20*ms + 20_000, late: true, ownLate: true},
		{name: "called in from the reserve late", joined: 30 * ms, due: 10 * ms, asked: 30 * ms, start: 30*ms + 20_000, lag: 20*ms + 20_000, own: 20_000, late: true},
	} {
		rec := NewSeries().NewRecorder()
		rec.Joined(max(c.joined, 0))
		response := int64(0) // the most of any operation
		// joined < 0: a worker busy with an operation before, until it asked.
		if c.joined < 0 {
			rec.Record(Read, 4096, c.asked, c.asked)
			rec.RecordPaced(Read, 0, 0)
			response = c.asked
		}
		const service = 3 * time.Millisecond
		end := c.start + int64(service)
		rec.Record(Read, 4096, end, int64(service))
		rec.RecordPaced(Read, c.due, c.asked)
		rec.Close()
		res := Merge([]*Recorder{rec}, rec.series, time.Now(), time.Second)
		ds := res.ByOp[Read]
		response = max(response, end-c.due)
		if got := ds.Response.Max(); got < response-end/500 || got > response+end/500 {
			t.Errorf("%s: response %d, want %d", c.name, got, response)
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
		if m["late_start_pct"] != 100*b2f(c.late)/float64(ds.Ops) || m["read.start_lag_p99_ns"] != float64(ds.StartLag.ValueAtQuantile(99)) {
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

// A worker that runs one operation at a time is judged by what it did:
// after a 200 ms stall of its own, the starts it catches up on — asked
// for after the stall, due during it — were late by iolab's delay, not
// the target's; a worker that fell behind because every operation took
// 20 ms (far longer ago than the history it keeps), or a second step
// after each (an upload's download), was late by the target's; and one
// with operations in flight together is judged by when it asked alone.
func TestLatenessIsSplitByWhatTheWorkerDid(t *testing.T) {
	t.Parallel()
	const ms = int64(time.Millisecond)
	// then, when set, is a second operation the worker runs right after,
	// recorded but not paced (an upload's download, a sync).
	type op struct{ due, asked, start, ns, then int64 }
	// What the worker's own delay was, exactly: each start's lateness
	// less the time its operations before took within it.
	exact := func(ops []op) (ownLate, ownS float64) {
		for k, o := range ops {
			own := o.start - o.due
			for _, p := range ops[:k] {
				own -= max(min(p.start+p.ns, o.start)-max(p.start, o.due), 0)
			}
			if own > int64(LateAfter) {
				ownLate++
			}
			ownS += float64(max(own, 0)) / 1e9
		}
		return ownLate, ownS
	}
	run := func(ops []op) (late, own, delayS, share float64) {
		rec := NewSeries().NewRecorder()
		for _, o := range ops {
			rec.Record(Read, 1, o.start+o.ns, o.ns)
			rec.RecordPaced(Read, o.due, o.asked)
			if o.then > 0 {
				rec.Record(Write, 1, o.start+o.ns+o.then, o.then)
			}
		}
		rec.Close()
		res := Merge([]*Recorder{rec}, rec.series, time.Now(), time.Second)
		delayS = res.Extra["gen_delay_s"]
		return res.Extra["late_starts"], res.Extra["gen_late_starts"], delayS, delayS / RunMetrics(res)["start_lag_mean_ns"] * 1e9 / float64(res.ByOp[Read].Ops)
	}
	var stalled, slow, inFlight, twoSteps []op
	end := int64(0)
	for i := range int64(300) { // due every ms, served in 0.1 ms; the 10th start woken 200 ms late
		o := op{due: i * ms, asked: end, start: max(i*ms, end), ns: ms / 10}
		if i == 10 {
			o.start = 210 * ms
		}
		stalled, end = append(stalled, o), o.start+o.ns
	}
	end = 0
	for i := range int64(300) { // due every ms, served in 20 ms
		o := op{due: i * ms, asked: end, start: max(i*ms, end), ns: 20 * ms}
		slow, end = append(slow, o), o.start+o.ns
	}
	end = 0
	for i := range int64(300) { // due every ms, served in 1 ms, then 19 ms of an unpaced second step
		o := op{due: i * ms, asked: end, start: max(i*ms, end), ns: ms, then: 19 * ms}
		twoSteps, end = append(twoSteps, o), o.start+o.ns+o.then
	}
	for i := range int64(300) { // two in flight, each served in 20 ms: one started every 10 ms
		o := op{due: i * ms, asked: i * 10 * ms, start: i * 10 * ms, ns: 20 * ms} // asked when a slot freed
		inFlight = append(inFlight, o)
	}
	wantLate, wantS := exact(stalled)
	if late, own, s, share := run(stalled); late < 200 || own < wantLate*0.97 || own > wantLate*1.03 || s < wantS*0.97 || s > wantS*1.03 || share < 0.6 {
		t.Errorf("after a stall: %v starts late, %v of them by iolab (want %v); its delay %.4f s (want %.4f), %.2f of the lateness", late, own, wantLate, s, wantS, share)
	}
	if late, own, _, share := run(slow); late < 250 || own != 0 || share > 0.01 {
		t.Errorf("behind a slow target: %v starts late, %v of them by iolab; its delay %.3f of the lateness: want none", late, own, share)
	}
	if late, own, _, share := run(twoSteps); late < 250 || own != 0 || share > 0.01 {
		t.Errorf("behind a slow second step: %v starts late, %v of them by iolab; its delay %.3f of the lateness: want none", late, own, share)
	}
	if late, own, _, share := run(inFlight); late < 250 || own != 0 || share > 0.01 {
		t.Errorf("two in flight behind a slow target: %v starts late, %v of them by iolab; its delay %.3f of the lateness: want none", late, own, share)
	}
}
