package plan

import (
	"strings"
	"testing"

	"github.com/iolab/iolab/internal/redact"
)

// A run judged by a percentile must hold 10/(1−q) operations for it to be
// more than its largest few; a metric of no percentile needs none.
func TestSLOMinOps(t *testing.T) {
	t.Parallel()
	for metric, want := range map[string]int64{"get.response_p99_ns": 1000, "download.response_p50_ns": 20, "read.lat_p99.9_ns": 10000,
		"put.lat_p90_ns": 100, "ops_per_s": 0, "cpu_per_op": 0, "x.lat_p100_ns": 0} {
		if got := (SLO{Metric: metric}).MinOps(); got != want {
			t.Errorf("%s: %d, want %d", metric, got, want)
		}
	}
}

// A search replays through the search its cell was stored with: today's,
// which widens its range, or — for a cell stored before it (no slo_walk) —
// the bisection under a fixed top in at most 8 loads.
func TestSearchOfAStoredCell(t *testing.T) {
	t.Parallel()
	o := SLO{Metric: "get.response_p99_ns", Below: 2e7, BelowText: "20ms", Precision: 0.05}
	params := o.Params(3)
	back, runs, ok := SLOOf(params)
	if s := back.NewSearch(runs); !ok || back.Fixed || !s.Widens || s.MaxSteps != SLOMaxSteps || runs != 3 {
		t.Errorf("today's: %+v, %d runs, widens %v, %d steps", back, runs, s.Widens, s.MaxSteps)
	}
	delete(params, "slo_walk")
	back, runs, ok = SLOOf(params)
	if s := back.NewSearch(runs); !ok || !back.Fixed || s.Widens || s.MaxSteps != 8 {
		t.Errorf("stored before: %+v, widens %v, %d steps", back, s.Widens, s.MaxSteps)
	}
}

// A plan's keys are masked by what they mean: a kind's secret options
// (secret-key, bearer) and names that say secret where no kind defines
// them (an environment's API_TOKEN) — never key-layout, whose "key" is an
// object's, nor login-token, which names a JSON field; their values are
// then not taken for secrets anywhere.
func TestPlanKeysMaskedByMeaning(t *testing.T) {
	text := `variants:
  - name: a
    env: {API_TOKEN: tok-env-0a1b2c3d}
workloads:
  - name: w
    s3: {endpoint: "http://127.0.0.1:1", bucket: b, secret-key: sk-0a1b2c3d4e, key-layout: "{prefix}/layout-kept-as-written"}
  - name: h
    http: {url: "http://127.0.0.1:1/x", bearer: br-0a1b2c3d4e, login-token: field-kept-as-written}
`
	got := Redact([]byte(text))
	for _, gone := range []string{"tok-env-0a1b2c3d", "sk-0a1b2c3d4e", "br-0a1b2c3d4e"} {
		if strings.Contains(got, gone) {
			t.Errorf("%s stored:\n%s", gone, got)
		}
	}
	for _, kept := range []string{"{prefix}/layout-kept-as-written", "field-kept-as-written"} {
		if !strings.Contains(got, kept) || redact.String(kept) != kept {
			t.Errorf("%s masked (or taken for a secret):\n%s", kept, got)
		}
	}
}
