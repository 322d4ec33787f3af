package cli

import (
	"bufio"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/iolab/iolab/internal/metrics"
)

// A stored experiment exports as CSV (a row per run and metric, or per
// run and second), NDJSON (a line per run) and the Go benchmark format,
// which benchstat compares — two experiments' exports, or one's variants.
func TestExports(t *testing.T) {
	t.Parallel()
	need(t, "benchstat")
	dir := t.TempDir()
	// The baseline is not the variant that runs first (in sequential
	// order, short): benchstat's base must still be it.
	writeFiles(t, dir, map[string]string{"plan.yaml": `name: exports
rounds: 6
warmup: 0
baseline: long
variants:
  - {name: short, env: {NAP: "0.01"}}
  - {name: long, env: {NAP: "0.05"}}
workloads:
  - name: nap
    cmd: {run: sleep $NAP}
`})
	db := filepath.Join(dir, "x.db")
	var ids []string
	for i := range 2 {
		if _, stderr, err := iolab(t, context.Background(), "experiment", filepath.Join(dir, "plan.yaml"), "--db", db, "--order", "sequential", "--note", []string{"before", "after the change"}[i]); err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
	}
	out, _, err := iolab(t, context.Background(), "ls", "--db", db, "--json")
	var list []struct{ ID, Name, Status string }
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 || list[0].Name != "exports" || list[0].Status != "done" {
		t.Fatalf("ls --json: %v\n%s", err, out)
	}
	for _, e := range list {
		ids = append(ids, e.ID)
	}
	// Notes: given with the run, and added after it.
	if out, _, err := iolab(t, context.Background(), "note", ids[0][len(ids[0])-4:], "VM-7: virtio queue depth 256", "--db", db); err != nil || !strings.Contains(out, "noted on "+ids[0]) {
		t.Fatalf("note: %v %s", err, out)
	}
	out, _, err = iolab(t, context.Background(), "show", ids[0], "--db", db)
	if err != nil || !strings.Contains(out, "): after the change\n") || !strings.Contains(out, "): VM-7: virtio queue depth 256\n") {
		t.Fatalf("show lacks the notes: %v\n%s", err, out)
	}
	if _, _, err := iolab(t, context.Background(), "note", ids[0], " ", "--db", db); err == nil || ExitCode(err) != 2 {
		t.Errorf("an empty note: %v", err)
	}

	out, _, err = iolab(t, context.Background(), "show", ids[0], "--db", db, "--format", "csv")
	rows, cerr := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || cerr != nil || strings.Join(rows[0], ",") != "experiment,cell,variant,round,slot,warmup,status,metric,value" {
		t.Fatalf("%v %v\n%s", err, cerr, out)
	}
	walls := 0
	for _, r := range rows[1:] {
		if r[7] == "wall_s" {
			walls++
		}
	}
	if walls != 12 {
		t.Errorf("%d wall_s rows for 12 runs", walls)
	}

	out, _, err = iolab(t, context.Background(), "show", ids[0], "--db", db, "--format", "ndjson")
	lines := 0
	for sc := bufio.NewScanner(strings.NewReader(out)); sc.Scan(); lines++ {
		var run struct {
			Variant string
			Metrics map[string]float64
		}
		if json.Unmarshal(sc.Bytes(), &run) != nil || run.Variant == "" || run.Metrics["wall_s"] <= 0 {
			t.Fatalf("line %d: %s", lines, sc.Text())
		}
	}
	if err != nil || lines != 12 {
		t.Fatalf("%v: %d lines", err, lines)
	}

	var files []string
	for i, id := range ids {
		out, _, err := iolab(t, context.Background(), "show", id, "--db", db, "--format", "bench")
		if err != nil || !strings.Contains(out, "BenchmarkNap 1 ") {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, w := range []string{"sec/op", "max_rss_bytes"} {
			if !benchDirections(t, out)[w] {
				t.Errorf("no %s in the export", w)
			}
		}
		files = append(files, filepath.Join(dir, []string{"old.txt", "new.txt"}[i]))
		if err := os.WriteFile(files[i], []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The variants of one experiment: long sleeps 5x as long.
	got, err := exec.Command("benchstat", "-col", "variant", files[0]).CombinedOutput()
	if err != nil || !strings.Contains(string(got), "sec/op") || !strings.Contains(string(got), "vs base") || !strings.Contains(string(got), "n=6") {
		t.Fatalf("benchstat -col variant: %v\n%s", err, got)
	}
	// Its base is the experiment's baseline: long first, short's delta
	// against it, as iolab's own report says.
	heads := 0
	for _, line := range strings.Split(string(got), "\n") {
		if strings.Contains(line, "│") && strings.Contains(line, "short") {
			heads++
			if i := strings.Index(line, "long"); i < 0 || i > strings.Index(line, "short") {
				t.Errorf("benchstat -col variant takes another base than the baseline, long: %q\n%s", line, got)
			}
		}
	}
	// Against long, short's delta is a decrease (it sleeps a fifth as
	// long): the sign says which is the base, whatever the machine's load.
	if heads == 0 || !regexp.MustCompile(`sec/op .*\n.* -\d+\.\d+% `).Match(got) {
		t.Errorf("benchstat -col variant: no table, or short's wall time not below long's:\n%s", got)
	}
	// Two experiments of the same plan: one table per variant, each
	// comparing the files (a "vs base" column), not a table per file.
	got, err = exec.Command("benchstat", files[0], files[1]).CombinedOutput()
	if err != nil || !strings.Contains(string(got), "sec/op") || !strings.Contains(string(got), "vs base") {
		t.Fatalf("benchstat old new does not compare the files: %v\n%s", err, got)
	}
	for _, line := range strings.Split(string(got), "\n") {
		if strings.Contains(line, "old.txt") != strings.Contains(line, "new.txt") {
			t.Fatalf("benchstat old new puts the files in tables of their own:\n%s", got)
		}
	}
	// The two experiments, cell by cell, unpaired.
	out, _, err = iolab(t, context.Background(), "compare", ids[1], ids[0], "--db", db)
	for _, want := range []string{ids[0] + " (B) against " + ids[1] + " (A)", "short/nap", "long/nap", "unpaired: runs of two experiments share no rounds"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("compare lacks %q: %v\n%s", want, err, out)
		}
	}
	out, _, err = iolab(t, context.Background(), "compare", ids[1], ids[0], "--db", db, "--json")
	var between struct {
		Method      string
		Comparisons []struct {
			Variant, Metric string
			Method          string
			Unpaired        bool
			Primary         bool
			Family          int
		}
	}
	if err != nil || json.Unmarshal([]byte(out), &between) != nil || between.Method != "unpaired" || len(between.Comparisons) < 2 {
		t.Fatalf("compare --json: %v\n%s", err, out)
	}
	for _, c := range between.Comparisons {
		// Welch's interval says so: "paired" would claim the pairing that
		// cancels drift, which runs of two experiments do not have.
		if !c.Unpaired || !strings.HasPrefix(c.Method, "unpaired-welch") || (c.Metric == "wall_s") != c.Primary || (c.Primary && c.Family != 2) {
			t.Errorf("%+v", c)
		}
	}
	if _, _, err := iolab(t, context.Background(), "show", ids[0], "--db", db, "--format", "xml"); err == nil || !strings.Contains(err.Error(), "want text, md, csv, ndjson, bench, fio, fio+ or frames") {
		t.Errorf("--format xml: %v", err)
	}
}

// benchDirections reads a bench export with x/perf's own parser, as
// benchstat does, and checks every unit says which way is better, and the
// right way: sec/op lower, ops/s and B/s higher, latencies lower.
func benchDirections(t *testing.T, export string) map[string]bool {
	t.Helper()
	r := benchfmt.NewReader(strings.NewReader(export), "export.txt")
	units := map[string]bool{}
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Fatalf("benchfmt: %v", rec)
		case *benchfmt.Result:
			for _, v := range rec.Values {
				units[v.Unit] = true
			}
		}
	}
	if len(units) == 0 {
		t.Fatalf("no results:\n%s", export)
	}
	metricOf := map[string]string{"sec/op": "wall_s", "ops/s": "ops_per_s", "B/s": "bytes_per_s"}
	for unit := range units {
		m := cmp.Or(metricOf[unit], unit)
		def, ok := metrics.Describe(m)
		if !ok {
			t.Errorf("unit %s: no metric of the catalogue", unit)
			continue
		}
		want := map[metrics.Better]int{metrics.HigherIsBetter: +1, metrics.LowerIsBetter: -1}[def.Better]
		if got := r.Units().GetBetter(unit); got != want {
			t.Errorf("unit %s (%s): benchstat reads better %d, want %d", unit, m, got, want)
		}
	}
	return units
}
