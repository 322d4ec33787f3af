package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// exportServer is a server that provides a file while it runs, as nbdkit
// behind nbdfuse or a FUSE server provides its export: at start it puts a
// 1 MiB file of its own at the path it is given (a new file, whatever lay
// there), listens on $PORT — the environment, not its command line — and
// serves one byte per connection; stopped, it puts back a 64 KiB
// placeholder, as an unmounted mount point shows what lies under it. Each
// start logs its port.
const exportServer = `import os, signal, socket, sys
path, port = sys.argv[1], int(os.environ["PORT"])
def placeholder(*_):
    with open(path + ".tmp", "wb") as f:
        f.write(b"p" * 65536)
    os.replace(path + ".tmp", path)
    sys.exit(0)
with open(path + ".tmp", "wb") as f:
    f.write(b"S" * (1 << 20))
os.replace(path + ".tmp", path)
with open("starts.log", "a") as f:
    f.write("%d\n" % port)
signal.signal(signal.SIGTERM, placeholder)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen()
while True:
    c, _ = s.accept()
    c.sendall(b"x")
    c.close()
`

// An fs workload whose file a variant's server provides measures that
// file: opened after every start, once the server is ready, and closed
// before it stops — never the placeholder under it. The server reads the
// start's port from env: {PORT: "{{port}}"}, expanded for every start,
// from the plan's ports: range.
func TestFSOnAFileTheServerProvides(t *testing.T) {
	t.Parallel()
	need(t, "python3")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"serve.py":   exportServer,
		"export.img": strings.Repeat("p", 65536),
		"plan.yaml": `name: export
rounds: 3
warmup: 0
ports: 25000-25999
variants:
  - name: srv
    env: {PORT: "{{port}}"}
    start: exec python3 serve.py export.img
    ready: {tcp: "127.0.0.1:{{port}}", timeout: 20s}
workloads:
  - name: disk
    fs: {filename: export.img, rw: read, bs: 4k}
`})
	db := filepath.Join(t.TempDir(), "x.db")
	r, err := runPlan(t, context.Background(), filepath.Join(dir, "plan.yaml"), "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 3 {
		t.Fatalf("%d runs, want 3: %+v", len(r.Runs), r.Runs)
	}
	for _, run := range r.Runs {
		if run.Status != "ok" {
			t.Fatalf("run %+v", run)
		}
	}
	// Every run read the server's 1 MiB, not the 64 KiB placeholder.
	if n := countRows(t, db, `SELECT count(*) FROM run_directions WHERE direction = 'read' AND bytes = 1048576 AND ops = 256`); n != 3 {
		t.Fatalf("%d of 3 runs read the server's 1 MiB file (256 blocks of 4k)", n)
	}
	// One port per start, each from the range, each the one the server
	// listened on.
	log, _ := os.ReadFile(filepath.Join(dir, "starts.log"))
	ports := strings.Fields(string(log))
	if len(ports) != 3 {
		t.Fatalf("server started %d times, want 3: %q", len(ports), log)
	}
	for _, p := range ports {
		if n, _ := strconv.Atoi(p); n < 25000 || n > 25999 {
			t.Fatalf("port %s outside ports: 25000-25999", p)
		}
	}
}

// A port range that is not one is refused with its place in the plan, as
// is --ports.
func TestBadPortRange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"plan.yaml": "ports: 26000-25000\nworkloads:\n  - cmd: {run: 'true'}\n"})
	_, err := runPlan(t, context.Background(), filepath.Join(dir, "plan.yaml"), "--db", filepath.Join(dir, "x.db"))
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "plan.yaml:1:8: ports:") {
		t.Fatalf("ports: 26000-25000: %v", err)
	}
	writeFiles(t, dir, map[string]string{"plan.yaml": "workloads:\n  - cmd: {run: 'true'}\n"})
	_, err = runPlan(t, context.Background(), filepath.Join(dir, "plan.yaml"), "--db", filepath.Join(dir, "x.db"), "--ports", "0-9")
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "--ports") {
		t.Fatalf("--ports 0-9: %v", err)
	}
}

// A cell where one variant failed every run stays in the summary — in the
// study's first table, in the per-metric table with why (its row says its
// runs failed, not that it has none), in the HTML and in the JSON — with
// the verdict failed, never dropped.
func TestCellWhoseVariantFailedEveryRunIsShown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"plan.yaml": `name: failing
rounds: 3
warmup: 0
variants:
  - {name: a, env: {MODE: a}}
  - {name: b, env: {MODE: b}}
workloads:
  - name: put
    cmd: {run: "test $MODE-{{size}} != b-small || { echo small PUT refused >&2; exit 1; }"}
    matrix: {size: [small, large]}
`})
	db := filepath.Join(t.TempDir(), "x.db")
	_, _, err := iolab(t, context.Background(), "experiment", filepath.Join(dir, "plan.yaml"), "--db", db, "--keep-going")
	if err == nil {
		t.Fatal("an experiment with failed runs succeeded")
	}
	out, _, err := iolab(t, context.Background(), "show", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	pivot := out[strings.Index(out, "primary metric by cell and variant"):]
	if !strings.Contains(pivot, "put size=small") || !strings.Contains(pivot, "failed") || !strings.Contains(pivot, "put size=large") {
		t.Fatalf("the study's table lacks the failed cell:\n%s", out)
	}
	if !strings.Contains(out, "  not compared: b: 3 of 3 measured runs failed; the first error:") {
		t.Fatalf("the cell's table does not say why:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^\s+b\s+all 3 runs failed\s`).MatchString(out) || strings.Contains(out, "no runs") {
		t.Errorf("b's row in the cell's table does not say its runs failed:\n%s", out)
	}
	html := filepath.Join(dir, "r.html")
	if _, _, err := iolab(t, context.Background(), "report", "--db", db, "-o", html); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "all 3 runs failed") {
		t.Errorf("the HTML does not say b's runs failed (%v)", err)
	}
	js, _, err := iolab(t, context.Background(), "show", "--db", db, "--json")
	var r struct {
		Comparisons []struct {
			Cell, Variant, Verdict, Failed string
			Primary                        bool
		}
	}
	decodeInto(t, js, &r)
	found := false
	for _, c := range r.Comparisons {
		if c.Cell == "put size=small" && c.Primary {
			found = c.Verdict == "failed" && c.Variant == "b" && strings.Contains(c.Failed, "3 of 3 measured runs failed")
		}
	}
	if err != nil || !found {
		t.Fatalf("JSON lacks the failed comparison (%v): %+v", err, r.Comparisons)
	}
}

// A variant's server that the workload never reached — an fs workload on
// a local file while the server idles — is flagged, not silently
// compared as if it had served the load.
func TestIdleServerIsFlagged(t *testing.T) {
	t.Parallel()
	need(t, "python3")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"local.img": strings.Repeat("l", 1<<20),
		"plan.yaml": `name: idle
rounds: 2
warmup: 0
variants:
  - name: srv
    start: exec python3 -m http.server {{port}} --bind 127.0.0.1
    ready: {tcp: "127.0.0.1:{{port}}", timeout: 20s}
workloads:
  - name: disk
    fs: {filename: local.img, rw: randread, bs: 4k, io_size: 4m}
`})
	db := filepath.Join(t.TempDir(), "x.db")
	r, err := runPlan(t, context.Background(), filepath.Join(dir, "plan.yaml"), "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	if !hasCode(r, "server-idle") {
		t.Fatalf("no server-idle warning: %+v", r.Warnings)
	}
}

// A load too small to share is refused by every segment at once, the
// first included, naming the segment left with nothing: before, segment
// 0/2 of --concurrency 1 waited at the barrier five minutes for 1/2,
// which had refused.
func TestEverySegmentRefusesAStarvedLoad(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "x.db")
	_, _, err := iolab(t, context.Background(), "http", "upload", "--url", "http://127.0.0.1:9/{{i}}", "--concurrency", "1", "--count", "4",
		"--segment", "0/2", "--segment-group", "g", "--db", db)
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "leaves segment 1/2 no worker") {
		t.Fatalf("segment 0/2 of one worker: %v", err)
	}
	_, _, err = iolab(t, context.Background(), "fs", "--directory", t.TempDir(), "--size", "64k", "--numjobs", "1",
		"--segment", "0/2", "--segment-group", "g", "--db", db)
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "leaves segment 1/2 no job") {
		t.Fatalf("segment 0/2 of one job: %v", err)
	}
}

// One upload that lasts seconds shows in every one of them: the stored
// per-second series books its bytes over the seconds it moved (as fio's
// bandwidth log), not all in the last, so the plot of a disk slowing over
// a day has something to draw.
func TestLongUploadFillsEverySecond(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 1<<20)
		for {
			if _, err := io.ReadFull(r.Body, buf); err != nil {
				return
			}
			time.Sleep(125 * time.Millisecond) // 8 MiB/s
		}
	}))
	defer srv.Close()
	db := filepath.Join(t.TempDir(), "x.db")
	if _, stderr, err := iolab(t, context.Background(), "http", "upload", "--url", srv.URL+"/{{i}}", "--method", "PUT", "--size", "24m",
		"--count", "1", "--rounds", "1", "--warmup", "0", "--db", db); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	out, _, err := iolab(t, context.Background(), "show", "--db", db, "--json", "--series")
	var r struct {
		Runs []struct {
			DurationS float64 `json:"duration_s"`
			Series    []struct{ T, Ops, Bytes int64 }
		}
	}
	decodeInto(t, out, &r)
	if err != nil || len(r.Runs) != 1 || r.Runs[0].DurationS < 2 {
		t.Fatalf("%v: %s", err, out)
	}
	var total int64
	for _, s := range r.Runs[0].Series {
		if float64(s.T+1) <= r.Runs[0].DurationS && s.Bytes < 2<<20 {
			t.Errorf("second %d of a %.1f s upload moved %d bytes: %+v", s.T, r.Runs[0].DurationS, s.Bytes, r.Runs[0].Series)
		}
		total += s.Bytes
	}
	if total != 24<<20 {
		t.Errorf("the seconds hold %d bytes of 24 MiB", total)
	}
}
