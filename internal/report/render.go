package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/stats"
)

// JSON writes r as indented JSON.
func JSON(w io.Writer, r *analysis.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// rowOrder is the order of the terminal table's rows: its layout; each
// metric's label and format are the catalogue's (metrics.Describe).
var rowOrder = []string{
	"ops_per_s", "bytes_per_s", "read.ops_per_s", "read.lat_p50_ns", "read.lat_p99_ns", "read.response_p99_ns",
	"write.ops_per_s", "write.lat_p50_ns", "write.lat_p99_ns", "write.response_p99_ns", "sync.ops_per_s", "sync.lat_p99_ns",
	"put.ops_per_s", "put.lat_p50_ns", "put.lat_p99_ns", "put.response_p99_ns",
	"get.ops_per_s", "get.lat_p50_ns", "get.lat_p99_ns", "get.response_p99_ns", "get.ttfb_p99_ns", "late_start_pct", "steady", "steady_at_s",
	"head.lat_p99_ns", "list.lat_p99_ns", "list_keys_per_s", "delete.lat_p99_ns", "multipart.lat_p99_ns", "copy.lat_p99_ns",
	"upload.lat_p50_ns", "upload.lat_p99_ns", "upload.response_p99_ns", "download.lat_p50_ns", "download.lat_p99_ns", "download.response_p99_ns", "download.ttfb_p99_ns",
	"frames_fps", "frames_late", "frames_dropped", "frames_success_pct", "open.lat_p99_ns", "close.lat_p99_ns",
	"cpu_us_per_op", "connections_opened", "wall_s", "user_s", "sys_s", "max_rss_bytes", "items_per_s",
	"server_cpu_s", "server_cpu_us_per_op", "server_cpu_ns_per_byte", "server_rss_peak_bytes", "server_read_bytes", "server_write_bytes",
	"server_threads_max", "server_fds_max", "cgroup_memory_peak_bytes", "cgroup_cpu_s", "cgroup_throttled_s", "cgroup_oom_kills",
}

// familyRows are the rows of each member of a numbered family: each
// endpoint of a workload spread over several (endpoint.N.*), each job of
// a fio job file (job.N.*), in their order.
func familyRows(summary map[string]stats.Summary) []string {
	var out []string
	for _, f := range []struct {
		name string
		rows []string
	}{{"endpoint", []string{"ops_per_s", "lat_p99_ns", "errors"}}, {"job", []string{"ops_per_s", "bytes_per_s", "lat_p99_ns", "errors"}}} {
		for n := 1; ; n++ {
			p := fmt.Sprintf("%s.%d.", f.name, n)
			if _, ok := summary[p+"ops_per_s"]; !ok {
				break
			}
			for _, r := range f.rows {
				out = append(out, p+r)
			}
		}
	}
	return out
}

// Terminal writes the human summary: per cell a table of median, 95% CI,
// mean ± sd, CV and n, the merged latency percentiles, then the warnings.
func Terminal(w io.Writer, r *analysis.Report) error {
	terminalHead(w, r)
	writeCommits(w, r, false)
	writeAnswers(w, r, false)
	if len(r.Comparisons) > 0 {
		if err := writeVariants(w, r, false); err != nil {
			return err
		}
		writeDeadlines(w, r, false)
		writeVerified(w, r, false)
		if err := writeFindings(w, r); err != nil {
			return err
		}
		writeWarnings(w, r.Warnings, false)
		return nil
	}
	for _, c := range r.Cells {
		if c.Searched {
			continue // its runs are at loads of their own: see its search
		}
		if err := terminalCell(w, c); err != nil {
			return err
		}
	}
	writeVerified(w, r, false)
	if err := writeFindings(w, r); err != nil {
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

// terminalHead is the experiment's first lines: its runs, notes and
// precondition.
func terminalHead(w io.Writer, r *analysis.Report) {
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
	if pv := r.Preconditioned; pv != nil {
		fmt.Fprintf(w, "%s\n", preconditionLine(pv))
	}
}

// writeFindings writes the scale fits, curves and searches.
func writeFindings(w io.Writer, r *analysis.Report) error {
	if err := writeScales(w, r, false); err != nil {
		return err
	}
	if err := writeCurves(w, r, false); err != nil {
		return err
	}
	return writeSLOs(w, r, false)
}

// terminalCell is one cell of an experiment without comparisons: its
// summary, latencies, deadline and timing overhead.
func terminalCell(w io.Writer, c analysis.CellView) error {
	fmt.Fprintf(w, "\n%s  %s\n", c.Name, formatParams(c.Params))
	if c.Measured == 0 {
		fmt.Fprintln(w, "  no successful measured run")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  metric\tmedian\t95% CI\tmean ± sd\tCV\tn\t")
	_, reads := c.Summary["read.ops_per_s"]
	_, writes := c.Summary["write.ops_per_s"]
	for _, key := range append(slices.Clone(rowOrder), familyRows(c.Summary)...) {
		s, ok := c.Summary[key]
		if !ok || (!(reads && writes) && (key == "read.ops_per_s" || key == "write.ops_per_s")) {
			continue // per-direction IOPS repeat the total when only one direction ran
		}
		label, format := metricFormat(key)
		ci := "n<6"
		if s.CI95 != nil {
			ci = fmt.Sprintf("[%s, %s]", format(s.CI95[0]), format(s.CI95[1]))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s ± %s\t%.1f%%\t%d\t\n", label, format(s.Median), ci,
			format(s.Mean), format(s.SD), 100*s.CV, s.N)
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
func Markdown(w io.Writer, r *analysis.Report) error {
	fmt.Fprintf(w, "## Experiment %s: %s (%s)\n\n`%s`\n", r.Experiment, r.Name, r.Status, r.Command)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "\n> %s — %s\n", n.Text, n.At.Local().Format("2006-01-02 15:04"))
	}
	if len(r.Commits) > 0 {
		fmt.Fprintln(w)
		writeCommits(w, r, true)
	}
	writeAnswers(w, r, true)
	if len(r.Comparisons) > 0 {
		if err := writeVariants(w, r, true); err != nil {
			return err
		}
		writeDeadlines(w, r, true)
	} else {
		for _, c := range r.Cells {
			if c.Searched {
				continue
			}
			fmt.Fprintf(w, "\n### %s\n\n%s\n\n", c.Name, formatParams(c.Params))
			t := &Table{Header: []string{"metric", "median [95% CI]", "mean ± sd", "CV", "n"}}
			for _, key := range rowOrder {
				if s, ok := c.Summary[key]; ok {
					label, format := metricFormat(key)
					t.Add(label, medianCI(s, format), format(s.Mean)+" ± "+format(s.SD), fmt.Sprintf("%.1f%%", 100*s.CV), fmt.Sprint(s.N))
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
	writeVerified(w, r, true)
	if err := writeScales(w, r, true); err != nil {
		return err
	}
	if err := writeCurves(w, r, true); err != nil {
		return err
	}
	if err := writeSLOs(w, r, true); err != nil {
		return err
	}
	writeWarnings(w, r.Warnings, true)
	return nil
}

// writeDeadlines lists the frame-rate verdicts of every variant's cells.
func writeDeadlines(w io.Writer, r *analysis.Report, markdown bool) {
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
		r, paced := lat[d.String()+analysis.ResponseSuffix]
		what := map[bool]string{false: "latency", true: "service time (from each actual start)"}[paced]
		writePercentiles(w, d.String()+" "+what+", all measured runs merged", p)
		if paced {
			writePercentiles(w, d.String()+" response time (from each intended start: a late start's wait included)", r)
		}
	}
}

func writePercentiles(w io.Writer, what string, p metrics.Percentiles) {
	fmt.Fprintf(w, "  %s: p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n", what,
		latency(float64(p.P50)), latency(float64(p.P90)), latency(float64(p.P99)), latency(float64(p.P999)), latency(float64(p.Max)))
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

func plain(v float64) string { return metrics.FormatPlain(v) }

func seconds(v float64) string { return latency(v * 1e9) }

func latency(ns float64) string { return metrics.FormatNs(ns) }

// preconditionLine says how a precondition's warm-up rounds ended.
func preconditionLine(pv *analysis.PreconditionView) string {
	if pv.Steady {
		return fmt.Sprintf("preconditioned: steady after %d warm-up rounds (%s, SNIA's rule)", pv.Rounds, pv.Rule())
	}
	return fmt.Sprintf("preconditioned: not steady after %d warm-up rounds (%s, SNIA's rule): see the warnings", pv.Rounds, pv.Rule())
}
