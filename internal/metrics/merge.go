package metrics

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// MergeTogether merges the results of runs that ran at the same time
// (the segments of one load): operations, bytes and errors add up,
// histograms merge exactly, seconds add up by wall clock, the run spans
// from the first start to the last end, and each figure of Extra merges as
// the catalogue declares it.
func MergeTogether(rs []*Result) *Result {
	out := &Result{Start: rs[0].Start, ErrorCodes: map[string]int64{}, Extra: map[string]float64{}}
	var end time.Time
	for _, r := range rs {
		if r.Start.Before(out.Start) {
			out.Start = r.Start
		}
		end = later(end, r.Start.Add(r.Duration))
	}
	out.Duration = end.Sub(out.Start)
	seconds := map[int64]*Second{}
	seen := map[Note]bool{}
	for _, r := range rs {
		for d := range r.ByOp {
			o, s := &out.ByOp[d], r.ByOp[d]
			o.Ops, o.Bytes, o.Errors = o.Ops+s.Ops, o.Bytes+s.Bytes, o.Errors+s.Errors
			o.ActiveS = max(o.ActiveS, s.ActiveS)
			o.Lat = MergeHistogram(o.Lat, s.Lat)
			o.TTFB = MergeHistogram(o.TTFB, s.TTFB)
			o.Response = MergeHistogram(o.Response, s.Response)
			o.StartLag = MergeHistogram(o.StartLag, s.StartLag)
		}
		out.Errors += r.Errors
		if out.FirstError == "" {
			out.FirstError = r.FirstError
		}
		out.CPUUserS += r.CPUUserS
		out.CPUSysS += r.CPUSysS
		out.TimingOverheadNs = max(out.TimingOverheadNs, r.TimingOverheadNs)
		for k, v := range r.ErrorCodes {
			out.ErrorCodes[k] += v
		}
		for k, v := range r.Extra {
			mergeExtra(out.Extra, k, v)
		}
		for _, note := range r.Notes {
			if !seen[note] {
				seen[note] = true
				out.Notes = append(out.Notes, note)
			}
		}
		// Seconds meet by wall clock: a segment that started later adds
		// to the seconds it shares with the others.
		for _, s := range r.Series {
			at := r.Start.Unix() + s.T
			m := seconds[at]
			if m == nil {
				m = &Second{T: at}
				seconds[at] = m
			}
			// Per-second percentiles do not merge; the worst segment's
			// bounds the second's.
			m.Ops, m.Bytes = m.Ops+s.Ops, m.Bytes+s.Bytes
			m.P50Ns, m.P99Ns, m.MaxNs = max(m.P50Ns, s.P50Ns), max(m.P99Ns, s.P99Ns), max(m.MaxNs, s.MaxNs)
		}
	}
	if failed, ok := out.Extra["frames_failed"]; ok {
		out.Extra["frames_success_pct"] = 100 * out.Extra["frames_done"] / max(out.Extra["frames_done"]+failed, 1)
	}
	for _, r := range rs {
		out.Frames = append(out.Frames, r.Frames...)
	}
	slices.SortStableFunc(out.Frames, func(a, b FrameTiming) int { return cmp.Compare(a.Pos, b.Pos) })
	for _, at := range slices.Sorted(maps.Keys(seconds)) {
		s := *seconds[at]
		s.T = at - out.Start.Unix()
		out.Series = append(out.Series, s)
	}
	return out
}

// mergeExtra merges a segment's figure into the load's as the catalogue
// says the metric merges: counts and rates of segments that ran at once
// add up; peaks, the worst of anything, a host's stall and a process's
// time are the largest segment's; a pass is every segment's; percentiles
// and costs per operation are recomputed from the merged run (its
// histograms), never merged from figures. A plan's own metric, which no
// catalogue declares, adds up.
func mergeExtra(into map[string]float64, k string, v float64) {
	prev, seen := into[k]
	def, _ := Describe(k)
	switch def.Merge {
	case MergeMin:
		if !seen || v < prev {
			into[k] = v
		}
	case MergeMax:
		into[k] = max(prev, v)
	case MergeRecompute:
	default:
		into[k] = prev + v
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
