package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/pgtest"
	"github.com/iolab/iolab/internal/store"
)

// Two segments of one s3 load, started together at a barrier in a shared
// PostgreSQL, against one versitygw: show prints one merged run per round
// whose operations are the sum of the segments' and whose p99 is the p99
// of the union of every latency the two measured (each wrote them all to
// a --lat-log), with each segment's figures beside it. Each segment is an
// iolab process of its own, as on two hosts.
func TestSegmentsMergeOnPostgres(t *testing.T) {
	slow(t)
	t.Parallel()
	srv := s3Servers(t)[0]
	db, bin := pgtest.Database(t), buildIolab(t)
	segmentRun := func(seg string, extra ...string) error {
		args := append([]string{"s3", "--endpoint", srv.endpoint, "--access-key", testAccessKey, "--secret-key", testSecretKey, "--bucket", "segs", "--create-bucket", "--mix", "put=1,get=1",
			"--size", "2k", "--concurrency", "4", "--count", "60", "--rounds=2", "--warmup=0", "-q", "--db", db, "--segment", seg,
			"--barrier-timeout", "60s"}, extra...)
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("segment %s: %w\n%s", seg, err, out)
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	logs := [2]string{filepath.Join(t.TempDir(), "lat0.csv"), filepath.Join(t.TempDir(), "lat1.csv")}
	for i := range 2 {
		wg.Go(func() {
			errs[i] = segmentRun(fmt.Sprintf("%d/2", i), "--segment-group", "load-a", "--lat-log", logs[i])
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		conn, _ := sql.Open("pgx", db)
		rows, _ := conn.Query(`SELECT grp, segment, host, at FROM segment_barrier`)
		for rows != nil && rows.Next() {
			var g, h, at string
			var seg int
			rows.Scan(&g, &seg, &h, &at)
			t.Logf("barrier row: %s %d %s %s", g, seg, h, at)
		}
		t.Logf("experiments:\n%s", mustLs(t, db))
		t.Fatal(err)
	}
	out, _, err := iolab(t, context.Background(), "show", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var merged struct {
		Status string
		Runs   []struct {
			Round  int
			Status string
			Ops    map[string]s3OpJSON
		}
		Segments struct {
			N           int
			Experiments map[string]string
			Missing     []string
			Cells       []struct{ Segments []struct{ Runs int } }
		}
	}
	decodeInto(t, out, &merged)
	if len(merged.Runs) != 2 || merged.Segments.N != 2 || len(merged.Segments.Experiments) != 2 || len(merged.Segments.Missing) != 0 {
		t.Fatalf("merged: %s", out)
	}
	// The segments as stored, and every latency they measured, to check
	// the merge against.
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ops [2]int64 // by round
	roundOf := map[string]int{}
	for seg, id := range merged.Segments.Experiments {
		d, err := st.Load(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Runs) != 2 {
			t.Fatalf("segment %s stored %d runs", id, len(d.Runs))
		}
		for _, r := range d.Runs {
			ops[r.Round] += r.Result.ByOp[metrics.Get].Ops + r.Result.ByOp[metrics.Put].Ops
			roundOf[fmt.Sprintf("%s/%d", seg[:1], r.ID)] = r.Round
		}
	}
	var raw [2][]int64 // every get's latency, by round
	logged := [2]int64{}
	for i, path := range logs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if lines[0]+"\n" != metrics.LatencyLogHeader {
			t.Fatalf("%s begins %q", path, lines[0])
		}
		for _, line := range lines[1:] {
			f := strings.Split(line, ",")
			round, ok := roundOf[fmt.Sprintf("%d/%s", i, f[0])]
			lat, err := strconv.ParseInt(f[3], 10, 64)
			if len(f) != 5 || !ok || err != nil {
				t.Fatalf("%s: %q is no line of a run of segment %d", path, line, i)
			}
			logged[round]++
			if f[1] == "get" {
				raw[round] = append(raw[round], lat)
			}
		}
	}
	for _, r := range merged.Runs {
		got := r.Ops["get"].Ops + r.Ops["put"].Ops
		h := metrics.NewHistogram()
		for _, v := range raw[r.Round] {
			metrics.RecordLatencyN(h, v, 1)
		}
		slices.Sort(raw[r.Round])
		rank := max(1, int(0.99*float64(len(raw[r.Round]))+0.5)) // the rank HdrHistogram's p99 takes
		exact := raw[r.Round][rank-1]
		if r.Status != "ok" || got != ops[r.Round] || got != 60 || logged[r.Round] != 60 || r.Ops["get"].Ops != int64(len(raw[r.Round])) ||
			r.Ops["get"].Lat.P99 != h.ValueAtQuantile(99) || math.Abs(float64(r.Ops["get"].Lat.P99-exact)) > 0.001*float64(exact) {
			t.Errorf("round %d: %s, %d operations (segments stored %d, logged %d, want 60), get p99 %d (raw latencies: %d in a histogram, %d exact)",
				r.Round, r.Status, got, ops[r.Round], logged[r.Round], r.Ops["get"].Lat.P99, h.ValueAtQuantile(99), exact)
		}
	}
	text, _, err := iolab(t, context.Background(), "show", "--db", db)
	if err != nil || !strings.Contains(text, "segments of load-a (2)") || !strings.Contains(text, "0/2") || !strings.Contains(text, "1/2") {
		t.Fatalf("show:\n%s", text)
	}
	// history sees the load once, whole, not its two halves.
	var h []struct{ Steps []json.RawMessage }
	hist, _, err := iolab(t, context.Background(), "history", "--db", db, "--json", "--metric", "ops_per_s")
	if err == nil {
		decodeInto(t, hist, &h)
	}
	if err != nil || len(h) != 1 || len(h[0].Steps) != 1 {
		t.Errorf("history of one load in two segments (%v):\n%s", err, hist)
	}

	// A group already used by a load is refused before anything is
	// stored: its barriers would open on that load's arrivals.
	if err := segmentRun("1/2", "--segment-group", "load-a"); err == nil || !strings.Contains(err.Error(), "--segment-group load-a already holds segment 1/2 (experiment ") {
		t.Fatalf("a reused group: %v", err)
	}
	if n := strings.Count(mustLs(t, db), "\n"); n != 3 {
		t.Fatalf("the refused segment stored an experiment:\n%s", mustLs(t, db))
	}
	// A segment that never comes: the others wait at the barrier, then fail
	// naming it.
	err = segmentRun("0/3", "--segment-group", "load-b", "--barrier-timeout", "1s")
	if err == nil || !strings.Contains(err.Error(), "segments 1/3, 2/3 never arrived within 1s") {
		t.Fatalf("a lone segment at the barrier: %v", err)
	}
	// With --start-at a lone segment runs its first round; at the second
	// it finds the other never began, and stops. show names the one
	// missing and calls every run partial.
	err = segmentRun("1/2", "--start-at", "+1s")
	if err == nil || !strings.Contains(err.Error(), "segment 0/2 never began") {
		t.Fatalf("a lone segment after its first run: %v", err)
	}
	lone := ""
	for _, line := range strings.Split(mustLs(t, db), "\n") {
		if strings.Contains(line, "failed") {
			lone = strings.Fields(line)[0]
			break
		}
	}
	out, _, err = iolab(t, context.Background(), "show", lone, "--db", db)
	if err != nil || !strings.Contains(out, "MISSING: segment 0/2 stored nothing") || !strings.Contains(out, "no successful measured run") {
		t.Fatalf("show of a load missing a segment (%v):\n%s", err, out)
	}
}

func mustLs(t *testing.T, db string) string {
	t.Helper()
	out, _, err := iolab(t, context.Background(), "ls", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Two segments of an fs load on one SQLite store: the jobs split (2 and
// 1 of 3), each keeps its number in the whole, so its files are its own;
// both describe the whole load, and show merges them.
func TestFSSegments(t *testing.T) {
	t.Parallel()
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "x.db")
	runSegments(t, 2, "fs", "--directory", dir, "--rw=randread", "--bs=4k", "--size=256k",
		"--numjobs=3", "--rounds=1", "--warmup=0", "-q", "--db", db, "--segment-group", "fs-a", "--barrier-timeout", "60s")
	for _, f := range []string{"iolab.0.0", "iolab.1.0", "iolab.2.0"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() != 256<<10 {
			t.Errorf("%s: %v", f, err)
		}
	}
	out, _, err := iolab(t, context.Background(), "show", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Cells []struct{ Params map[string]string }
		Runs  []struct {
			Status string
			Read   *struct{ Ops int64 }
		}
		Segments struct{ Experiments map[string]string }
	}
	decodeInto(t, out, &r)
	// 3 jobs x 256 KiB of 4 KiB reads, whichever segment ran them.
	if len(r.Runs) != 1 || r.Runs[0].Status != "ok" || r.Runs[0].Read.Ops != 3*64 || r.Cells[0].Params["numjobs"] != "3" ||
		r.Cells[0].Params["segments"] != "2" || len(r.Segments.Experiments) != 2 {
		t.Fatalf("merged fs load: %s", out)
	}
}

// A workload that does not split its load (a command) refuses --segment
// rather than run all of it in every segment.
func TestSegmentRefusedWhereNotSplit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"plan.yaml": "workloads:\n  - name: c\n    cmd: {run: 'true'}\n"})
	_, _, err := iolab(t, context.Background(), "experiment", filepath.Join(dir, "plan.yaml"),
		"--segment", "0/2", "--start-at", "+1s", "--db", filepath.Join(t.TempDir(), "x.db"))
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), `workload "c" is cmd, which does not split its load yet (frames, fs, http, s3 do)`) {
		t.Fatalf("a command's --segment: %v", err)
	}
	_, _, err = iolab(t, context.Background(), "fs", "--directory", t.TempDir(), "--size=64k", "--segment", "0/2", "--db", filepath.Join(t.TempDir(), "x.db"))
	if err == nil || !strings.Contains(err.Error(), "give --segment-group NAME") {
		t.Fatalf("--segment without a group: %v", err)
	}
}

// Runs of a fixed count end at different times: every run after the
// first starts at a barrier of its own. A segment killed mid-run is found
// dead at the next one (its process is gone): the survivor stops, naming
// it, and show names it and calls the run it cut partial, never a
// smaller whole.
func TestKilledSegmentIsNamed(t *testing.T) {
	slow(t)
	t.Parallel()
	bin, dir, db := buildIolab(t), t.TempDir(), filepath.Join(t.TempDir(), "x.db")
	args := func(seg string) []string {
		return []string{"fs", "--directory", dir, "--rw=randread", "--bs=4k", "--size=1m", "--numjobs=2", "--runtime=1s",
			"--rounds=4", "--warmup=0", "-q", "--db", db, "--segment", seg, "--segment-group", "kill-a", "--barrier-timeout", "2m", "--rejoin-timeout", "0"}
	}
	victim := startVictim(t, bin, args("1/2"))
	survivor := make(chan error, 1)
	go func() {
		_, stderr, err := iolab(t, context.Background(), args("0/2")...)
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, stderr)
		}
		survivor <- err
	}()
	killMidRun(t, db, victim, "1/2")
	err := <-survivor
	want := fmt.Sprintf("segment 1/2 died (pid %d on ", victim.Process.Pid)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("the survivor of a killed segment: %v (want %q)", err, want)
	}
	out, _, err := iolab(t, context.Background(), "show", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Status string
		Runs   []struct {
			Round  int
			Status string
			Error  string
		}
		Segments struct{ Died []string }
	}
	decodeInto(t, out, &r)
	if r.Status != "partial" || len(r.Segments.Died) != 1 || !strings.Contains(r.Segments.Died[0], want) {
		t.Fatalf("show of a load with a dead segment: %s", out)
	}
	// The victim stored one run or more whole; the one it was in is
	// partial, naming it; none after it ran.
	partial := 0
	for i, run := range r.Runs {
		switch {
		case run.Status == "ok" && partial == 0:
		case run.Status == "partial" && partial == 0 && strings.Contains(run.Error, "segment 1/2 interrupted: iolab was killed during the run"):
			partial++
		default:
			t.Fatalf("run %d of the merged load: %s %s\n%s", i, run.Status, run.Error, out)
		}
	}
	if partial != 1 || len(r.Runs) < 2 || len(r.Runs) == 4 {
		t.Fatalf("a load cut in its run %d: %s", len(r.Runs), out)
	}
	text, _, _ := iolab(t, context.Background(), "show", "--db", db)
	if !strings.Contains(text, "DIED: "+want) {
		t.Fatalf("show:\n%s", text)
	}
	// Read, the store no longer lists the dead segment as running.
	var list []struct{ Status, Command string }
	ls, _, _ := iolab(t, context.Background(), "ls", "--db", db, "--json")
	decodeInto(t, ls, &list)
	for _, e := range list {
		if strings.Contains(e.Command, "--segment=1/2") && e.Status != "died" {
			t.Errorf("the killed segment is listed as %s", e.Status)
		}
	}
	// The HTML report draws the load whole, with each segment's share and
	// the one that died.
	html := filepath.Join(t.TempDir(), "r.html")
	if _, _, err := iolab(t, context.Background(), "report", "--db", db, "-o", html); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(html)
	if !strings.Contains(string(page), "Segments of kill-a (2)") || !strings.Contains(string(page), "DIED: "+want) ||
		!strings.Contains(string(page), "<td>0/2</td>") || !strings.Contains(string(page), "<td>1/2</td>") {
		t.Fatalf("the HTML report of a load in segments:\n%s", page)
	}
}

// A plan split in two: two variants x two sizes of an s3 load, run by two
// segments meeting in PostgreSQL. Both run the cells in one order, meet
// before every run, and show merges each run whole: every merged run
// has the count of operations the plan gives, and the variants are
// compared as in one process.
func TestPlanSegments(t *testing.T) {
	slow(t)
	t.Parallel()
	srv, db, dir := s3Servers(t)[0], pgtest.Database(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"plan.yaml": fmt.Sprintf(`name: split
rounds: 2
warmup: 0
variants:
  - name: a
  - name: b
workloads:
  - name: obj
    s3: {endpoint: "%s", access-key: %s, secret-key: %s, bucket: plansegs, create-bucket: true, mix: "put=1,get=1", count: 20, concurrency: 2}
    matrix: {size: [1k, 8k]}
`, srv.endpoint, testAccessKey, testSecretKey),
		"server.yaml": "variants:\n  - name: a\n    start: sleep 100\nworkloads:\n  - name: obj\n    s3: {endpoint: \"http://127.0.0.1:1\", bucket: b, count: 2}\n"})
	runSegments(t, 2, "experiment", filepath.Join(dir, "plan.yaml"), "-q", "--db", db, "--segment-group", "plan-a", "--barrier-timeout", "60s")
	out, _, err := iolab(t, context.Background(), "show", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Runs []struct {
			Cell, Variant, Status string
			Ops                   map[string]s3OpJSON
		}
		Comparisons []json.RawMessage
		Segments    struct{ Experiments map[string]string }
	}
	decodeInto(t, out, &r)
	if len(r.Runs) != 8 || len(r.Segments.Experiments) != 2 || len(r.Comparisons) == 0 {
		t.Fatalf("merged plan: %d runs, %d segments, %d comparisons\n%s", len(r.Runs), len(r.Segments.Experiments), len(r.Comparisons), out)
	}
	for _, run := range r.Runs {
		if n := run.Ops["put"].Ops + run.Ops["get"].Ops; run.Status != "ok" || n != 20 {
			t.Fatalf("%s/%s: %s, %d operations, want 20", run.Variant, run.Cell, run.Status, n)
		}
	}
	// A variant that starts a server would start one in every segment.
	_, _, err = iolab(t, context.Background(), "experiment", filepath.Join(dir, "server.yaml"), "-q", "--db", db, "--segment", "0/2", "--segment-group", "srv")
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), `variant "a" starts a server`) {
		t.Fatalf("a server variant split: %v", err)
	}
}

// Two segments of a frame test play one sequence: every other position
// each, on the whole's schedule, their frames their own (written, read
// back, removed); show merges them into the whole sequence, every frame
// once in play order.
func TestFramesSegments(t *testing.T) {
	t.Parallel()
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "x.db")
	load := func(group string, extra ...string) {
		t.Helper()
		runSegments(t, 2, append([]string{"frames", "--directory", dir, "--profile", "64x64x24", "--frames", "21", "--threads", "2", "--fps", "200",
			"--order", "random", "--rounds=1", "--warmup=0", "-q", "--db", db, "--segment-group", group, "--barrier-timeout", "60s"}, extra...)...)
	}
	for _, mode := range []string{"write", "read"} {
		var extra []string
		if mode == "read" {
			extra = []string{"--read"}
		}
		load("frames-"+mode, extra...)
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Fatalf("%s: %d files left behind", mode, len(left))
		}
		out, _, err := iolab(t, context.Background(), "show", "--db", db, "--format", "frames")
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 22 {
			t.Fatalf("%s: %d lines of frames, want a header and 21:\n%s", mode, len(lines), out)
		}
		pos := slices.Index(strings.Split(lines[0], ","), "pos")
		frame := slices.Index(strings.Split(lines[0], ","), "frame")
		seen := map[string]bool{}
		for k, line := range lines[1:] {
			f := strings.Split(line, ",")
			if pos < 0 || frame < 0 || f[pos] != strconv.Itoa(k) || seen[f[frame]] {
				t.Fatalf("%s: line %d %q (columns %s)", mode, k, line, lines[0])
			}
			seen[f[frame]] = true
		}
		var r struct {
			Runs []struct {
				Status string
				Extra  map[string]float64
			}
		}
		js, _, _ := iolab(t, context.Background(), "show", "--db", db, "--json")
		decodeInto(t, js, &r)
		if len(r.Runs) != 1 || r.Runs[0].Status != "ok" || r.Runs[0].Extra["frames_done"] != 21 || r.Runs[0].Extra["frames_target_fps"] != 200 {
			t.Fatalf("%s: merged %s", mode, js)
		}
	}
}

// runSegments runs the n segments of one load at once in this process:
// args with --segment I/N added, failing the test with every segment's
// error.
func runSegments(t *testing.T, n int, args ...string) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			seg := fmt.Sprintf("%d/%d", i, n)
			if _, stderr, err := iolab(t, context.Background(), append(slices.Clone(args), "--segment", seg)...); err != nil {
				errs[i] = fmt.Errorf("segment %s: %v\n%s", seg, err, stderr)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// A group holds one load: a segment of another load (other parameters, or
// the load split another number of ways) is refused before it prepares
// anything, naming the difference, while the group's own segment waits.
func TestSegmentOfAnotherLoadRefused(t *testing.T) {
	t.Parallel()
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "x.db")
	load := func(seg string, args ...string) []string {
		return append([]string{"fs", "--directory", dir, "--size=256k", "--numjobs=6", "--rounds=1", "--warmup=0", "-q", "--db", db,
			"--segment-group", "one-load", "--segment", seg, "--start-at", "+60s"}, args...)
	}
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, _, err := iolab(t, ctx, load("0/2", "--rw=randread", "--bs=4k")...)
		first <- err
	}()
	t.Cleanup(func() { cancel(); <-first })
	// The first segment has joined once its experiment is stored.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if out, _, _ := iolab(t, context.Background(), "ls", "--db", db); strings.Contains(out, "0/2") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("segment 0/2 never stored its experiment")
		}
	}
	_, _, err := iolab(t, context.Background(), load("1/2", "--rw=write", "--bs=64k")...)
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "--segment-group one-load runs another load: cell 1 (randread-4k-qd1x6) bs: 4k in the group, 64k here") {
		t.Fatalf("a segment of another load: %v", err)
	}
	_, _, err = iolab(t, context.Background(), load("1/3", "--rw=randread", "--bs=4k")...)
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "the load of --segment-group one-load is split 2 ways, not 3") {
		t.Fatalf("a segment of another split: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "iolab.3.0")); err == nil {
		t.Error("a refused segment laid out its file")
	}
}

// A store that already holds a group that is not one load (written before
// segments were checked) stays readable: show names the group malformed
// and shows the segment alone, history and report leave the group out and
// say so, and rm deletes the group whole.
func TestMalformedGroupStaysReadable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	if _, stderr, err := iolab(t, ctx, "fs", "--directory", t.TempDir(), "--size=64k", "--rounds=3", "--warmup=0", "-q", "--db", db); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	for i, seg := range []string{"0/2", "1/3"} {
		e := &store.Experiment{ID: fmt.Sprintf("20260101-00000%d-bad%d", i, i), Name: "fs", Command: "iolab fs", Plan: []byte("{}"),
			CreatedAt: time.Now().Add(-time.Hour), Status: "done", SegmentGroup: "bad", Segment: seg}
		if err := st.CreateExperiment(ctx, e, []store.Cell{{Name: "randread-4k", Workload: "fs", Params: map[string]string{}}}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	out, _, err := iolab(t, ctx, "show", "bad0", "--db", db)
	if err != nil || !strings.Contains(out, "MALFORMED: the experiments of segment group bad are not one load") {
		t.Fatalf("show of a malformed group's segment: %v\n%s", err, out)
	}
	var r jsonReport
	out, _, err = iolab(t, ctx, "show", "bad0", "--db", db, "--json")
	if decodeInto(t, out, &r); err != nil || !hasWarning(r, "malformed-segment-group") {
		t.Fatalf("show --json: %v %+v", err, r.Warnings)
	}
	if out, _, err := iolab(t, ctx, "show", "--db", db); err != nil || strings.Contains(out, "MALFORMED") {
		t.Fatalf("show of the newest: %v\n%s", err, out)
	}
	out, stderr, err := iolab(t, ctx, "history", "--db", db)
	if err != nil || !strings.Contains(stderr, "segment group bad is not one load") || !strings.Contains(out, "read-4k (fs") {
		t.Fatalf("history: %v\n%s\n%s", err, out, stderr)
	}
	if _, stderr, err := iolab(t, ctx, "report", "--db", db, "-o", filepath.Join(dir, "r.html")); err != nil {
		t.Fatalf("report: %v\n%s", err, stderr)
	}
	// rm: refused without a terminal to ask on, naming the whole group;
	// with --yes, the group goes whole and the rest stays.
	if _, _, err := iolab(t, ctx, "rm", "bad1", "--db", db); err == nil || ExitCode(err) != 2 ||
		!strings.Contains(err.Error(), "would delete 20260101-000000-bad0 (segment 0/2), 20260101-000001-bad1 (segment 1/3); give --yes") {
		t.Fatalf("rm without --yes: %v", err)
	}
	if out, _, err := iolab(t, ctx, "rm", "bad1", "--db", db, "--yes"); err != nil || strings.Count(out, "deleted ") != 2 {
		t.Fatalf("rm --yes: %v\n%s", err, out)
	}
	out, _, err = iolab(t, ctx, "ls", "--db", db)
	if err != nil || strings.Contains(out, "bad") || strings.Count(strings.TrimSpace(out), "\n") < 1 {
		t.Fatalf("ls after rm: %v\n%s", err, out)
	}
	if _, stderr, err := iolab(t, ctx, "history", "--db", db); err != nil || stderr != "" {
		t.Fatalf("history after rm: %v\n%s", err, stderr)
	}
	if _, _, err := iolab(t, ctx, "rm", "bad1", "--db", db, "--yes"); err == nil || !strings.Contains(err.Error(), "no such experiment") {
		t.Fatalf("rm of what is gone: %v", err)
	}
}

// A segment killed mid-run and started again with the same command (as a
// Kubernetes Indexed Job restarts a pod) continues its own experiment: the
// survivor waits at its barrier, the restarted one redoes the cut run
// alone and meets it at the next, and both finish. The merged load calls
// the redone run partial — its segments' runs started apart — and every
// other run is the load's, its segments started together (from the
// stored start times). Processes of their own, on a real PostgreSQL.
func TestRestartedSegmentRejoins(t *testing.T) {
	slow(t)
	t.Parallel()
	bin, dir, db := buildIolab(t), t.TempDir(), pgtest.Database(t)
	args := func(seg string) []string {
		return []string{"fs", "--directory", dir, "--rw=randread", "--bs=4k", "--size=1m", "--numjobs=2", "--runtime=1s",
			"--rounds=4", "--warmup=0", "-q", "--db", db, "--segment", seg, "--segment-group", "rejoin-a", "--barrier-timeout", "2m", "--rejoin-timeout", "2m"}
	}
	victim := startVictim(t, bin, args("1/2"))
	survivor := startSurvivor(bin, args("0/2"))
	killMidRun(t, db, victim, "1/2")
	time.Sleep(1500 * time.Millisecond) // the survivor finds it dead at its barrier, and waits
	if out, err := exec.Command(bin, args("1/2")...).CombinedOutput(); err != nil {
		t.Fatalf("the restarted segment: %v\n%s", err, out)
	}
	if err := <-survivor; err != nil {
		t.Fatalf("the survivor: %v", err)
	}
	if n := countQuiet(db, `SELECT count(*) FROM experiments`); n != 2 {
		t.Fatalf("%d experiments: the restart made a new one instead of continuing its own", n)
	}
	out, _, err := iolab(t, context.Background(), "show", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Status string
		Runs   []struct {
			Round  int
			Status string
			Error  string
		}
	}
	decodeInto(t, out, &r)
	partial := 0
	for _, run := range r.Runs {
		switch {
		case run.Status == "partial" && strings.Contains(run.Error, "apart (segment 0/2, segment 1/2), not together"):
			partial++
		case run.Status == "ok":
			// Its segments' runs started together.
			q := fmt.Sprintf(`SELECT count(*) FROM runs a JOIN experiments ea ON ea.id = a.experiment_id, runs b JOIN experiments eb ON eb.id = b.experiment_id
				WHERE ea.segment = '0/2' AND eb.segment = '1/2' AND a.round = %d AND b.round = %d AND a.status = 'ok' AND b.status = 'ok'
				AND abs(extract(epoch from a.started_at::timestamptz) - extract(epoch from b.started_at::timestamptz)) < 1`, run.Round, run.Round)
			if countQuiet(db, q) != 1 {
				t.Errorf("merged round %d is ok, but its segments' runs did not start within 1 s of each other", run.Round)
			}
		default:
			t.Errorf("round %d: %s %s", run.Round, run.Status, run.Error)
		}
	}
	if r.Status != "done" || len(r.Runs) != 4 || partial != 1 {
		t.Fatalf("the load after a restart: %s, %d runs, %d partial\n%s", r.Status, len(r.Runs), partial, out)
	}
}

// Gates judge the whole load, in every segment: at 100 reads/s per job and
// one job per segment, each segment alone does ~100/s and the load ~200/s.
// 'ops_per_s>150' passes in both segments (each alone would fail it),
// 'ops_per_s<150' fails in both (each alone would pass it).
func TestSegmentGatesJudgeTheWholeLoad(t *testing.T) {
	slow(t)
	t.Parallel()
	for _, c := range []struct {
		gate string
		pass bool
	}{{"ops_per_s>150", true}, {"ops_per_s<150", false}} {
		dir, db := t.TempDir(), filepath.Join(t.TempDir(), "x.db")
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() {
				_, _, errs[i] = iolab(t, context.Background(), "fs", "--directory", dir, "--rw=randread", "--bs=4k", "--size=1m", "--numjobs=2",
					"--rate_iops=100", "--runtime=2s", "--rounds=1", "--warmup=0", "-q", "--db", db, "--segment", fmt.Sprintf("%d/2", i),
					"--segment-group", "gate", "--barrier-timeout", "60s", "--gate", c.gate)
			})
		}
		wg.Wait()
		for i, err := range errs {
			switch {
			case c.pass && err != nil:
				t.Errorf("%s, segment %d/2: %v", c.gate, i, err)
			case !c.pass && (ExitCode(err) != 1 || !strings.Contains(err.Error(), c.gate)):
				t.Errorf("%s, segment %d/2: %v, want exit 1 naming the gate", c.gate, i, err)
			}
		}
	}
}

// PostgreSQL stopped in the middle of a run of a load (pg_ctl stop -m
// fast, 6 s down, start): the run goes on as measured — its duration its
// runtime, its operations those of the latency log, none failed, its
// seconds written when the store is back and the wait noted — and the
// load completes, the outage a pause between runs, no run lost or stored
// twice. Down past --store-grace, every segment stops measuring and says
// why, and writes the run it held once the store is back. Processes of
// their own, on a PostgreSQL of the test's own.
func TestSegmentsOutlastAStoreRestart(t *testing.T) {
	slow(t)
	t.Parallel()
	bin, dir := buildIolab(t), t.TempDir()
	pg := pgtest.Private(t)
	db := pg.URL()
	const runtime, rounds = 3 * time.Second, 3
	load := func(grp, grace string) ([]*exec.Cmd, []string) {
		var cmds []*exec.Cmd
		var logs []string
		for i := range 2 {
			latLog := filepath.Join(t.TempDir(), "lat.csv")
			cmd := exec.Command(bin, "fs", "--directory", dir, "--rw=randread", "--bs=4k", "--size=1m", "--numjobs=2", "--rate_iops=200",
				"--runtime", runtime.String(), "--rounds", fmt.Sprint(rounds), "--warmup=0", "-q", "--db", db, "--segment", fmt.Sprintf("%d/2", i),
				"--segment-group", grp, "--barrier-timeout", "2m", "--store-grace", grace, "--lat-log", latLog)
			out := &syncBuffer{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			cmds, logs = append(cmds, cmd), append(logs, latLog)
		}
		return cmds, logs
	}
	// until waits for the first row q counts.
	until := func(q, what string) {
		for deadline := time.Now().Add(2 * time.Minute); countQuiet(db, q) < 1; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
		}
	}
	cmds, logs := load("restart", "60s")
	// In the middle of a run: its first seconds are stored, the rest of it
	// is to come.
	until(`SELECT count(*) FROM series s JOIN runs r ON r.id = s.run_id JOIN experiments e ON e.id = r.experiment_id
		WHERE e.segment_grp = 'restart' AND r.status = 'running' AND s.second = 0`, "no run under way")
	pg.Stop()
	time.Sleep(6 * time.Second)
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("segment %d/2 through a restart: %v\n%s", i, err, cmd.Stdout.(*syncBuffer))
		}
	}
	out, _, err := iolab(t, context.Background(), "show", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Status string
		Runs   []struct{ Status string }
	}
	decodeInto(t, out, &r)
	ok := 0
	for _, run := range r.Runs {
		if run.Status == "ok" {
			ok++
		}
	}
	if r.Status != "done" || len(r.Runs) != rounds || ok != rounds {
		t.Fatalf("the load through a restart: %s, %d runs, %d ok\n%s", r.Status, len(r.Runs), ok, out)
	}
	if n := countQuiet(db, `SELECT count(*) FROM runs`); n != 2*rounds {
		t.Fatalf("%d runs stored by the two segments, want %d: none lost, none twice", n, 2*rounds)
	}
	// Every run lasted its runtime: the outage held up the writing of
	// seconds, not a run (it had run on until the store came back).
	// (Counted as those that did: a query that fails counts 0, never
	// "none too long".)
	lasted := fmt.Sprintf(`SELECT count(*) FROM runs WHERE duration_ns >= %d AND duration_ns <= %d`, runtime, runtime+2*time.Second)
	if n := countQuiet(db, lasted); n != 2*rounds {
		t.Errorf("%d of %d runs lasted their runtime of %v", n, 2*rounds, runtime)
	}
	if n := countQuiet(db, `SELECT count(*) FROM runs WHERE notes LIKE '%store-held%'`); n < 1 {
		t.Errorf("no run says the store held its seconds")
	}
	lines := 0
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte("\n")) - 1 // the header
	}
	if ops := countQuiet(db, `SELECT CAST(sum(ops) AS INTEGER) FROM run_directions`); ops != lines || ops == 0 {
		t.Errorf("%d operations stored, %d in the latency logs", ops, lines)
	}
	if secs := countQuiet(db, `SELECT count(*) FROM series`); secs < 2*rounds*int(runtime/time.Second) {
		t.Errorf("%d seconds stored of %d runs of %v", secs, 2*rounds, runtime)
	}
	// Down past the grace: each segment stops measuring, says so, and
	// keeps what it has not written (the run it had just measured, or how
	// the experiment ended) until the store returns, then writes it and
	// exits, saying what became of it.
	cmds, _ = load("gone", "2s")
	until(`SELECT count(*) FROM runs r JOIN experiments e ON e.id = r.experiment_id WHERE e.segment_grp = 'gone' AND r.status = 'ok'`, "no run stored")
	pg.Stop()
	for i, cmd := range cmds {
		out := cmd.Stdout.(*syncBuffer)
		for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), "iolab: no more runs; "); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("segment %d/2 a minute after the store went away:\n%s", i, out)
			}
		}
		if !strings.Contains(out.String(), "the store has been unreachable for 2s (--store-grace 2s)") {
			t.Errorf("segment %d/2 does not say why it stopped:\n%s", i, out)
		}
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		err := cmd.Wait()
		if err == nil || !strings.Contains(cmd.Stdout.(*syncBuffer).String(), " was written when the store returned") {
			t.Errorf("segment %d/2 after the store returned: %v\n%s", i, err, cmd.Stdout)
		}
	}
	held := `SELECT count(*) FROM runs r JOIN experiments e ON e.id = r.experiment_id WHERE e.segment_grp = 'gone' AND r.status <> 'running'`
	if n := countQuiet(db, held); n < 2 {
		t.Errorf("%d runs of the two segments stored, want at least the first of each", n)
	}
	if n := countQuiet(db, `SELECT count(*) FROM experiments WHERE segment_grp = 'gone' AND status = 'running'`); n != 0 {
		t.Errorf("%d segments left running", n)
	}
}

// syncBuffer is a buffer a process writes into while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Segments with SQLite files of their own meet by the clock (--start-at,
// --run-every), and iolab import makes them one load in a shared store: the
// same merged runs, operation for operation, as the same load run with a
// shared PostgreSQL store. A second import is refused, and so is a
// segment of another split into that group; nothing is copied then.
func TestImportSegmentsRunApart(t *testing.T) {
	slow(t)
	t.Parallel()
	ctx := context.Background()
	dir, stores := t.TempDir(), t.TempDir()
	pg := pgtest.Database(t)
	load := []string{"fs", "--directory", dir, "--rw=randread", "--bs=4k", "--size=256k", "--numjobs=2", "--rounds=3", "--warmup=0", "-q"}
	start := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			_, stderr, err := iolab(t, ctx, append(slices.Clone(load), "--segment", fmt.Sprintf("%d/2", i), "--segment-group", "apart",
				"--start-at", start, "--run-every", "1s", "--db", filepath.Join(stores, fmt.Sprintf("seg%d.db", i)))...)
			if err != nil {
				errs[i] = fmt.Errorf("segment %d/2: %v\n%s", i, err, stderr)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(stores, "seg0.db"), filepath.Join(stores, "seg1.db")
	out, _, err := iolab(t, ctx, "import", a, b, "--db", pg)
	if err != nil || strings.Count(out, "\nimported ") != 1 || !strings.HasPrefix(out, "imported ") || !strings.Contains(out, "2 experiments imported") {
		t.Fatalf("import: %v\n%s", err, out)
	}
	type merged struct {
		Status string
		Runs   []struct {
			Round  int
			Status string
			Read   *struct{ Ops int64 }
		}
		Segments struct{ Experiments map[string]string }
	}
	var apart merged
	out, _, err = iolab(t, ctx, "show", "--db", pg, "--json")
	decodeInto(t, out, &apart)
	if err != nil || apart.Status != "done" || len(apart.Segments.Experiments) != 2 || len(apart.Runs) != 3 {
		t.Fatalf("the imported load: %v\n%s", err, out)
	}
	// The same load, its segments sharing the PostgreSQL store.
	shared := pgtest.Database(t)
	runSegments(t, 2, append(slices.Clone(load), "--segment-group", "together", "--db", shared, "--barrier-timeout", "60s")...)
	var together merged
	out, _, _ = iolab(t, ctx, "show", "--db", shared, "--json")
	decodeInto(t, out, &together)
	for i, run := range apart.Runs {
		if run.Status != "ok" || run.Read == nil || run.Read.Ops != 2*64 || len(together.Runs) != 3 ||
			together.Runs[i].Status != "ok" || together.Runs[i].Read.Ops != run.Read.Ops {
			t.Fatalf("run %d: apart %+v, together %+v", i, run, together.Runs)
		}
	}
	// Again: refused, naming the experiment; and a segment of another
	// split into the same group.
	if _, _, err := iolab(t, ctx, "import", a, "--db", pg); err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "already; imported before?") {
		t.Fatalf("a second import: %v", err)
	}
	other := filepath.Join(stores, "other.db")
	if _, stderr, err := iolab(t, ctx, append(slices.Clone(load)[:len(load)-4], "--numjobs=3", "--rounds=1", "--warmup=0", "-q", "--segment", "0/3",
		"--segment-group", "apart", "--start-at", "+1s", "--run-every", "1s", "--db", other)...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if _, _, err := iolab(t, ctx, "import", other, "--db", pg); err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "segment group apart is not one load") {
		t.Fatalf("a segment of another split: %v", err)
	}
	if n := countQuiet(pg, `SELECT count(*) FROM experiments`); n != 2 {
		t.Fatalf("%d experiments after the refused imports, want 2", n)
	}
}

// show --follow draws a load in segments while it runs, from the store
// alone: views in which both segments are in a run, the load's ops/s
// the sum of theirs; then it ends with the load.
func TestFollowDrawsTheLoadLive(t *testing.T) {
	slow(t)
	t.Parallel()
	ctx := context.Background()
	dir, db := t.TempDir(), pgtest.Database(t) // a shared server: seconds go to it every second
	done := make(chan error, 1)
	go func() {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() {
				_, stderr, err := iolab(t, ctx, "fs", "--directory", dir, "--rw=randread", "--bs=4k", "--size=1m", "--numjobs=2", "--runtime=5s",
					"--rate_iops=500", "--rounds=2", "--warmup=0", "-q", "--db", db, "--segment", fmt.Sprintf("%d/2", i), "--segment-group", "live",
					"--barrier-timeout", "60s")
				if err != nil {
					errs[i] = fmt.Errorf("%v\n%s", err, stderr)
				}
			})
		}
		wg.Wait()
		done <- errors.Join(errs...)
	}()
	for deadline := time.Now().Add(time.Minute); countQuiet(db, `SELECT count(*) FROM experiments WHERE segment_grp = 'live'`) < 1; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no segment began")
		}
	}
	out, _, err := iolab(t, ctx, "show", "--follow", "live", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	views := strings.Split(strings.TrimSpace(out), "\n\n")
	head := regexp.MustCompile(`^load live \(2 of 2 segments stored\) at [0-9:]+: ([0-9.k]+) ops/s .* \(the latest second of the 2 segments in a run\)`)
	row := regexp.MustCompile(`(?m)^  ([01]/2) +round [01] +\d+ +([0-9.k]+) `)
	both := 0
	for _, v := range views {
		m := head.FindStringSubmatch(v)
		rows := row.FindAllStringSubmatch(v, -1)
		if m == nil || len(rows) != 2 {
			continue
		}
		both++
		var sum float64
		for _, r := range rows {
			sum += parseCount(t, r[2])
		}
		if total := parseCount(t, m[1]); math.Abs(total-sum) > 0.01*sum || total < 500 {
			t.Errorf("the load's ops/s %v, its segments' %v:\n%s", total, sum, v)
		}
	}
	if both < 2 || !strings.Contains(views[len(views)-1], "every segment has ended") {
		t.Fatalf("%d views with both segments in a run:\n%s", both, out)
	}
}

// parseCount reads a count as stats.FormatValue prints it (1234, 1.23k).
func parseCount(t *testing.T, s string) float64 {
	mult := 1.0
	if v, ok := strings.CutSuffix(s, "k"); ok {
		s, mult = v, 1e3
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("count %q: %v", s, err)
	}
	return f * mult
}

// startVictim starts a segment as an iolab process of its own, to kill:
// what it says is kept for the failure message of killMidRun.
func startVictim(t *testing.T, bin string, args []string) *exec.Cmd {
	t.Helper()
	victim := exec.Command(bin, args...)
	said := &syncBuffer{}
	victim.Stdout, victim.Stderr = said, said
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = victim.Process.Kill() })
	return victim
}

// startSurvivor runs a segment as an iolab process of its own beside a
// victim; its error, with what it said, comes on the channel.
func startSurvivor(bin string, args []string) <-chan error {
	survivor := make(chan error, 1)
	go func() {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, out)
		}
		survivor <- err
	}()
	return survivor
}

// killMidRun kills segment seg's process (victim) once it has stored a
// run and begun the next.
func killMidRun(t *testing.T, db string, victim *exec.Cmd, seg string) {
	t.Helper()
	stored := `SELECT count(*) FROM runs r JOIN experiments e ON e.id = r.experiment_id WHERE e.segment = '` + seg + `' AND r.status = '%s'`
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if countQuiet(db, fmt.Sprintf(stored, "ok")) >= 1 && countQuiet(db, fmt.Sprintf(stored, "running")) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the victim never stored a run and began another; it said:\n%v", victim.Stdout)
		}
	}
	_ = victim.Process.Signal(syscall.SIGKILL)
	_ = victim.Wait()
}

// A segment that fails before it stores anything (a directory that is not
// there, a size its disk cannot hold) does not bind its group to its
// load: the corrected command joins the group. (The directory alone is
// no difference: hosts mount a target where they do.)
func TestFailedSegmentLeavesItsGroupFree(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "x.db")
	args := func(dir string) []string {
		size := "--size=64k"
		if strings.HasSuffix(dir, "missing") {
			size = "--size=128k"
		}
		return []string{"fs", "--directory", dir, size, "--numjobs=2", "--rounds=1", "--warmup=0", "-q", "--db", db,
			"--segment", "0/2", "--segment-group", "fix-me", "--start-at", "+1s", "--barrier-timeout", "3s"}
	}
	if _, _, err := iolab(t, context.Background(), args(filepath.Join(t.TempDir(), "missing"))...); err == nil || ExitCode(err) != 2 {
		t.Fatalf("a directory that is not there: %v", err)
	}
	_, _, err := iolab(t, context.Background(), args(t.TempDir())...)
	if err == nil || strings.Contains(err.Error(), "runs another load") || !strings.Contains(err.Error(), "segment 1/2") {
		t.Fatalf("the corrected command: %v (want it to join, then miss segment 1/2)", err)
	}
	if n := countQuiet(db, `SELECT count(*) FROM experiments WHERE segment_grp = 'fix-me'`); n != 1 {
		t.Fatalf("%d experiments stored in the group", n)
	}
}

// mpirun -np 3 iolab fs ...: each rank runs its segment of the load with
// no flag but the store — the segment from OMPI_COMM_WORLD_RANK/SIZE, the
// group from the job's ID — and show merges the three exactly (3 jobs x
// 256 KiB of 4 KiB reads, 2 rounds).
func TestSegmentsUnderMpirun(t *testing.T) {
	slow(t)
	need(t, "mpirun")
	t.Parallel()
	bin, dir, db := buildIolab(t), t.TempDir(), filepath.Join(t.TempDir(), "x.db")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "3", bin, "fs", "--directory", dir, "--rw=randread",
		"--bs=4k", "--size=256k", "--numjobs=3", "--rounds=2", "--warmup=0", "-q", "--db", db, "--barrier-timeout", "60s")
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mpirun: %v\n%s", err, out)
	}
	mergedReads(t, "mpirun", db, "mpi-")
}

// mergedReads checks the load a launcher ran in 3 segments, stored in db:
// show merges it into 2 runs of 3 x 64 reads, its group named from prefix.
func mergedReads(t *testing.T, launcher, db, prefix string) {
	t.Helper()
	out, _, err := iolab(t, context.Background(), "show", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Runs []struct {
			Status string
			Read   *struct{ Ops int64 }
		}
		Segments struct {
			Group       string
			Experiments map[string]string
		}
	}
	decodeInto(t, out, &r)
	if len(r.Runs) != 2 || len(r.Segments.Experiments) != 3 || !strings.HasPrefix(r.Segments.Group, prefix) {
		t.Fatalf("the load %s ran: %s", launcher, out)
	}
	for _, run := range r.Runs {
		if run.Status != "ok" || run.Read == nil || run.Read.Ops != 3*64 {
			t.Errorf("%s: a merged run: %+v, want 3 x 64 reads", launcher, run)
		}
	}
}
