package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/store"
)

// jsonReport is the --json contract, as a consumer reads it.
type jsonReport struct {
	Experiment string `json:"experiment"`
	Runs       []struct {
		Round     int     `json:"round"`
		Warmup    bool    `json:"warmup"`
		Status    string  `json:"status"`
		Errors    int64   `json:"errors"`
		CPUS      float64 `json:"cpu_s"`
		OpsPerS   float64 `json:"ops_per_s"`
		BytesPerS float64 `json:"bytes_per_s"`
		Read      *struct {
			Ops       int64   `json:"ops"`
			OpsPerS   float64 `json:"ops_per_s"`
			BytesPerS float64 `json:"bytes_per_s"`
			Lat       struct {
				P50, P90, P99, P999, Max int64
			} `json:"lat_ns"`
		} `json:"read"`
		Write *struct {
			Ops int64 `json:"ops"`
		} `json:"write"`
		Sync *struct {
			Ops int64 `json:"ops"`
		} `json:"sync"`
	} `json:"runs"`
	Summary map[string]struct {
		N      int         `json:"n"`
		Median float64     `json:"median"`
		CI95   *[2]float64 `json:"ci95"`
		Mean   float64     `json:"mean"`
		SD     float64     `json:"sd"`
		CV     float64     `json:"cv"`
	} `json:"summary"`
	Warnings []struct{ Code, Message string } `json:"warnings"`
	Env      map[string]any                   `json:"env"`
}

// slow leaves an end-to-end test that takes seconds of real load out of
// the inner loop (go test -short ./...); the suite, as CI runs it, runs
// every one.
func slow(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("seconds of real load end to end: run without -short")
	}
}

func iolab(t *testing.T, ctx context.Context, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := Execute(ctx, args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func decodeInto(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
}

func decode(t *testing.T, out string) jsonReport {
	t.Helper()
	var r jsonReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	return r
}

func hasWarning(r jsonReport, code string) bool {
	for _, w := range r.Warnings {
		if w.Code == code {
			return true
		}
	}
	return false
}

func countRows(t *testing.T, db, query string, args ...any) int {
	t.Helper()
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n int
	if err := conn.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFSRunStoresEveryRunAndPrintsJSON(t *testing.T) {
	t.Parallel()
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "x.db")
	for _, engine := range []string{"psync", "io_uring"} {
		out, _, err := iolab(t, context.Background(), "fs", "--directory", dir, "--rw=randrw", "--rwmixread=70", "--bs=4k",
			"--size=4m", "--iodepth=4", "--numjobs=2", "--rounds=2", "--warmup=1",
			"--ioengine="+engine, "--fsync=16", "--db", db, "--json")
		if err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		r := decode(t, out)
		if len(r.Runs) != 3 || !r.Runs[0].Warmup || r.Runs[1].Warmup || r.Runs[1].Round != 0 || r.Runs[2].Round != 1 {
			t.Fatalf("%s: runs %+v", engine, r.Runs)
		}
		for _, run := range r.Runs {
			if run.Status != "ok" || run.Errors != 0 || run.OpsPerS <= 0 || run.BytesPerS <= 0 || run.CPUS <= 0 {
				t.Fatalf("%s: run %+v", engine, run)
			}
			if run.Read == nil || run.Write == nil || run.Read.Lat.P50 <= 0 || run.Read.Lat.P99 < run.Read.Lat.P50 || run.Read.Lat.Max < run.Read.Lat.P999 {
				t.Fatalf("%s: directions %+v", engine, run)
			}
			if run.Sync == nil || run.Sync.Ops == 0 || run.Sync.Ops > run.Write.Ops/16+2 {
				t.Fatalf("%s: syncs %+v for %d writes with --fsync=16", engine, run.Sync, run.Write.Ops)
			}
			if share := float64(run.Read.Ops) / float64(run.Read.Ops+run.Write.Ops); share < 0.6 || share > 0.8 {
				t.Fatalf("%s: read share %.2f with --rwmixread=70", engine, share)
			}
		}
		s, ok := r.Summary["ops_per_s"]
		if !ok || s.N != 2 || s.Median <= 0 || s.CI95 != nil {
			t.Fatalf("%s: summary %+v", engine, r.Summary)
		}
		if !hasWarning(r, "too-few-runs") || r.Env["kernel"] == "" {
			t.Fatalf("%s: warnings %+v env %v", engine, r.Warnings, r.Env)
		}
		if n := countRows(t, db, `SELECT count(*) FROM runs WHERE experiment_id = ?`, r.Experiment); n != 3 {
			t.Fatalf("%s: %d runs stored", engine, n)
		}
		if n := countRows(t, db, `SELECT count(*) FROM env_snapshots WHERE experiment_id = ?`, r.Experiment); n != 6 {
			t.Fatalf("%s: %d environment snapshots stored, want before and after each of 3 rounds", engine, n)
		}
		if n := countRows(t, db, `SELECT count(*) FROM run_directions d JOIN runs r ON r.id = d.run_id WHERE r.experiment_id = ? AND d.direction = 'read'`, r.Experiment); n != 3 {
			t.Fatalf("%s: %d read histograms stored", engine, n)
		}
	}
}

func TestFSIOSizeIsExact(t *testing.T) {
	t.Parallel()
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "x.db")
	for _, engine := range []string{"psync", "io_uring"} {
		out, _, err := iolab(t, context.Background(), "fs", "--directory", dir, "--rw=read", "--bs=4k", "--size=1m",
			"--io_size=512k", "--iodepth=8", "--rounds=1", "--warmup=0", "--ioengine="+engine, "--db", db, "--json")
		if err != nil {
			t.Fatal(err)
		}
		r := decode(t, out)
		if got := r.Runs[0].Read.Ops; got != 128 {
			t.Fatalf("%s: %d reads of 4k for --io_size=512k, want 128", engine, got)
		}
	}
}

func TestShowAndLsReprintStoredExperiment(t *testing.T) {
	t.Parallel()
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "x.db")
	live, _, err := iolab(t, context.Background(), "fs", "--directory", dir, "--rw=write", "--bs=64k", "--size=2m",
		"--rounds=1", "--warmup=0", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	ls, _, err := iolab(t, context.Background(), "ls", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(ls), "\n")
	if len(lines) != 2 {
		t.Fatalf("ls:\n%s", ls)
	}
	id := strings.Fields(lines[1])[0]
	shown, _, err := iolab(t, context.Background(), "show", id[:12], "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	if shown != live || !strings.Contains(shown, id) || !strings.Contains(shown, "write-64k") {
		t.Fatalf("show differs from the live output:\n%s\n---\n%s", shown, live)
	}
}

func TestInterruptKeepsFinishedRuns(t *testing.T) {
	t.Parallel()
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "x.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Cancel half a second after the first run is committed: the
		// second is then in flight (each lasts 3 s unless cut).
		for {
			time.Sleep(20 * time.Millisecond)
			if fileExists(db) && countRowsQuiet(db) >= 1 {
				time.Sleep(500 * time.Millisecond)
				cancel()
				return
			}
		}
	}()
	out, _, err := iolab(t, ctx, "fs", "--directory", dir, "--rw=randread", "--bs=4k", "--size=1m",
		"--runtime=3s", "--rounds=3", "--warmup=0", "--db", db, "--json")
	<-done
	if !errors.Is(err, lab.ErrInterrupted) || ExitCode(err) != 130 {
		t.Fatalf("err = %v (exit %d), want interrupted", err, ExitCode(err))
	}
	_ = out
	r := decode(t, out)
	if len(r.Runs) < 2 || r.Runs[0].Status != "ok" || r.Runs[len(r.Runs)-1].Status != "interrupted" {
		t.Fatalf("runs %+v", r.Runs)
	}
	if !hasWarning(r, "interrupted") {
		t.Fatalf("no interrupted warning: %+v", r.Warnings)
	}
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := st.Load(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Experiment.Status != "interrupted" {
		t.Fatalf("experiment status %q", d.Experiment.Status)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// countRowsQuiet counts the runs that ended (a run is stored as running
// from its start).
func countRowsQuiet(db string) int {
	return countQuiet(db, `SELECT count(*) FROM runs WHERE status != 'running'`)
}

// countQuiet is a count from a SQLite store another process writes; 0
// when it cannot be read (yet).
func countQuiet(db, query string) int {
	driver := "sqlite"
	if strings.HasPrefix(db, "postgres://") {
		driver = "pgx"
	}
	conn, err := sql.Open(driver, db)
	if err != nil {
		return 0
	}
	defer conn.Close()
	var n int
	_ = conn.QueryRow(query).Scan(&n)
	return n
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "x.db")
	notDB := filepath.Join(dir, "notes.txt")
	os.WriteFile(notDB, bytes.Repeat([]byte("not a database "), 20), 0o644)
	tests := []struct {
		name string
		args []string
		want string // in the one-line message
		code int
	}{
		{"bad size", []string{"fs", "--directory", dir, "--bs=4kk"}, `--bs "4kk": unknown unit "kk"; want`, 2},
		{"bad runtime", []string{"fs", "--directory", dir, "--runtime=5x"}, `--runtime "5x": not a duration; want`, 2},
		{"unknown flag", []string{"fs", "--directory", dir, "--bogus=1"}, "--bogus", 2},
		{"bad rw", []string{"fs", "--directory", dir, "--rw=sideways"}, "--rw", 2},
		{"bad engine", []string{"fs", "--directory", dir, "--size=1m", "--ioengine=libfoo"}, "--ioengine", 2},
		{"space before value", []string{"fs", "--directory", dir, "--direct", "1"}, "--flag=value", 2},
		{"no target", []string{"fs", "--size=1m"}, "--filename or --directory", 2},
		{"missing directory", []string{"fs", "--directory", filepath.Join(dir, "nope"), "--size=1m", "--db", db}, "nope: no such directory", 2},
		{"file is not a directory", []string{"fs", "--directory", notDB, "--size=1m", "--db", db}, "not a directory", 2},
		{"no size for new file", []string{"fs", "--filename", filepath.Join(dir, "new"), "--db", db}, "--size is required", 2},
		{"disk too small", []string{"fs", "--directory", dir, "--size=100t", "--db", db}, "free", 2},
		{"foreign db", []string{"fs", "--directory", dir, "--size=1m", "--db", notDB}, "not an iolab database", 2},
		{"show without db", []string{"show", "--db", filepath.Join(dir, "none.db")}, "no such database", 2},
		{"zero rounds", []string{"fs", "--directory", dir, "--size=1m", "--rounds=0"}, `--rounds "0": out of range; want a whole number from 1 to`, 2},
		{"three rates", []string{"fs", "--directory", dir, "--size=1m", "--rate=1m,2m,3m"}, `--rate "1m,2m,3m": "1m,2m,3m": want VALUE, or READ,WRITE`, 2},
		{"bad sync_file_range", []string{"fs", "--directory", dir, "--size=1m", "--sync_file_range=flush:4"}, `flag "flush": want wait_before, write and/or wait_after`, 2},
		{"bad verify", []string{"fs", "--directory", dir, "--size=1m", "--verify=meta"}, `--verify "meta": want one of crc32, crc32c, crc64, md5`, 2},
		{"latency log in no directory", []string{"fs", "--directory", dir, "--size=64k", "--db", db, "--lat-log", filepath.Join(dir, "nope", "lat.csv")}, "--lat-log " + filepath.Join(dir, "nope", "lat.csv") + ": no directory " + filepath.Join(dir, "nope") + " to write it in", 2},
		{"latency log on a full device", []string{"fs", "--directory", dir, "--size=64k", "--db", db, "--lat-log", "/dev/full"}, "--lat-log write /dev/full: no space left on device", 2},
		{"bad thinktime", []string{"fs", "--directory", dir, "--size=1m", "--thinktime=1x"}, `--thinktime "1x": not a duration; want microseconds (100)`, 2},
	}
	for _, tc := range tests {
		_, _, err := iolab(t, context.Background(), tc.args...)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("%s: message %q, want one line containing %q", tc.name, msg, tc.want)
		}
		if got := ExitCode(err); got != tc.code {
			t.Errorf("%s: exit code %d, want %d (%v)", tc.name, got, tc.code, err)
		}
	}
	if n := countRowsQuiet(db); n != 0 {
		t.Fatalf("bad input stored %d runs", n)
	}
}

func TestReadOnlyDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		// root writes through permission bits: make a real read-only mount.
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_RDONLY, "size=1m"); err != nil {
			t.Skipf("cannot mount a read-only tmpfs here: %v", err)
		}
		t.Cleanup(func() { _ = unix.Unmount(dir, 0) })
	} else if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	_, _, err := iolab(t, context.Background(), "fs", "--directory", dir, "--size=1m", "--db", filepath.Join(t.TempDir(), "x.db"))
	if err == nil || !strings.Contains(err.Error(), dir) || ExitCode(err) != 2 ||
		!(strings.Contains(err.Error(), "read-only") || strings.Contains(err.Error(), "not writable")) {
		t.Fatalf("read-only directory: %v", err)
	}
}

// refusesDirect returns a directory on a filesystem that refuses O_DIRECT
// (ramfs; tmpfs accepts it since Linux 6.6), or skips.
func refusesDirect(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("ramfs", dir, "ramfs", 0, ""); err != nil {
		t.Skipf("cannot mount ramfs here (needs root): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	probe := filepath.Join(dir, "probe")
	os.WriteFile(probe, make([]byte, 4096), 0o644)
	fd, err := unix.Open(probe, unix.O_RDONLY|unix.O_DIRECT, 0)
	if err == nil {
		unix.Close(fd)
		t.Skip("ramfs accepts O_DIRECT on this kernel")
	}
	return dir
}

func TestDirectFallsBackWithWarning(t *testing.T) {
	t.Parallel()
	dir := refusesDirect(t)
	out, _, err := iolab(t, context.Background(), "fs", "--directory", dir, "--rw=randread", "--bs=4k", "--size=1m",
		"--direct=1", "--io_size=64k", "--rounds=1", "--warmup=0", "--db", filepath.Join(t.TempDir(), "x.db"), "--json")
	if err != nil {
		t.Fatal(err)
	}
	r := decode(t, out)
	if !hasWarning(r, "o-direct-fallback") || !hasWarning(r, "tmpfs-target") || r.Runs[0].Status != "ok" {
		t.Fatalf("warnings %+v", r.Warnings)
	}
}

func TestFioEngineStoresFioResults(t *testing.T) {
	t.Parallel()
	need(t, "fio")
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "x.db")
	out, _, err := iolab(t, context.Background(), "fs", "--directory", dir, "--rw=randrw", "--bs=4k", "--size=2m",
		"--iodepth=4", "--runtime=300ms", "--rounds=1", "--warmup=0", "--ioengine=fio", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	r := decode(t, out)
	run := r.Runs[0]
	if run.Status != "ok" || run.Read == nil || run.Read.Ops == 0 || run.Read.Lat.P50 <= 0 || run.Write == nil || run.OpsPerS <= 0 || run.CPUS <= 0 {
		t.Fatalf("fio run %+v", run)
	}
	if !hasWarning(r, "fio-engine") {
		t.Fatalf("warnings %+v", r.Warnings)
	}
}

// TestNumbersAreRangeChecked feeds every kind of number the audit found
// accepted — NaN, infinities, overflow, values that round to zero, negative
// counts, percentages above 100 — to each command, and wants the one form
// `--flag "value": why; want ...`, exit 2, before anything is stored.
func TestNumbersAreRangeChecked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "x.db")
	fsArgs := []string{"fs", "--directory", dir, "--size=1m", "--db", db}
	s3Args := []string{"s3", "--endpoint", "http://127.0.0.1:1", "--bucket", "bkt", "--runtime", "1s", "--db", db}
	tests := []struct {
		args []string
		want string
	}{
		{append(fsArgs, "--runtime", "NaN"), `--runtime "NaN": not a finite number; want`},
		{append(fsArgs, "--runtime", "inf"), `--runtime "inf": not a finite number; want`},
		{append(fsArgs, "--runtime", "1e10"), `--runtime "1e10": too long; want`},
		{append(fsArgs, "--runtime", "1e30"), `--runtime "1e30": too long; want`},
		{append(fsArgs, "--runtime", "1e-30"), `--runtime "1e-30": rounds to 0`},
		{append(fsArgs, "--runtime", "99999999999h"), `--runtime "99999999999h": not a duration; want`},
		{append(fsArgs, "--cooldown", "-1"), `--cooldown "-1": negative; want`},
		{append(fsArgs, "--rounds", "9223372036854775807"), `--rounds "9223372036854775807": out of range; want a whole number from 1 to 1000000`},
		{append(fsArgs, "--rounds", "99999999999999999999"), `--rounds "99999999999999999999": out of range`},
		{append(fsArgs, "--iodepth", "0"), `--iodepth "0": out of range; want a whole number from 1 to`},
		{append(fsArgs, "--numjobs", "-1"), `--numjobs "-1": out of range`},
		{append(fsArgs, "--rwmixread", "101"), `--rwmixread "101": out of range; want a whole number from 0 to 100`},
		{append(fsArgs, "--bs", "0"), `--bs "0": out of range; want a size from 1 to 1g`},
		{append(fsArgs, "--bs", "99999999999p"), `--bs "99999999999p": too large`},
		{append(s3Args, "--compressible", "200"), `--compressible "200": out of range; want a whole number from 0 to 100`},
		{append(s3Args, "--objects", "-5"), `--objects "-5": out of range`},
		{append(s3Args, "--rate", "NaN"), `--rate "NaN": not a finite number`},
		{append(s3Args, "--rate", "-1"), `--rate "-1": out of range`},
		{append(s3Args, "--concurrency", "1e3"), `--concurrency "1e3": not a whole number`},
		{append(s3Args, "--region", "-1"), `--region "-1": want a region name`},
		{[]string{"frames", "--directory", dir, "--fps", "inf", "--db", db}, `--fps "inf": not a finite number`},
		{[]string{"http", "upload", "--url", "http://127.0.0.1:1/", "--count", "-3", "--db", db}, `--count "-3": out of range`},
	}
	for _, tc := range tests {
		_, _, err := iolab(t, context.Background(), tc.args...)
		if err == nil {
			t.Errorf("%v: accepted", tc.args[len(tc.args)-2:])
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, tc.want) || strings.Contains(msg, "\n") || ExitCode(err) != 2 {
			t.Errorf("%q (exit %d), want one line starting %q", msg, ExitCode(err), tc.want)
		}
	}
	if _, err := os.Stat(db); err == nil {
		if n := countRowsQuiet(db); n != 0 {
			t.Fatalf("bad numbers stored %d runs", n)
		}
	}
}

// A run's per-second series reaches the store while the run goes on, not
// only at its end.
func TestSeriesIsStoredDuringTheRun(t *testing.T) {
	slow(t)
	t.Parallel()
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "x.db")
	seen := make(chan int, 1)
	go func() {
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			conn, err := sql.Open("sqlite", db)
			if err != nil {
				continue
			}
			var n int
			_ = conn.QueryRow(`SELECT count(*) FROM series s JOIN runs r ON r.id = s.run_id WHERE r.status = 'running'`).Scan(&n)
			conn.Close()
			if n > 0 {
				seen <- n
				return
			}
		}
		seen <- 0
	}()
	if _, _, err := iolab(t, context.Background(), "fs", "--directory", dir, "--rw=randread", "--bs=4k", "--size=1m",
		"--runtime=7s", "--rounds=1", "--warmup=0", "--db", db); err != nil {
		t.Fatal(err)
	}
	if n := <-seen; n == 0 {
		t.Fatal("no second of the run was stored before it ended")
	}
	if n := countRows(t, db, `SELECT count(*) FROM series`); n < 7 {
		t.Fatalf("%d seconds stored for a 7 s run", n)
	}
}

// A mistyped flag is answered with the flag meant, when one is near
// enough to be a slip, and with nothing made up when none is; a plan's
// keys likewise, at its top and in a workload.
func TestFlagSuggestion(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fs", "--iodpeth", "4"}, "unknown flag: --iodpeth; did you mean --iodepth? (iolab fs --help lists them)"},
		{[]string{"s3", "--concurency", "4"}, "unknown flag: --concurency; did you mean --concurrency?"},
		{[]string{"http", "upload", "--szie", "1m"}, "did you mean --size?"},
		{[]string{"fs", "--zzzz", "4"}, "unknown flag: --zzzz"},
	} {
		_, _, err := iolab(t, context.Background(), c.args...)
		if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), c.want) || (strings.Contains(c.want, "zzzz") && strings.Contains(err.Error(), "did you mean")) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	dir := t.TempDir()
	for _, c := range []struct{ plan, want, near string }{
		{"name: x\nworklods:\n  - cmd: {run: 'true'}\n", `plan.yaml:2:1: unknown key "worklods" in the plan; known: `, "workloads"},
		{"workloads:\n  - fs: {directory: ., iodpeth: 4}\n", `unknown key "iodpeth" in fs workload`, "iodepth"},
		{"workloads:\n  - cmd: {run: 'true'}\nrounds: 3\nwarmpu: 1\n", `unknown key "warmpu" in the plan`, "warmup"},
	} {
		writeFiles(t, dir, map[string]string{"plan.yaml": c.plan})
		_, _, err := iolab(t, context.Background(), "experiment", filepath.Join(dir, "plan.yaml"), "--db", filepath.Join(dir, "x.db"))
		if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), c.want) || !strings.HasSuffix(err.Error(), "; did you mean "+c.near+"?") {
			t.Errorf("%q: %v", c.plan, err)
		}
	}
}
