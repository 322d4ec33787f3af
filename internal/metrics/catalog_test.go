package metrics_test

import (
	"testing"

	_ "github.com/iolab/iolab/internal/cgroup"
	"github.com/iolab/iolab/internal/metrics"
	_ "github.com/iolab/iolab/internal/observe"
	_ "github.com/iolab/iolab/internal/workload/all"
)

// The catalogue says which way each metric is better, also after an
// operation's name, and knows nothing of a metric nobody declared.
func TestCatalogueDirections(t *testing.T) {
	t.Parallel()
	for m, want := range map[string]metrics.Better{"wall_s": metrics.LowerIsBetter, "read.lat_p99_ns": metrics.LowerIsBetter,
		"ops_per_s": metrics.HigherIsBetter, "bytes_per_s": metrics.HigherIsBetter, "max_rss_bytes": metrics.LowerIsBetter,
		"items_per_s": metrics.HigherIsBetter, "frames_late": metrics.LowerIsBetter, "frames_dropped": metrics.LowerIsBetter,
		"frames_fps": metrics.HigherIsBetter, "put.ops_per_s": metrics.HigherIsBetter, "server_cpu_us_per_op": metrics.LowerIsBetter,
		"list_keys": metrics.NoDirection} {
		d, ok := metrics.Describe(m)
		if !ok || d.Better != want {
			t.Errorf("%s: declared %v, better %v; want %v", m, ok, d.Better, want)
		}
	}
	for _, m := range []string{"something_new", "read.wall_s", "nosuchop.lat_p99_ns", "endpoint.x.ops_per_s"} {
		if _, ok := metrics.Describe(m); ok {
			t.Errorf("%s: described, but nobody declared it", m)
		}
	}
	if d, ok := metrics.Describe("frames_late"); !ok || !d.Zeroable || !d.Stat().LowerIsBetter {
		t.Errorf("frames_late: %+v", d)
	}
}

// Labels per operation, a numbered family, formats and gate limits in the
// metric's own unit.
func TestCatalogueLabelsUnitsLimits(t *testing.T) {
	t.Parallel()
	for m, label := range map[string]string{"read.ops_per_s": "read IOPS", "put.ops_per_s": "put ops/s", "sync.ops_per_s": "syncs/s",
		"open.lat_p99_ns": "open p99", "get.ttfb_p99_ns": "get TTFB p99", "endpoint.2.lat_p99_ns": "endpoint 2 lat p99"} {
		if d, _ := metrics.Describe(m); d.Label != label {
			t.Errorf("%s: label %q, want %q", m, d.Label, label)
		}
	}
	for _, c := range []struct {
		metric, limit string
		want          float64
		shown         string
	}{
		{"read.lat_p99_ns", "5ms", 5e6, "5ms"},
		{"wall_s", "2m", 120, "120s"},
		{"max_rss_bytes", "1g", 1 << 30, "1024"},
		{"ops_per_s", "10000", 1e4, "10k"},
		{"server_cpu_ns_per_byte", "2.5", 2.5, "2.5"},
	} {
		d, _ := metrics.Describe(c.metric)
		v, err := d.ParseLimit(c.limit)
		if err != nil || v != c.want {
			t.Errorf("%s limit %q: %v %v, want %v", c.metric, c.limit, v, err, c.want)
		}
		if got := d.Format(v); got != c.shown {
			t.Errorf("%s %v shown as %q, want %q", c.metric, v, got, c.shown)
		}
	}
	if d, _ := metrics.Describe("wall_s"); d.BenchUnit() != "sec/op" {
		t.Errorf("wall_s in benchfmt: %s", d.BenchUnit())
	}
}
