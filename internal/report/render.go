package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/stats"
)

// JSON writes r as indented JSON.
func JSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// row is one metric line of the terminal table.
type row struct {
	key, label string
	format     func(float64) string
}

var rows = []row{
	{"ops_per_s", "IOPS", count},
	{"bytes_per_s", "MiB/s", mib},
	{"read.ops_per_s", "read IOPS", count},
	{"read.lat_p50_ns", "read lat p50", latency},
	{"read.lat_p99_ns", "read lat p99", latency},
	{"write.ops_per_s", "write IOPS", count},
	{"write.lat_p50_ns", "write lat p50", latency},
	{"write.lat_p99_ns", "write lat p99", latency},
	{"sync.ops_per_s", "syncs/s", count},
	{"sync.lat_p99_ns", "sync lat p99", latency},
	{"put.ops_per_s", "put ops/s", count},
	{"put.lat_p50_ns", "put lat p50", latency},
	{"put.lat_p99_ns", "put lat p99", latency},
	{"get.ops_per_s", "get ops/s", count},
	{"get.lat_p50_ns", "get lat p50", latency},
	{"get.lat_p99_ns", "get lat p99", latency},
	{"get.ttfb_p99_ns", "get TTFB p99", latency},
	{"head.lat_p99_ns", "head lat p99", latency},
	{"list.lat_p99_ns", "list lat p99", latency},
	{"list_keys_per_s", "LIST keys/s", count},
	{"delete.lat_p99_ns", "delete lat p99", latency},
	{"multipart.lat_p99_ns", "multipart lat p99", latency},
	{"copy.lat_p99_ns", "copy lat p99", latency},
	{"upload.lat_p50_ns", "upload lat p50", latency},
	{"upload.lat_p99_ns", "upload lat p99", latency},
	{"download.lat_p50_ns", "download lat p50", latency},
	{"download.lat_p99_ns", "download lat p99", latency},
	{"download.ttfb_p99_ns", "download TTFB p99", latency},
	{"frames_fps", "frames/s", plain},
	{"frames_late", "late frames", plain},
	{"frames_dropped", "dropped frames", plain},
	{"frames_success_pct", "frames ok %", plain},
	{"open.lat_p99_ns", "open p99", latency},
	{"close.lat_p99_ns", "close p99", latency},
	{"cpu_us_per_op", "CPU µs/op", plain},
	{"connections_opened", "connections", plain},
	{"wall_s", "wall", seconds},
	{"user_s", "user CPU", seconds},
	{"sys_s", "sys CPU", seconds},
	{"max_rss_bytes", "peak RSS MiB", mib},
	{"items_per_s", "items/s", count},
	{"server_cpu_s", "server CPU", seconds},
	{"server_cpu_us_per_op", "server CPU µs/op", plain},
	{"server_cpu_ns_per_byte", "server CPU ns/B", plain},
	{"server_rss_peak_bytes", "server peak RSS MiB", mib},
	{"server_read_bytes", "server read MiB", mib},
	{"server_write_bytes", "server write MiB", mib},
	{"server_threads_max", "server threads", plain},
	{"server_fds_max", "server open files", plain},
	{"cgroup_memory_peak_bytes", "cgroup memory peak MiB", mib},
	{"cgroup_cpu_s", "cgroup CPU", seconds},
	{"cgroup_throttled_s", "cgroup CPU throttled", seconds},
	{"cgroup_oom_kills", "OOM kills", plain},
}

// endpointRows are the rows of each endpoint of a workload spread over
// several (endpoint.N.*), in their order.
func endpointRows(summary map[string]stats.Summary) []row {
	var out []row
	for n := 1; ; n++ {
		p := fmt.Sprintf("endpoint.%d.", n)
		if _, ok := summary[p+"ops_per_s"]; !ok {
			return out
		}
		out = append(out, row{p + "ops_per_s", fmt.Sprintf("endpoint %d ops/s", n), count},
			row{p + "lat_p99_ns", fmt.Sprintf("endpoint %d lat p99", n), latency}, row{p + "errors", fmt.Sprintf("endpoint %d errors", n), plain})
	}
}

// Terminal writes the human summary: per cell a table of median, 95% CI,
// mean ± sd, CV and n, the merged latency percentiles, then the warnings.
func Terminal(w io.Writer, r *Report) error {
	measured, warm, other := 0, 0, 0
	for _, run := range r.Runs {
		switch {
		case run.Status != "ok":
			other++
		case run.Warmup:
			warm++
		default:
			measured++
		}
	}
	fmt.Fprintf(w, "experiment %s (%s): %s, %d measured runs, %d warm-up", r.Experiment, r.Status, r.Name, measured, warm)
	if other > 0 {
		fmt.Fprintf(w, ", %d failed or interrupted", other)
	}
	fmt.Fprintln(w)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note (%s): %s\n", n.At.Local().Format("2006-01-02 15:04"), n.Text)
	}
	if len(r.Comparisons) > 0 {
		if err := writeVariants(w, r, false); err != nil {
			return err
		}
		writeDeadlines(w, r, false)
		if err := writeScales(w, r, false); err != nil {
			return err
		}
		writeWarnings(w, r.Warnings, false)
		return nil
	}
	for _, c := range r.Cells {
		fmt.Fprintf(w, "\n%s  %s\n", c.Name, formatParams(c.Params))
		if c.Measured == 0 {
			fmt.Fprintln(w, "  no successful measured run")
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  metric\tmedian\t95% CI\tmean ± sd\tCV\tn\t")
		_, reads := c.Summary["read.ops_per_s"]
		_, writes := c.Summary["write.ops_per_s"]
		for _, rw := range append(slices.Clone(rows), endpointRows(c.Summary)...) {
			s, ok := c.Summary[rw.key]
			if !ok || (!(reads && writes) && (rw.key == "read.ops_per_s" || rw.key == "write.ops_per_s")) {
				continue // per-direction IOPS repeat the total when only one direction ran
			}
			ci := "n<6"
			if s.CI95 != nil {
				ci = fmt.Sprintf("[%s, %s]", rw.format(s.CI95[0]), rw.format(s.CI95[1]))
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s ± %s\t%.1f%%\t%d\t\n", rw.label, rw.format(s.Median), ci,
				rw.format(s.Mean), rw.format(s.SD), 100*s.CV, s.N)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		writeLatency(w, c.Latency)
		if c.Deadline != nil {
			fmt.Fprintf(w, "  %s\n", c.Deadline)
		}
		if c.TimingOverheadNs > 0 {
			fmt.Fprintf(w, "  timing overhead: %.0f ns per operation, measured before each run\n", c.TimingOverheadNs)
		}
	}
	if err := writeScales(w, r, false); err != nil {
		return err
	}
	if r.Segments != nil {
		if err := WriteSegments(w, r.Segments); err != nil {
			return err
		}
	}
	writeWarnings(w, r.Warnings, false)
	return nil
}

func writeWarnings(w io.Writer, ws []stats.Warning, markdown bool) {
	if len(ws) == 0 {
		return
	}
	if markdown {
		fmt.Fprintln(w, "\n### Diagnosis")
		fmt.Fprintln(w)
		for _, wn := range ws {
			fmt.Fprintf(w, "- **%s**: %s\n", wn.Code, wn.Message)
		}
		return
	}
	fmt.Fprintln(w, "\nwarnings:")
	for _, wn := range ws {
		fmt.Fprintf(w, "  [%s] %s\n", wn.Code, wn.Message)
	}
}

// Markdown writes the comparison report as Markdown: per cell the variant
// table, then the diagnosis.
func Markdown(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "## Experiment %s: %s (%s)\n\n`%s`\n", r.Experiment, r.Name, r.Status, r.Command)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "\n> %s — %s\n", n.Text, n.At.Local().Format("2006-01-02 15:04"))
	}
	if len(r.Comparisons) > 0 {
		if err := writeVariants(w, r, true); err != nil {
			return err
		}
		writeDeadlines(w, r, true)
	} else {
		for _, c := range r.Cells {
			fmt.Fprintf(w, "\n### %s\n\n%s\n\n", c.Name, formatParams(c.Params))
			t := &Table{Header: []string{"metric", "median [95% CI]", "mean ± sd", "CV", "n"}}
			for _, rw := range rows {
				if s, ok := c.Summary[rw.key]; ok {
					t.Add(rw.label, medianCI(s, rw.format), rw.format(s.Mean)+" ± "+rw.format(s.SD), fmt.Sprintf("%.1f%%", 100*s.CV), fmt.Sprint(s.N))
				}
			}
			if err := t.Render(w, true); err != nil {
				return err
			}
			if c.Deadline != nil {
				fmt.Fprintf(w, "\n**%s**\n", c.Deadline)
			}
		}
	}
	if err := writeScales(w, r, true); err != nil {
		return err
	}
	writeWarnings(w, r.Warnings, true)
	return nil
}

// writeDeadlines lists the frame-rate verdicts of every variant's cells.
func writeDeadlines(w io.Writer, r *Report, markdown bool) {
	first := true
	for _, c := range r.Cells {
		if c.Deadline == nil {
			continue
		}
		if first {
			fmt.Fprint(w, map[bool]string{false: "\nframe deadlines:\n", true: "\n### Frame deadlines\n\n"}[markdown])
			first = false
		}
		label := c.Name
		if c.Variant != "" {
			label = c.Variant + "/" + c.Name
		}
		fmt.Fprintf(w, map[bool]string{false: "  %s: %s\n", true: "- %s: **%s**\n"}[markdown], label, c.Deadline)
	}
}

func writeLatency(w io.Writer, lat map[string]metrics.Percentiles) {
	for d := metrics.Op(0); d < metrics.NumOps; d++ {
		p, ok := lat[d.String()]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "  %s latency, all measured runs merged: p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n", d,
			latency(float64(p.P50)), latency(float64(p.P90)), latency(float64(p.P99)), latency(float64(p.P999)), latency(float64(p.Max)))
	}
}

func formatParams(p map[string]string) string {
	order := []string{"rw", "rwmixread", "bs", "iodepth", "numjobs", "direct", "ioengine", "size", "runtime", "io_size", "fsync", "fdatasync"}
	seen := map[string]bool{}
	var parts []string
	for _, k := range order {
		if v, ok := p[k]; ok {
			parts = append(parts, k+"="+v)
			seen[k] = true
		}
	}
	var rest []string
	for k := range p {
		if !seen[k] && k != "filename" && k != "directory" {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		parts = append(parts, k+"="+p[k])
	}
	return strings.Join(parts, " ")
}

func count(v float64) string { return stats.FormatValue(v) }

func seconds(v float64) string { return latency(v * 1e9) }

// plain writes a figure in plain digits: 4520, not 4.52e+03.
func plain(v float64) string {
	if a := math.Abs(v); a >= 1000 && a < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func mib(v float64) string { return fmt.Sprintf("%.4g", v/(1<<20)) }

func latency(ns float64) string {
	switch a := math.Abs(ns); {
	case a >= 1e9:
		return fmt.Sprintf("%.3gs", ns/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3gms", ns/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.3gµs", ns/1e3)
	}
	return fmt.Sprintf("%.0fns", ns)
}
