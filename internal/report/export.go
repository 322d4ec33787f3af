package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/envinfo"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
)

// Export formats, beside the text, Markdown and JSON reports.
const (
	FormatCSV    = "csv"
	FormatNDJSON = "ndjson"
	FormatBench  = "bench"
	FormatFrames = "frames"
)

// The exports write the runs of a report's model whole: each run's
// metrics, seconds and frames as measured, in the order they ran.

// CSV writes one row per run and metric — or, with series, one row per
// run and second of its per-second series — for a spreadsheet or pandas.
func CSV(w io.Writer, r *analysis.Report, series bool) error {
	cw := csv.NewWriter(w)
	head := []string{"experiment", "cell", "variant", "round", "slot", "warmup", "status"}
	if series {
		_ = cw.Write(append(head, "second", "ops", "bytes", "p50_ns", "p99_ns", "max_ns"))
	} else {
		_ = cw.Write(append(head, "metric", "value"))
	}
	for _, run := range r.Runs {
		row := []string{r.Experiment, run.StoredCell.Name, run.StoredCell.Variant, strconv.Itoa(run.Round), strconv.Itoa(run.Slot),
			strconv.FormatBool(run.Warmup), run.Status}
		if series {
			for _, s := range run.Result.Series {
				_ = cw.Write(append(slices.Clone(row), strconv.FormatInt(s.T, 10), strconv.FormatInt(s.Ops, 10), strconv.FormatInt(s.Bytes, 10),
					strconv.FormatInt(s.P50Ns, 10), strconv.FormatInt(s.P99Ns, 10), strconv.FormatInt(s.MaxNs, 10)))
			}
			continue
		}
		m := run.Metrics
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if v := m[k]; !math.IsNaN(v) && !math.IsInf(v, 0) {
				_ = cw.Write(append(slices.Clone(row), k, strconv.FormatFloat(v, 'g', -1, 64)))
			}
		}
	}
	if !series {
		// A later check of what the runs left in place is no run: its
		// rows have no round, and its status says what checked and when.
		for _, v := range laterChecks(r) {
			row := []string{r.Experiment, v.Cell, v.Variant, "", "", "", v.By + " " + v.At.UTC().Format(time.RFC3339)}
			for k, n := range v.counts() {
				_ = cw.Write(append(slices.Clone(row), k, strconv.FormatInt(n, 10)))
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// laterCheck is a read-back check made after the runs (s3 verify).
type laterCheck struct{ analysis.VerifiedCell }

// laterChecks are the report's checks made after its runs.
func laterChecks(r *analysis.Report) []laterCheck {
	var out []laterCheck
	for _, v := range r.Verified {
		if v.At != nil {
			out = append(out, laterCheck{v})
		}
	}
	return out
}

// counts are the check's figures under the names the runs' own have.
func (v laterCheck) counts() iter.Seq2[string, int64] {
	return func(yield func(string, int64) bool) {
		_ = yield("verify_checked", v.Checked) && yield("verify_mismatched", v.Mismatched) &&
			yield("verify_missing", v.Missing) && yield("verify_unreadable", v.Unreadable)
	}
}

// FramesCSV writes a frame test's per-frame series, a row per frame of
// every run: its thread and position in play order; when it was released
// and due (with a frame rate), started, and ended, each relative to the
// run's start and as Unix nanoseconds; how long open, I/O and close took;
// how late it ended, and whether it was dropped.
func FramesCSV(w io.Writer, r *analysis.Report) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"experiment", "cell", "variant", "round", "warmup", "status", "frame", "pos", "thread",
		"release_ns", "deadline_ns", "start_ns", "end_ns", "open_ns", "io_ns", "close_ns", "late_ns", "dropped",
		"release_unix_ns", "deadline_unix_ns", "start_unix_ns", "end_unix_ns"})
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	for _, run := range r.Runs {
		fps, _ := strconv.ParseFloat(run.StoredCell.Params["fps"], 64)
		t0 := run.Result.Start.UnixNano()
		for _, f := range run.Result.Frames {
			row := []string{r.Experiment, run.StoredCell.Name, run.StoredCell.Variant, strconv.Itoa(run.Round), strconv.FormatBool(run.Warmup), run.Status,
				strconv.Itoa(f.Frame), strconv.Itoa(f.Pos), strconv.Itoa(f.Thread)}
			release, deadline := "", ""
			releaseAbs, deadlineAbs := "", ""
			if fps > 0 {
				rel, due := int64(float64(f.Pos)*1e9/fps), int64(float64(f.Pos+1)*1e9/fps)
				release, deadline, releaseAbs, deadlineAbs = i64(rel), i64(due), i64(t0+rel), i64(t0+due)
			}
			start, end, startAbs, endAbs := "", "", "", ""
			if !f.Dropped {
				e := f.StartNs + f.OpenNs + f.IONs + f.CloseNs
				start, end, startAbs, endAbs = i64(f.StartNs), i64(e), i64(t0+f.StartNs), i64(t0+e)
			}
			row = append(row, release, deadline, start, end, i64(f.OpenNs), i64(f.IONs), i64(f.CloseNs), i64(f.LateNs),
				strconv.FormatBool(f.Dropped), releaseAbs, deadlineAbs, startAbs, endAbs)
			_ = cw.Write(row)
		}
	}
	cw.Flush()
	return cw.Error()
}

// NDJSON writes one JSON object per run (its metrics; with series, its
// per-second series too), a line each, for jq and log pipelines.
func NDJSON(w io.Writer, r *analysis.Report, series bool) error {
	enc := json.NewEncoder(w)
	for _, run := range r.Runs {
		m := map[string]any{}
		for k, v := range run.Metrics {
			m[k] = stats.JSONNumber(v)
		}
		line := map[string]any{"experiment": r.Experiment, "cell": run.StoredCell.Name, "variant": run.StoredCell.Variant, "params": run.StoredCell.Params,
			"round": run.Round, "slot": run.Slot, "warmup": run.Warmup, "status": run.Status, "error": run.Error,
			"start": run.Result.Start, "metrics": m}
		if series {
			line["series"] = run.Result.Series
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	for _, v := range laterChecks(r) {
		m := map[string]any{}
		for k, n := range v.counts() {
			m[k] = n
		}
		line := map[string]any{"experiment": r.Experiment, "cell": v.Cell, "variant": v.Variant, "check": v.By, "at": v.At,
			"target": v.Target, "interrupted": v.Interrupted, "first": v.First, "metrics": m}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

// Bench writes the measured, successful runs in the Go benchmark format
// (golang.org/x/perf's benchfmt), so benchstat compares two exports —
// `benchstat old.txt new.txt` — or an experiment's variants —
// `benchstat -col variant exp.txt`. Configuration lines carry the
// environment and the variant; Unit lines say which way is better; each
// run is one line of its metrics with units. The baseline's runs come
// first, then each variant's in the report's order: benchstat takes the
// first value of a column it sees as the base of its deltas.
func Bench(w io.Writer, rep *analysis.Report) error {
	var env envinfo.Snapshot
	if rep.Env != nil {
		env = *rep.Env
	}
	// What tells two experiments apart (the experiment's ID, iolab's
	// version) is written as a comment, which benchfmt skips: as a
	// configuration line it would put each file in a table of its own,
	// and benchstat old.txt new.txt would compare nothing.
	fmt.Fprintf(w, "# iolab experiment %s\n", oneLine(rep.Experiment))
	if env.IolabVersion != "" {
		fmt.Fprintf(w, "# iolab %s\n", oneLine(env.IolabVersion))
	}
	for _, kv := range [][2]string{{"plan", rep.Name}, {"kernel", env.Kernel},
		{"cpu", env.CPUModel}, {"cpus", strconv.Itoa(env.CPUs)}} {
		if kv[1] != "" && kv[1] != "0" {
			fmt.Fprintf(w, "%s: %s\n", kv[0], oneLine(kv[1]))
		}
	}
	units := map[string]bool{}
	variant := "\x00"
	for _, run := range baselineFirst(rep) {
		if run.Warmup || run.Status != store.StatusOK {
			continue
		}
		if run.StoredCell.Variant != variant {
			variant = run.StoredCell.Variant
			if variant != "" {
				fmt.Fprintf(w, "variant: %s\n", oneLine(variant))
			}
		}
		m := run.Metrics
		var fields []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			def, known := metrics.Describe(k)
			v := m[k]
			if !known || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			unit := def.BenchUnit()
			if !units[unit] && def.Judged() {
				units[unit] = true
				better := "higher"
				if def.Better == metrics.LowerIsBetter {
					better = "lower"
				}
				fmt.Fprintf(w, "Unit %s better=%s\n", unit, better) // benchfmt's keys are lower case
			}
			fields = append(fields, strconv.FormatFloat(v, 'g', -1, 64), unit)
		}
		if len(fields) > 0 {
			fmt.Fprintf(w, "%s 1 %s\n", benchName(run.StoredCell.Name), strings.Join(fields, " "))
		}
	}
	return nil
}

// baselineFirst are the report's runs, the baseline's first, then each
// other variant's in the order of the report's cells, each in the order
// they ran.
func baselineFirst(rep *analysis.Report) []analysis.RunView {
	rank := map[string]int{rep.Baseline: 0}
	for _, c := range rep.Cells {
		if _, ok := rank[c.Variant]; !ok {
			rank[c.Variant] = len(rank)
		}
	}
	runs := slices.Clone(rep.Runs)
	slices.SortStableFunc(runs, func(a, b analysis.RunView) int {
		return rank[a.StoredCell.Variant] - rank[b.StoredCell.Variant]
	})
	return runs
}

var notName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_=./+-]+`) })

// benchName is a cell's name as a benchmark's: Benchmark, the workload,
// then each parameter as a key=value part (benchstat's sub-benchmark
// keys), with no spaces.
func benchName(cell string) string {
	parts := strings.Fields(cell)
	for i, p := range parts {
		parts[i] = notName().ReplaceAllString(p, "_")
	}
	if len(parts) == 0 {
		parts = []string{"run"}
	}
	name := parts[0]
	if name != "" {
		name = strings.ToUpper(name[:1]) + name[1:]
	}
	return "Benchmark" + strings.Join(append([]string{name}, parts[1:]...), "/")
}

// oneLine keeps a configuration value on its line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Exports are the formats a command writes to a file beside what it prints
// (--export-json, --export-markdown, --export-csv: hyperfine's flags), by
// their flag's suffix.
var Exports = []string{"json", "markdown", "csv"}

// Export writes r in one of Exports.
func Export(w io.Writer, r *analysis.Report, format string, series bool) error {
	switch format {
	case "json":
		return JSON(w, r)
	case "markdown":
		return Markdown(w, r)
	case "csv":
		return CSV(w, r, series)
	}
	return fmt.Errorf("no export %q (want one of %s)", format, strings.Join(Exports, ", "))
}

// IsExport says whether a file that begins with head is one iolab wrote
// as an export of that format, which a new one may replace.
func IsExport(format string) func(head []byte) bool {
	return func(head []byte) bool {
		s := string(head)
		switch format {
		case "json":
			return strings.HasPrefix(s, "{\n  \"experiment\": ")
		case "markdown":
			return strings.HasPrefix(s, "## Experiment ")
		case "csv":
			return strings.HasPrefix(s, "experiment,cell,variant,round,slot,warmup,status,")
		}
		return false
	}
}
