package metrics

import (
	"encoding/json"
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The wire form of a Result: what a run measured in another process (a
// job run as a process of its own, as fio runs its jobs) handed to the one
// that merges it, exactly — histograms in HdrHistogram's compressed
// encoding. Frames, the server's and the machine's seconds and profiles
// are not carried: they are never measured by a job process.
type wireResult struct {
	Start            time.Time          `json:"start"`
	DurationNs       int64              `json:"duration_ns"`
	ByOp             map[string]wireOp  `json:"by_op"`
	Errors           int64              `json:"errors"`
	FirstError       string             `json:"first_error,omitempty"`
	Series           []Second           `json:"series"`
	CPUUserS         float64            `json:"cpu_user_s"`
	CPUSysS          float64            `json:"cpu_sys_s"`
	TimingOverheadNs float64            `json:"timing_overhead_ns"`
	Notes            []Note             `json:"notes,omitempty"`
	ErrorCodes       map[string]int64   `json:"error_codes,omitempty"`
	Extra            map[string]float64 `json:"extra,omitempty"`
}

type wireOp struct {
	Ops      int64   `json:"ops"`
	Bytes    int64   `json:"bytes"`
	Errors   int64   `json:"errors"`
	ActiveS  float64 `json:"active_s,omitempty"`
	Lat      string  `json:"lat,omitempty"`
	TTFB     string  `json:"ttfb,omitempty"`
	Response string  `json:"response,omitempty"`
	StartLag string  `json:"start_lag,omitempty"`
}

// MarshalWire encodes r for another process to read back with
// UnmarshalWire.
func (r *Result) MarshalWire() ([]byte, error) {
	w := wireResult{Start: r.Start, DurationNs: int64(r.Duration), ByOp: map[string]wireOp{}, Errors: r.Errors, FirstError: r.FirstError,
		Series: r.Series, CPUUserS: r.CPUUserS, CPUSysS: r.CPUSysS, TimingOverheadNs: r.TimingOverheadNs, Notes: r.Notes,
		ErrorCodes: r.ErrorCodes, Extra: r.Extra}
	for d, s := range r.ByOp {
		if s.Ops == 0 && s.Errors == 0 && s.Lat == nil {
			continue
		}
		o := wireOp{Ops: s.Ops, Bytes: s.Bytes, Errors: s.Errors, ActiveS: s.ActiveS}
		for _, h := range []struct {
			h   *hdrhistogram.Histogram
			dst *string
		}{{s.Lat, &o.Lat}, {s.TTFB, &o.TTFB}, {s.Response, &o.Response}, {s.StartLag, &o.StartLag}} {
			if h.h == nil {
				continue
			}
			enc, err := EncodeHistogram(h.h)
			if err != nil {
				return nil, err
			}
			*h.dst = enc
		}
		w.ByOp[Op(d).String()] = o
	}
	return json.Marshal(w)
}

// UnmarshalWire decodes what MarshalWire encoded.
func UnmarshalWire(b []byte) (*Result, error) {
	var w wireResult
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("a result from another process: %w", err)
	}
	r := &Result{Start: w.Start, Duration: time.Duration(w.DurationNs), Errors: w.Errors, FirstError: w.FirstError, Series: w.Series,
		CPUUserS: w.CPUUserS, CPUSysS: w.CPUSysS, TimingOverheadNs: w.TimingOverheadNs, Notes: w.Notes, ErrorCodes: w.ErrorCodes, Extra: w.Extra}
	for name, o := range w.ByOp {
		d, ok := ParseOp(name)
		if !ok {
			return nil, fmt.Errorf("a result from another process: unknown operation %q", name)
		}
		s := &r.ByOp[d]
		s.Ops, s.Bytes, s.Errors, s.ActiveS = o.Ops, o.Bytes, o.Errors, o.ActiveS
		for _, h := range []struct {
			enc string
			dst **hdrhistogram.Histogram
		}{{o.Lat, &s.Lat}, {o.TTFB, &s.TTFB}, {o.Response, &s.Response}, {o.StartLag, &s.StartLag}} {
			if h.enc == "" {
				continue
			}
			dec, err := DecodeHistogram(h.enc)
			if err != nil {
				return nil, err
			}
			*h.dst = dec
		}
	}
	return r, nil
}
