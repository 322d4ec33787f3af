package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// halfBodies is a reverse proxy in front of an S3 server that sends every
// object GET's head as the server sent it — its Content-Length included — and
// then only the first half of its body before closing the connection,
// as a proxy that truncates does.
func halfBodies(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		object := strings.Count(strings.Trim(resp.Request.URL.Path, "/"), "/") >= 1 && resp.Request.URL.RawQuery == ""
		if resp.Request.Method == http.MethodGet && object && resp.StatusCode == http.StatusOK && resp.ContentLength > 1 {
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.LimitReader(resp.Body, resp.ContentLength/2), resp.Body}
		}
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

// A GET whose body is cut short is a failed GET, counted as GET's (code
// body-length), never a success with half the bytes — in iolab's own
// clients (event loops, a goroutine per connection) and in minio-go — and the PUTs beside it on the same
// connections are not charged with it.
func TestCutShortGetsAreFailures(t *testing.T) {
	t.Parallel()
	srv := s3Servers(t)[0]
	front := halfBodies(t, srv.endpoint)
	for _, client := range [][]string{{"--client", "loop"}, {"--client", "conn"}, {"--sdk-client"}} {
		db := filepath.Join(t.TempDir(), "x.db")
		args := append([]string{"s3", "--endpoint", front, "--bucket", "halves", "--create-bucket", "--access-key", testAccessKey,
			"--secret-key", testSecretKey, "--mix", "put=1,get=1", "--size", "4k", "--count", "40", "--concurrency", "2",
			"--rounds", "1", "--warmup", "0", "--keep-going", "--db", db, "--json"}, client...)
		out, stderr, err := iolab(t, context.Background(), args...)
		if err == nil || out == "" {
			t.Fatalf("%v: %v\n%s\n%s", client, err, out, stderr)
		}
		var r jsonRunS3
		decodeInto(t, out, &r)
		if len(r.Runs) != 1 {
			t.Fatalf("%v: %s", client, out)
		}
		get, put := r.Runs[0].Ops["get"], r.Runs[0].Ops["put"]
		if get.Ops != 0 || get.Errors == 0 || put.Errors != 0 || put.Ops == 0 {
			t.Fatalf("%v: get %+v put %+v", client, get, put)
		}
		codes, _, _ := iolab(t, context.Background(), "show", "--db", db, "--json")
		if !strings.Contains(codes, `"get:body-length"`) || strings.Contains(codes, `"get:network"`) {
			t.Errorf("%v: the GETs' errors are not counted by what broke them:\n%s", client, codes)
		}
	}
}

// shortBodies is an HTTP server whose every answer says Content-Length:
// 4096 and sends 2048 bytes before closing the connection.
func shortBodies(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n")
		buf.Write(make([]byte, 2048))
		buf.Flush()
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// An http download whose body is shorter than its Content-Length is a
// failed download, with or without --verify.
func TestCutShortDownloadsAreFailures(t *testing.T) {
	t.Parallel()
	url := shortBodies(t)
	for _, verify := range []string{"--verify=false", "--verify=true"} {
		out, _, err := iolab(t, context.Background(), "http", "download", "--url", url+"/{{i}}", "--size", "4k", "--count", "8",
			verify, "--rounds", "1", "--warmup", "0", "--keep-going", "--db", filepath.Join(t.TempDir(), "x.db"), "--json")
		var r jsonRunS3
		decodeInto(t, out, &r)
		if err == nil || len(r.Runs) != 1 {
			t.Fatalf("%s: %v\n%s", verify, err, out)
		}
		if d := r.Runs[0].Ops["download"]; d.Ops != 0 || d.Errors != 8 {
			t.Fatalf("%s: downloads %+v", verify, d)
		}
	}
}

// A single-value --rate (fio's form, which caps reads and writes) on a
// job that only reads says nothing of writes, which it never issues.
func TestRateOnOneDirectionIsNoFalseAlarm(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		args  []string
		never string // the direction the job does not issue
	}{{[]string{"--rw", "randread", "--rate", "1m"}, "writes ran"}, {[]string{"--rw", "write", "--rate_iops", "50"}, "reads ran"}} {
		args := c.args
		out, _, err := iolab(t, context.Background(), append([]string{"fs", "--directory", dir, "--size", "1m", "--bs", "4k",
			"--runtime", "1s", "--rounds", "1", "--warmup", "0", "--db", filepath.Join(t.TempDir(), "x.db"), "--json"}, args...)...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		// The target keeps these rates; a generator starved of CPU (the
		// suite beside stress-ng) may not, and is then named, never the
		// target.
		for _, w := range decode(t, out).Warnings {
			if w.Code == "rate-not-met" && (strings.Contains(w.Message, c.never) || !strings.Contains(w.Message, "iolab, not the target, fell behind")) {
				t.Errorf("%v: %s: %s", args, w.Code, w.Message)
			}
		}
	}
}

// And a rate no target keeps is still said, for the direction asked.
func TestRateNotMetIsSaid(t *testing.T) {
	t.Parallel()
	out, _, err := iolab(t, context.Background(), "fs", "--directory", t.TempDir(), "--size", "1m", "--bs", "4k", "--rw", "randread",
		"--rate_iops", "50000000", "--runtime", "1s", "--rounds", "1", "--warmup", "0", "--db", filepath.Join(t.TempDir(), "x.db"), "--json")
	if err != nil {
		t.Fatal(err)
	}
	r := decode(t, out)
	said := false
	for _, w := range r.Warnings {
		said = said || (w.Code == "rate-not-met" && strings.Contains(w.Message, "reads ran at") && !strings.Contains(w.Message, "writes"))
	}
	if !said {
		t.Fatalf("50M reads/s asked of a psync job, no rate-not-met: %+v", r.Warnings)
	}
}

// No credentials anywhere is said as that, with where iolab looked — not
// as "credentials rejected".
func TestNoCredentialsIsNotRejectedCredentials(t *testing.T) {
	t.Parallel()
	srv := s3Servers(t)[0]
	cmd := testIolab("s3", "--endpoint", srv.endpoint, "--bucket", "nokeys", "--mix", "get=1", "--count", "4",
		"--rounds", "1", "--warmup", "0", "--db", filepath.Join(t.TempDir(), "x.db"))
	cmd.Env = []string{iolabInTestEnv + "=1", "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "no S3 credentials were found — looked in --access-key/--secret-key, AWS_ACCESS_KEY_ID") ||
		strings.Contains(string(out), "credentials rejected") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// A directory iolab cannot create files in is bad input (exit 2) whatever
// the filesystem: sysfs, which refuses new files even to root, as
// /proc/sys did.
func TestUnwritableTargetsAreBadInput(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--directory", "/sys"}, {"--directory", "/proc/sys"}, {"--filename", "/sys/kernel/iolab-test"}} {
		_, _, err := iolab(t, context.Background(), append([]string{"fs", "--size", "64k", "--rounds", "1", "--warmup", "0",
			"--db", filepath.Join(t.TempDir(), "x.db")}, args...)...)
		if err == nil || ExitCode(err) != 2 || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%v: %v (exit %d)", args, err, ExitCode(err))
		}
	}
}

// http checks its target before the schedule, as s3 does: a download
// whose first URL answers 404, and an upload to a port nobody listens on,
// are bad input before any run.
func TestHTTPPreflight(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	db := filepath.Join(t.TempDir(), "x.db")
	_, _, err := iolab(t, context.Background(), "http", "download", "--url", srv.URL+"/missing/{{i}}", "--count", "50", "--db", db)
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "/missing/0, the first, before any run: 404 Not Found") {
		t.Fatalf("a 404 download: %v", err)
	}
	dead := freeLoopbackPort(t)
	_, _, err = iolab(t, context.Background(), "http", "upload", "--url", fmt.Sprintf("http://127.0.0.1:%d/{{i}}", dead), "--count", "5", "--db", db)
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("an upload to nobody: %v", err)
	}
	if n := countRows(t, db, `SELECT count(*) FROM runs`); n != 0 {
		t.Fatalf("%d runs stored for a target that was never there", n)
	}
}

// Ctrl-C while a variant builds is an interruption — exit 130, saying
// nothing was stored — not a build that failed (exit 1).
func TestCtrlCDuringBuildIsAnInterruption(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"plan.yaml": "variants:\n  - name: slow\n    build: touch building && sleep 30\nworkloads:\n  - cmd: {run: 'true'}\n"})
	cmd := testIolab("experiment", filepath.Join(dir, "plan.yaml"), "--db", filepath.Join(dir, "x.db"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !fileExists(filepath.Join(dir, "building")); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the build never began")
		}
	}
	_ = cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 || !strings.Contains(stderr.String(), "variant slow: build interrupted") ||
		!strings.Contains(stderr.String(), "nothing stored") {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
}

// Input that would exhaust memory or never end is refused before any
// work, naming the flag or the file's position: a plan of nested
// brackets, a frame rate or operation rate whose period is longer than
// the run, a mix that deletes more objects than it can have.
func TestInputCaps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	writeFiles(t, dir, map[string]string{"bomb.yaml": "workloads: " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n"})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"experiment", filepath.Join(dir, "bomb.yaml")}, "bomb.yaml:1:76: brackets nested deeper than 64 levels"},
		{[]string{"experiment", "/dev/zero"}, "a plan may hold at most 4 MiB"},
		{[]string{"frames", "--directory", dir, "--profile", "2K-24bit", "--fps", "1e-30", "--frames", "4"}, "--fps 1e-30 for 4: a schedule of"},
		{[]string{"s3", "--endpoint", "http://127.0.0.1:1", "--bucket", "bbb", "--rate", "0.01", "--runtime", "10s"},
			"--rate 0.01: one every 1m40s, longer than the run (--runtime 10s)"},
		{[]string{"s3", "--endpoint", "http://127.0.0.1:1", "--bucket", "bbb", "--rate", "1e-9", "--count", "10"}, "longer than the 24h0m0s iolab allows"},
		{[]string{"fs", "--directory", dir, "--size", "1m", "--rate_iops", "1", "--runtime", "500ms"}, "one every 1s, longer than the run"},
		{[]string{"fs", "--directory", dir, "--size", "1m", "--rate_process", "poisson"}, "--rate_process poisson spaces the starts --rate or --rate_iops paces (or a curve's loads); give one"},
		{[]string{"fs", "--directory", dir, "--size", "1m", "--rate_iops", "10", "--rate_process", "uniform"}, `--rate_process "uniform": want linear or poisson`},
		{[]string{"http", "download", "--url", "http://127.0.0.1:1/x", "--rate-process", "poisson", "--runtime", "1s"}, "--rate-process poisson spaces the starts --rate paces (or a curve's loads); give --rate"},
		{[]string{"s3", "--endpoint", "http://127.0.0.1:1", "--bucket", "bbb", "--rate-process", "poisson", "--runtime", "1s"}, "--rate-process poisson spaces the starts --rate paces (or a curve's loads); give --rate"},
		// A mix that deletes more than it writes, where it would run out.
		{[]string{"s3", "--endpoint", "http://127.0.0.1:1", "--bucket", "bbb", "--mix", "put=1,delete=9", "--runtime", "5s"},
			"--mix put=1,delete=9 deletes 9 objects for each 1 it writes, and a --runtime run would run out of them"},
		{[]string{"s3", "--endpoint", "http://127.0.0.1:1", "--bucket", "bbb", "--mix", "delete", "--delete-batch", "10", "--count", "100"},
			"--count 100 may delete 1000, and --objects 64 prepares fewer; give --objects 1000"},
	} {
		_, _, err := iolab(t, context.Background(), append(tc.args, "--db", db)...)
		if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v (exit %d), want %q", tc.args, err, ExitCode(err), tc.want)
		}
	}
}

// --client names a way iolab has to send requests, and one the job can
// take: asked for event loops where they cannot run, iolab says why before
// any work rather than measure another client.
func TestS3ClientChoice(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "x.db")
	base := []string{"s3", "--endpoint", "http://127.0.0.1:1", "--bucket", "bbb", "--access-key", "AKIDEXAMPLE", "--secret-key", "wJalrXUtnFEMI",
		"--count", "5", "--db", db}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--client", "fast"}, `--client "fast": want auto, loop, conn or sdk`},
		{[]string{"--client", "loop", "--mix", "get=1,list=1"}, "--client loop: --mix has list, which goes through minio-go; use --client auto or conn"},
		{[]string{"--client", "loop", "--mix", "delete", "--delete-batch", "2", "--objects", "10"}, "--client loop: --delete-batch 2 sends DeleteObjects through minio-go"},
		{[]string{"--client", "loop", "--rate", "50"}, "--client loop: a paced run (--rate, a curve's or a search's loads) keeps its schedule per worker"},
		{[]string{"--client", "loop", "--endpoint", "https://127.0.0.1:1"}, "--client loop: --endpoint https://127.0.0.1:1: TLS goes through"},
		{[]string{"--client", "loop", "--pool", "2"}, "--client loop: --pool 2 shares connections between workers"},
		{[]string{"--client", "conn", "--sdk-client"}, "--sdk-client and --client conn: give one"},
	} {
		_, _, err := iolab(t, context.Background(), append(append([]string{}, base...), tc.args...)...)
		if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v (exit %d), want %q", tc.args, err, ExitCode(err), tc.want)
		}
	}
}

// --lat-log holds the measured operations only: a warm-up run's are not
// in it, and each measured run's are all there.
func TestLatencyLogLeavesOutWarmup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "lat.csv")
	out, _, err := iolab(t, context.Background(), "fs", "--directory", dir, "--size", "256k", "--bs", "4k", "--rw", "randread",
		"--io_size", "64k", "--rounds", "2", "--warmup", "1", "--lat-log", log, "--db", filepath.Join(dir, "x.db"), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Runs []struct {
			ID     int64    `json:"id"`
			Warmup bool     `json:"warmup"`
			Read   s3OpJSON `json:"read"`
		} `json:"runs"`
	}
	decodeInto(t, out, &r)
	text, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int64{}
	for _, l := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		run, _, _ := strings.Cut(l, ",")
		lines[run]++
	}
	warmups := 0
	for _, run := range r.Runs {
		id := fmt.Sprint(run.ID)
		switch {
		case run.Warmup:
			warmups++
			if lines[id] != 0 {
				t.Errorf("warm-up run %s has %d lines in the latency log", id, lines[id])
			}
		case lines[id] != run.Read.Ops || run.Read.Ops == 0:
			t.Errorf("run %s: %d lines, %d reads measured", id, lines[id], run.Read.Ops)
		}
	}
	if warmups != 1 || len(r.Runs) != 3 {
		t.Fatalf("%d runs, %d warm-up", len(r.Runs), warmups)
	}
}

// A failed I/O names its file, offset and length, as fio's
// "read offset=110608384, buflen=4096" does: against a disk that fails
// every read (nbdkit's error filter, mounted with nbdfuse).
func TestIOErrorNamesOffsetAndLength(t *testing.T) {
	t.Parallel()
	need(t, "nbdfuse")
	nbdfuse, _ := exec.LookPath("nbdfuse")
	mnt := t.TempDir()
	cmd := exec.Command(nbdfuse, mnt, "--command", "nbdkit", "-s", "--filter=error", "memory", "size=4M", "error-rate=100%", "error=EIO")
	if err := startDying(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = exec.Command("fusermount3", "-u", mnt).Run()
		_ = exec.Command("umount", mnt).Run()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	disk := filepath.Join(mnt, "nbd")
	for deadline := time.Now().Add(30 * time.Second); !fileExists(disk); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nbdfuse never mounted its disk")
		}
	}
	for _, engine := range []string{"psync", "io_uring"} {
		_, _, err := iolab(t, context.Background(), "fs", "--filename", disk, "--rw", "randread", "--size", "64k", "--bs", "4k",
			"--ioengine", engine, "--rounds", "1", "--warmup", "0", "--db", filepath.Join(t.TempDir(), "x.db"))
		if err == nil || !strings.Contains(err.Error(), "read "+disk+" offset=") || !strings.Contains(err.Error(), " buflen=4096: input/output error") {
			t.Errorf("%s: %v", engine, err)
		}
	}
}

// An output path never overwrites a file iolab did not write (a fuzzed
// `--lat-log /etc/passwd` once truncated it, run as root): --lat-log, a
// report's -o, a bisect's --html and --pprof refuse one at once, exit 2,
// the file untouched;
// iolab's own earlier output is written over as before.
func TestOutputsNeverOverwriteAForeignFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	foreign := filepath.Join(dir, "passwd")
	const text = "root:x:0:0:root:/root:/bin/bash\n"
	if err := os.WriteFile(foreign, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := []string{"fs", "--directory", dir, "--size=64k", "--rounds=1", "--warmup=0", "-q", "--db", db}
	log := filepath.Join(dir, "lat.csv")
	page := filepath.Join(dir, "report.html")
	for i := range 2 { // the second time over its own output
		if _, stderr, err := iolab(t, ctx, append(fs, "--lat-log", log)...); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, stderr)
		}
		if _, stderr, err := iolab(t, ctx, "report", "-o", page, "--db", db); err != nil {
			t.Fatalf("report %d: %v\n%s", i, err, stderr)
		}
	}
	for _, c := range [][]string{
		append(fs, "--lat-log", foreign),
		{"report", "-o", foreign, "--db", db},
		{"bisect", filepath.Join(dir, "plan.yaml"), "--good", "a", "--bad", "b", "--html", foreign, "--db", db}, // before any step
	} {
		_, _, err := iolab(t, ctx, c...)
		if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), foreign+": a file iolab did not write is there") {
			t.Errorf("%q: %v, want a usage error naming the path", c, err)
		}
	}
	// Into a directory that is not there: bad input, naming the
	// directory, not a temporary file of iolab's.
	nowhere := filepath.Join(dir, "nowhere", "r.html")
	if _, _, err := iolab(t, ctx, "report", "-o", nowhere, "--db", db); ExitCode(err) != 2 || !strings.Contains(err.Error(), "-o "+nowhere+": no directory "+filepath.Dir(nowhere)) {
		t.Errorf("report -o into a missing directory: %v", err)
	}
	if b, _ := os.ReadFile(foreign); string(b) != text {
		t.Errorf("the foreign file now holds %q", b)
	}
	if n := countRows(t, db, `SELECT count(*) FROM experiments`); n != 2 {
		t.Errorf("%d experiments stored, want the 2 runs before: a refused --lat-log runs nothing", n)
	}
}

// A file cut under a reading job (truncated by another process while it
// runs) fails its reads short: counted by direction as the run counts them
// — read errors equal to the run's, coded read:short — where the audit saw
// a run of 4 errors with 0 in every direction.
func TestFileCutUnderAJobCountsItsReadErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // from before the run until it ends: whenever it runs, it reads a cut file
		for ctx.Err() == nil {
			_ = os.Truncate(path, 0)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	out, stderr, err := iolab(t, context.Background(), "fs", "--filename", path, "--rw", "randread", "--bs", "4k", "--size", "4m", "--runtime", "1s",
		"--rounds", "1", "--warmup", "0", "--db", filepath.Join(dir, "x.db"), "--json")
	cancel()
	if err == nil {
		t.Fatalf("reads of a file cut to nothing succeeded:\n%s", stderr)
	}
	var r struct {
		Runs []struct {
			Warmup     bool
			Errors     int64
			Read       struct{ Errors int64 }
			ErrorCodes map[string]int64 `json:"error_codes"`
		}
	}
	decodeInto(t, out, &r)
	if len(r.Runs) != 1 {
		t.Fatalf("runs: %+v", r.Runs)
	}
	run := r.Runs[0]
	if run.Errors == 0 || run.Read.Errors != run.Errors || run.ErrorCodes["read:short"] != run.Errors {
		t.Errorf("errors %d, of reads %d, by code %v; want every one a read, short", run.Errors, run.Read.Errors, run.ErrorCodes)
	}
}

// A wrong --region is said in the server's own words: a HEAD answer has
// no body ("HTTP 400 400 Bad Request: 400 Bad Request", as an audit saw),
// so the check asks again with a request whose answer has one.
func TestWrongRegionInTheServersWords(t *testing.T) {
	ran := false
	for _, srv := range s3Servers(t) {
		if srv.name != "versitygw" { // MinIO without a region set takes any
			continue
		}
		ran = true
		_, err := s3Run(t, srv, "--bucket", "regioncheck", "--create-bucket", "--region", "eu-west-1", "--mix", "get=1", "--count", "2")
		if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "AuthorizationHeaderMalformed") || !strings.Contains(err.Error(), `"eu-west-1" is wrong`) {
			t.Errorf("%s, --region eu-west-1: %v", srv.name, err)
		}
	}
	if !ran {
		t.Skip("no versitygw here (MinIO without a region set takes any): go install github.com/versity/versitygw/cmd/versitygw@v1.8.0")
	}
}

// --lat-log-format fio: a file per measured run, named as fio names a
// job's log (PREFIX_lat.RUN.log), of fio's four columns — a line per
// operation, its direction and size — which fio's own fio2gnuplot reads;
// a file already there is another's and is never written over.
func TestLatencyLogInFiosFormat(t *testing.T) {
	t.Parallel()
	need(t, "fio2gnuplot")
	dir := t.TempDir()
	prefix := filepath.Join(dir, "job")
	out, stderr, err := iolab(t, context.Background(), "fs", "--directory", dir, "--size", "256k", "--bs", "4k", "--rw", "randrw",
		"--io_size", "128k", "--rounds", "2", "--warmup", "1", "--lat-log", prefix, "--lat-log-format", "fio", "--db", filepath.Join(dir, "x.db"), "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var r struct {
		Runs []struct {
			ID     int64    `json:"id"`
			Warmup bool     `json:"warmup"`
			Read   s3OpJSON `json:"read"`
			Write  s3OpJSON `json:"write"`
		} `json:"runs"`
	}
	decodeInto(t, out, &r)
	total := int64(0)
	for _, run := range r.Runs {
		path := fmt.Sprintf("%s_lat.%d.log", prefix, run.ID)
		text, err := os.ReadFile(path)
		if run.Warmup {
			if err == nil {
				t.Errorf("warm-up run %d has a log", run.ID)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		dirs := map[string]int64{}
		for _, l := range strings.Split(strings.TrimSpace(string(text)), "\n") {
			f := strings.Split(l, ", ")
			if len(f) != 4 || f[3] != "4096" {
				t.Fatalf("%s: line %q: want msec, latency_ns, direction, 4096", path, l)
			}
			dirs[f[2]]++
		}
		if dirs["0"] != run.Read.Ops || dirs["1"] != run.Write.Ops || len(dirs) != 2 || run.Read.Ops == 0 || run.Write.Ops == 0 {
			t.Errorf("run %d: directions %v, measured %d reads and %d writes", run.ID, dirs, run.Read.Ops, run.Write.Ops)
		}
		total += run.Read.Ops + run.Write.Ops
	}
	// fio2gnuplot reads every run's file: its count of values is every
	// operation measured.
	plots := filepath.Join(dir, "plots")
	if err := os.Mkdir(plots, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("fio2gnuplot", "-p", "job_lat.*.log", "-o", "lat", "-d", plots)
	cmd.Dir = dir
	if got, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fio2gnuplot: %v\n%s", err, got)
	}
	global, err := os.ReadFile(filepath.Join(plots, "job_lat..global"))
	if want := fmt.Sprintf("values_count=%d\n", total); err != nil || !strings.Contains(string(global), want) {
		t.Errorf("fio2gnuplot's summary %q (%v), want %s", global, err, want)
	}

	// A file there already, at the next run's name, is left as it was and
	// the run says why.
	db2 := filepath.Join(dir, "y.db")
	foreign := fmt.Sprintf("%s_lat.%d.log", prefix, 1)
	if err := os.WriteFile(foreign, []byte("not iolab's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = iolab(t, context.Background(), "fs", "--directory", dir, "--size", "64k", "--io_size", "16k", "--rounds", "1", "--warmup", "0",
		"--lat-log", prefix, "--lat-log-format", "fio", "--db", db2)
	if b, _ := os.ReadFile(foreign); string(b) != "not iolab's\n" || !strings.Contains(fmt.Sprint(err), "is there already; each run's file is written new") {
		t.Errorf("a file there already: %v; it holds %q", err, b)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--lat-log-format", "fio"}, "--lat-log-format fio: the format of --lat-log; give --lat-log PATH too"},
		{[]string{"--lat-log", prefix, "--lat-log-format", "json"}, `--lat-log-format "json": want csv or fio`},
		{[]string{"--lat-log", dir, "--lat-log-format", "fio"}, "a directory; with --lat-log-format fio give the start of each run's file's name"},
		{[]string{"--lat-log", filepath.Join(dir, "nope", "j"), "--lat-log-format", "fio"}, "no directory " + filepath.Join(dir, "nope")},
	} {
		_, _, err := iolab(t, context.Background(), append([]string{"fs", "--directory", dir, "--size", "64k", "--db", db2}, c.args...)...)
		if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("%q: %v (exit %d), want %q", c.args, err, ExitCode(err), c.want)
		}
	}
}
