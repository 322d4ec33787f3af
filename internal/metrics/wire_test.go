package metrics

import (
	"reflect"
	"testing"
	"time"
)

// A result crosses to another process whole: counts, seconds, figures,
// notes and every histogram, value for value.
func TestWireRoundTrip(t *testing.T) {
	r := &Result{Start: time.Unix(1700000000, 123456789).UTC(), Duration: 3*time.Second + 7, Errors: 2, FirstError: "read x: EIO",
		Series:   []Second{{T: 0, Ops: 10, Bytes: 40960, P50Ns: 1000, P99Ns: 5000, MaxNs: 9000}, {T: 1, Ops: 3}},
		CPUUserS: 0.25, CPUSysS: 1.5, TimingOverheadNs: 31, Notes: []Note{{Code: "c", Message: "m"}},
		ErrorCodes: map[string]int64{"read:EIO": 2}, Extra: map[string]float64{"gen_cpu_wait_s": 0.1, "late_starts": 4}}
	r.ByOp[Read].Ops, r.ByOp[Read].Bytes, r.ByOp[Read].Errors = 10, 40960, 2
	r.ByOp[Read].Lat, r.ByOp[Read].Response, r.ByOp[Read].StartLag = NewHistogram(), NewHistogram(), NewHistogram()
	r.ByOp[Sync].Ops, r.ByOp[Sync].Lat = 1, NewHistogram()
	for i := int64(1); i <= 1000; i++ {
		RecordLatency(r.ByOp[Read].Lat, i*1000)
		RecordLatency(r.ByOp[Read].Response, i*2000)
		RecordLatency(r.ByOp[Read].StartLag, i)
	}
	RecordLatency(r.ByOp[Sync].Lat, 7e6)
	b, err := r.MarshalWire()
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalWire(b)
	if err != nil {
		t.Fatal(err)
	}
	for d := range r.ByOp {
		w, g := r.ByOp[d], got.ByOp[d]
		for _, h := range []struct {
			name string
			w, g interface{ TotalCount() int64 }
		}{{"lat", w.Lat, g.Lat}, {"response", w.Response, g.Response}, {"start lag", w.StartLag, g.StartLag}, {"ttfb", w.TTFB, g.TTFB}} {
			wn, gn := reflect.ValueOf(h.w).IsNil(), reflect.ValueOf(h.g).IsNil()
			if wn != gn {
				t.Fatalf("%s %s: nil %v, came back nil %v", Op(d), h.name, wn, gn)
			}
		}
		if w.Lat != nil && (!w.Lat.Equals(g.Lat) || w.Lat.ValueAtQuantile(99) != g.Lat.ValueAtQuantile(99)) {
			t.Errorf("%s: the latency histogram changed on the way", Op(d))
		}
		if w.Response != nil && !w.Response.Equals(g.Response) || w.StartLag != nil && !w.StartLag.Equals(g.StartLag) {
			t.Errorf("%s: the response or start-lag histogram changed on the way", Op(d))
		}
		w.Lat, w.TTFB, w.Response, w.StartLag = nil, nil, nil, nil
		g.Lat, g.TTFB, g.Response, g.StartLag = nil, nil, nil, nil
		if w != g {
			t.Errorf("%s: %+v came back %+v", Op(d), w, g)
		}
	}
	r.ByOp, got.ByOp = [NumOps]OpStats{}, [NumOps]OpStats{}
	if !reflect.DeepEqual(r, got) {
		t.Errorf("\n sent %+v\n came %+v", r, got)
	}
	if _, err := UnmarshalWire([]byte(`{"by_op":{"nosuch":{}}}`)); err == nil {
		t.Error("an unknown operation was taken")
	}
}
