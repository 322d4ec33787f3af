package cli

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/workload"
)

// kindFixture is how the conformance suite drives one workload kind.
type kindFixture struct {
	// local are the kind's keys (a YAML flow mapping's inside) for a
	// target of the test's own, and args the same as flags.
	local string
	args  []string
	// server, when set, is a variant (YAML) whose server provides the
	// kind's target, remote the kind's keys against it, files what the
	// plan's directory holds, and measured checks that every run of
	// the plan in dir (db) measured the server's target, not another.
	server, remote string
	files          map[string]string
	measured       func(t *testing.T, dir, db string, runs int)
}

// kindFixtures makes each kind's fixture; a kind registered without one
// fails the suite. A kind's test file may add its own (registry_test.go).
var kindFixtures = map[string]func(t *testing.T) kindFixture{
	"fs":     fsFixture,
	"frames": framesFixture,
	"http":   httpFixture,
	"s3":     s3Fixture,
	"cmd":    cmdFixture,
}

// Every registered kind goes through every lifecycle: a single command,
// a plan whose variant's server provides its target, segments where it
// splits, and kill -9 then --resume. Each run measured the target it was
// given; its primary metric reaches every export (read back by a CSV
// reader, a JSON decoder and x/perf's benchfmt); a gate on it can fail.
func TestEveryKindConforms(t *testing.T) {
	t.Parallel()
	for _, kind := range workload.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			mk, ok := kindFixtures[kind.Name]
			if !ok {
				t.Fatalf("kind %s has no conformance fixture: add one to kindFixtures", kind.Name)
			}
			fx := mk(t)
			conformCommand(t, kind, fx)
			if fx.server != "" {
				conformServerPlan(t, kind, fx)
			}
			if kind.Splits {
				conformSegments(t, kind, fx)
			}
			conformResume(t, kind, fx)
			if _, ok := kind.NewOptions().(workload.Pacer); ok {
				conformCurve(t, kind, fx, false)
				if fx.server != "" {
					conformCurve(t, kind, fx, true)
				}
			}
		})
	}
}

func conformCommand(t *testing.T, kind workload.Kind, fx kindFixture) {
	db := filepath.Join(t.TempDir(), "x.db")
	args := append([]string{kind.Name}, fx.args...)
	if _, stderr, err := iolab(t, context.Background(), append(args, "--rounds", "2", "--warmup", "0", "--db", db)...); err != nil {
		t.Fatalf("iolab %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	stored := distinct(t, db, `SELECT DISTINCT name FROM metrics`)
	// Every metric a run stored is one the catalogue declares — its unit,
	// direction and merge known to every consumer — and every export
	// carries it.
	for _, name := range stored {
		if _, ok := metrics.Describe(name); !ok {
			t.Errorf("%s stored metric %s, which no package declares (metrics.Declare)", kind.Name, name)
		}
	}
	conformExports(t, kind, db, stored)
	// A gate on each metric it judges, set where no run can keep it, fails.
	args = []string{"show", "--db", db}
	var gates []string
	for _, name := range stored {
		def, _ := metrics.Describe(name)
		switch def.Better {
		case metrics.LowerIsBetter:
			gates = append(gates, name+"<0")
		case metrics.HigherIsBetter:
			gates = append(gates, name+">1e18")
		}
	}
	for _, g := range gates {
		args = append(args, "--gate", g)
	}
	_, _, err := iolab(t, context.Background(), args...)
	if !errors.Is(err, analysis.ErrGate) {
		t.Fatalf("gates %v kept: %v", gates, err)
	}
	for _, g := range gates {
		if !strings.Contains(err.Error(), "--gate "+g+":") {
			t.Errorf("--gate %s kept", g)
		}
	}
}

// conformExports reads every stored metric back from CSV (a CSV reader)
// and NDJSON (a JSON decoder), and from benchfmt (x/perf's parser) with
// its direction.
func conformExports(t *testing.T, kind workload.Kind, db string, stored []string) {
	show := func(format string) string {
		out, _, err := iolab(t, context.Background(), "show", "--db", db, "--format", format)
		if err != nil {
			t.Fatalf("--format %s: %v", format, err)
		}
		return out
	}
	rows, err := csv.NewReader(strings.NewReader(show("csv"))).ReadAll()
	inCSV := map[string]int{}
	for _, r := range rows {
		if len(r) == 9 {
			inCSV[r[7]]++
		}
	}
	inNDJSON := map[string]int{}
	for sc := bufio.NewScanner(strings.NewReader(show("ndjson"))); sc.Scan(); {
		var run struct{ Metrics map[string]float64 }
		if json.Unmarshal(sc.Bytes(), &run) == nil {
			for m := range run.Metrics {
				inNDJSON[m]++
			}
		}
	}
	bench := show("bench")
	units := benchDirections(t, bench)
	for _, m := range stored {
		def, _ := metrics.Describe(m)
		if inCSV[m] == 0 || inNDJSON[m] == 0 || !units[def.BenchUnit()] {
			t.Errorf("%s: metric %s in %d CSV rows, %d NDJSON lines, benchfmt %v (%v)", kind.Name, m, inCSV[m], inNDJSON[m], units[def.BenchUnit()], err)
		}
	}
	if inCSV[kind.Primary] != 2 || inNDJSON[kind.Primary] != 2 {
		t.Errorf("%s: the primary metric in %d CSV rows and %d NDJSON lines, want one per run (2)", kind.Name, inCSV[kind.Primary], inNDJSON[kind.Primary])
	}
}

func conformServerPlan(t *testing.T, kind workload.Kind, fx kindFixture) {
	dir := t.TempDir()
	files := map[string]string{"plan.yaml": fmt.Sprintf(`name: conform-%s
rounds: 2
warmup: 0
variants:
  - %s
workloads:
  - name: w
    %s: {%s}
`, kind.Name, strings.ReplaceAll(fx.server, "\n", "\n    "), kind.Name, fx.remote)}
	for k, v := range fx.files {
		files[k] = v
	}
	writeFiles(t, dir, files)
	db := filepath.Join(t.TempDir(), "x.db")
	r, err := runPlan(t, context.Background(), filepath.Join(dir, "plan.yaml"), "--db", db, "--json")
	if err != nil {
		t.Fatalf("plan against the server: %v", err)
	}
	if len(r.Runs) != 2 || r.Runs[0].Status != "ok" || r.Runs[1].Status != "ok" {
		t.Fatalf("runs %+v", r.Runs)
	}
	fx.measured(t, dir, db, 2)
}

func conformSegments(t *testing.T, kind workload.Kind, fx kindFixture) {
	db := filepath.Join(t.TempDir(), "x.db")
	runSegments(t, 2, append(append([]string{kind.Name}, fx.args...), "--rounds", "1", "--warmup", "0", "--db", db, "--segment-group", "conform-"+kind.Name, "--barrier-timeout", "60s")...)
	out, _, err := iolab(t, context.Background(), "show", "--db", db, "--json")
	var r struct {
		Status   string
		Segments struct{ Experiments map[string]string }
		Runs     []struct{ Status string }
	}
	if err != nil || json.Unmarshal([]byte(out), &r) != nil || len(r.Segments.Experiments) != 2 || len(r.Runs) != 1 || r.Runs[0].Status != "ok" {
		t.Fatalf("segments of %s merged (%v): %s", kind.Name, err, out)
	}
}

// conformResume kills iolab (kill -9) in the middle of a plan of the
// kind and resumes it: every run is done exactly once. iolab is this test
// binary (testIolab), which knows the kinds the tests register too.
func conformResume(t *testing.T, kind workload.Kind, fx kindFixture) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"plan.yaml": fmt.Sprintf(`name: resume-%s
rounds: 5
warmup: 0
cooldown: 400ms
variants: [{name: a}, {name: b}]
workloads:
  - name: w
    %s: {%s}
`, kind.Name, kind.Name, fx.local)})
	db := filepath.Join(t.TempDir(), "x.db")
	first := testIolab("experiment", filepath.Join(dir, "plan.yaml"), "--db", db)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); countRowsQuiet(db) < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	_ = first.Process.Signal(syscall.SIGKILL)
	_ = first.Wait()
	if n := countRowsQuiet(db); n < 2 || n >= 10 {
		t.Fatalf("%d runs stored before the kill, want some of 10", n)
	}
	out, err := testIolab("experiment", filepath.Join(dir, "plan.yaml"), "--db", db, "--resume", "--json").Output()
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	everyRunOnce(t, out, 10)
}

// conformCurve runs a curve of a kind that can be paced: against its
// variant's server (served), where every run measured the server's
// target; else on its own target, killing iolab (kill -9) in the middle
// of its SLO search, and resuming. Either way the calibration ran once,
// and its rate paced the loads (before the kill and after it): every run
// of the curve's load timed from its schedule at the share asked, and
// the search went on from where it was.
func conformCurve(t *testing.T, kind workload.Kind, fx kindFixture, served bool) {
	dir := t.TempDir()
	variant, keys := "{name: a}", fx.local
	if served {
		variant, keys = strings.ReplaceAll(fx.server, "\n", "\n    "), fx.remote
	}
	// An objective every load keeps: the search tries the top of its
	// range and doubles it, up to 10x flat out, three runs a load.
	response := kind.Metrics[slices.IndexFunc(kind.Metrics, func(m string) bool { return strings.HasSuffix(m, ".response_p99_ns") })]
	files := map[string]string{"plan.yaml": fmt.Sprintf(`name: curve-%s
rounds: 3
warmup: 0
variants:
  - %s
workloads:
  - name: w
    curve: [50]
    slo: {metric: %s, below: 1m}
    %s: {%s}
`, kind.Name, variant, response, kind.Name, keys)}
	for k, v := range fx.files {
		files[k] = v
	}
	writeFiles(t, dir, files)
	db := filepath.Join(t.TempDir(), "x.db")
	args := []string{"experiment", filepath.Join(dir, "plan.yaml"), "--db", db, "--json"}
	if !served {
		first := testIolab(args...)
		if err := first.Start(); err != nil {
			t.Fatal(err)
		}
		// Killed in the middle of the search: past the calibrations and
		// the rounds of the other loads (the 12th run), before its end.
		past, all := 9+store.CalibrationRuns, 21+store.CalibrationRuns
		for deadline := time.Now().Add(60 * time.Second); countRowsQuiet(db) < past && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		_ = first.Process.Signal(syscall.SIGKILL)
		_ = first.Wait()
		if n := countRowsQuiet(db); n < past || n >= all {
			t.Fatalf("%d runs stored before the kill, want %d to %d of %d", n, past, all-1, all)
		}
		args = append(args, "--resume")
	}
	out, err := testIolab(args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%v\n%s\n%s", err, out, stderr)
	}
	var r struct {
		Runs []map[string]any
		SLOs []struct {
			Held float64 `json:"held_ops_per_s"`
			Done bool
			Runs int
		}
		Curves []struct {
			Calibrated float64 `json:"calibrated_ops_per_s"`
			Points     []struct {
				Load    string
				Offered float64         `json:"offered_ops_per_s"`
				Rate    struct{ N int } `json:"ops_per_s"`
			}
		}
	}
	decodeInto(t, string(out), &r)
	calibrations, paced, ok := 0, 0, 0
	var calibrated float64
	offered := map[int]float64{} // the search's runs, by round
	for _, run := range r.Runs {
		round, _ := run["round"].(float64)
		if run["status"] == "ok" {
			ok++
		}
		switch {
		case run["status"] == "interrupted": // the run the kill cut, kept as such
		case run["status"] != "ok":
			t.Errorf("run %v: %v", run["cell"], run["error"])
		case store.IsCalibration(int(round)):
			calibrations++
			rate, _ := run["ops_per_s"].(float64)
			calibrated = max(calibrated, rate) // the loads are shares of the highest
			if run["cell"] != "w load=max" || run["warmup"] != true {
				t.Errorf("the calibration ran %v (warm-up %v), want the flat-out cell's warm-up run", run["cell"], run["warmup"])
			}
		case run["cell"] == "w load=slo" && run["status"] == "ok":
			extra, _ := run["extra"].(map[string]any)
			offered[int(round)], _ = extra["offered_ops_per_s"].(float64)
		case run["cell"] == "w load=50%":
			if b, _ := json.Marshal(run); !strings.Contains(string(b), `"response_ns"`) {
				t.Errorf("round %v of the 50%% load has no response times: it ran unpaced", round)
			}
			paced++
		}
	}
	if calibrations != store.CalibrationRuns || paced != 3 || len(offered) != 15 || ok != 21+store.CalibrationRuns {
		t.Fatalf("%d calibrations, %d paced runs, %d searching, %d good runs; want %d, 3, 15, %d", calibrations, paced, len(offered), ok,
			store.CalibrationRuns, 21+store.CalibrationRuns)
	}
	// The search went on where it was (across the kill): each load three
	// runs, from half of its first top (125% of flat out), then the top,
	// doubled each time it held.
	for round, share := range []float64{.625, .625, .625, 1.25, 1.25, 1.25, 2.5, 2.5, 2.5, 5, 5, 5, 10, 10, 10} {
		if math.Abs(offered[round]-share*calibrated) > 1e-9*calibrated {
			t.Errorf("search run %d offered %g ops/s, want %g of the calibration's %g", round, offered[round], share, calibrated)
		}
	}
	if len(r.SLOs) != 1 || !r.SLOs[0].Done || r.SLOs[0].Runs != 15 || math.Abs(r.SLOs[0].Held-10*calibrated) > 1e-9*calibrated {
		t.Errorf("the search: %+v, want it done in 15 runs, held at 10x %g", r.SLOs, calibrated)
	}
	if len(r.Curves) == 0 || r.Curves[0].Calibrated != calibrated || len(r.Curves[0].Points) != 2 {
		t.Fatalf("curves %+v, want the calibration's %g ops/s and two loads", r.Curves, calibrated)
	}
	if p := r.Curves[0].Points[0]; p.Load != "50%" || p.Rate.N != 3 || math.Abs(p.Offered-calibrated/2) > 1e-6*calibrated {
		t.Errorf("the 50%% load %+v, want 3 runs offered %g ops/s", p, calibrated/2)
	}
	if served {
		fx.measured(t, dir, db, 21+store.CalibrationRuns)
	}
}

// pyServer is the head of a Python server on $PORT that the tests'
// variants start: serve(handler) listens, stop(fn) runs fn at SIGTERM.
const pyServer = `import os, signal, socket, sys, shutil, threading
PORT = int(os.environ["PORT"])
def stop_with(fn):
    def h(*_):
        fn()
        os._exit(0)
    signal.signal(signal.SIGTERM, h)
def listen():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", PORT))
    s.listen()
    while True:
        c, _ = s.accept()
        c.close()
`

func fsFixture(t *testing.T) kindFixture {
	dir := t.TempDir()
	return kindFixture{
		local: fmt.Sprintf("directory: %q, size: 256k, bs: 4k, rw: read", dir),
		args:  []string{"--directory", dir, "--size", "256k", "--bs", "4k", "--rw", "read", "--numjobs", "2"},
		// A file the server creates at start: read whole, 1 MiB a run.
		server: "name: srv\nenv: {PORT: \"{{port}}\"}\nstart: exec python3 serve.py export.img\nready: {tcp: \"127.0.0.1:{{port}}\", timeout: 20s}",
		remote: "filename: export.img, rw: read, bs: 4k",
		files:  map[string]string{"serve.py": exportServer, "export.img": strings.Repeat("p", 65536)},
		measured: func(t *testing.T, dir, db string, runs int) {
			if n := countRows(t, db, `SELECT count(*) FROM run_directions WHERE direction = 'read' AND bytes = 1048576`); n != runs {
				t.Errorf("%d of %d runs read the server's 1 MiB file", n, runs)
			}
		},
	}
}

func framesFixture(t *testing.T) kindFixture {
	dir := t.TempDir()
	return kindFixture{
		local: fmt.Sprintf("directory: %q, width: 32, height: 32, bytes-per-pixel: 3, frames: 4", dir),
		args:  []string{"--directory", dir, "--width", "32", "--height", "32", "--bytes-per-pixel", "3", "--frames", "4", "--threads", "2"},
		// A directory the server makes afresh at start; at stop it says
		// how many frames it holds.
		server: "name: srv\nenv: {PORT: \"{{port}}\"}\nstart: exec python3 serve.py\nready: {tcp: \"127.0.0.1:{{port}}\", timeout: 20s}",
		remote: "directory: served, width: 32, height: 32, bytes-per-pixel: 3, frames: 4, keep: true",
		files: map[string]string{"serve.py": pyServer + `shutil.rmtree("served", ignore_errors=True)
os.mkdir("served")
def seen():
    with open("seen.log", "a") as f:
        f.write("%d\n" % len(os.listdir("served")))
stop_with(seen)
listen()
`},
		measured: func(t *testing.T, dir, db string, runs int) {
			b, _ := os.ReadFile(filepath.Join(dir, "seen.log"))
			if got := strings.Fields(string(b)); len(got) != runs || strings.Count(string(b), "4\n") != runs {
				t.Errorf("the server's directory held %q frames at its stops, want 4 after each of %d runs", got, runs)
			}
		},
	}
}

func httpFixture(t *testing.T) kindFixture {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	t.Cleanup(srv.Close)
	return kindFixture{
		local:  fmt.Sprintf("url: %q, method: PUT, size: 4k, count: 8", srv.URL+"/up/{{i}}"),
		args:   []string{"upload", "--url", srv.URL + "/up/{{i}}", "--method", "PUT", "--size", "4k", "--count", "8", "--concurrency", "2"},
		server: "name: srv\nenv: {PORT: \"{{port}}\"}\nstart: exec python3 serve.py\nready: {tcp: \"127.0.0.1:{{port}}\", timeout: 20s}",
		remote: `url: "http://127.0.0.1:{{port}}/up/{{i}}", method: PUT, size: 64k, count: 8`,
		files: map[string]string{"serve.py": pyServer + `import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_PUT(self):
        n = int(self.headers["Content-Length"])
        self.rfile.read(n)
        got.append(n)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
got = []
def seen():
    with open("got.log", "a") as f:
        f.write("%d %d\n" % (len(got), sum(got)))
stop_with(seen)
http.server.ThreadingHTTPServer(("127.0.0.1", PORT), H).serve_forever()
`},
		measured: func(t *testing.T, dir, db string, runs int) {
			b, _ := os.ReadFile(filepath.Join(dir, "got.log"))
			if strings.Count(string(b), "8 524288\n") != runs {
				t.Errorf("the server got %q, want 8 uploads of 64 KiB in each of %d runs", b, runs)
			}
		},
	}
}

func s3Fixture(t *testing.T) kindFixture {
	srv := s3Servers(t)[0]
	bin := versitygwBin(t)
	keys := fmt.Sprintf("access-key: %s, secret-key: %s", testAccessKey, testSecretKey)
	bucket := fmt.Sprintf("conform%d", time.Now().UnixNano()%1e9)
	return kindFixture{
		local: fmt.Sprintf("endpoint: %q, bucket: %s, create-bucket: true, mix: put=1, size: 1k, count: 8, %s", srv.endpoint, bucket, keys),
		args: []string{"--endpoint", srv.endpoint, "--bucket", bucket, "--create-bucket", "--mix", "put=1,get=1", "--size", "1k", "--count", "16", "--concurrency", "2",
			"--access-key", testAccessKey, "--secret-key", testSecretKey},
		// Each start gets a data directory of its own, which keeps what
		// that start's run wrote.
		server: fmt.Sprintf("name: gw\nstart: \"mkdir data-{{port}} && exec %s --port 127.0.0.1:{{port}} posix data-{{port}}\"\nready: {tcp: \"127.0.0.1:{{port}}\", timeout: 20s}\nenv: {ROOT_ACCESS_KEY: %s, ROOT_SECRET_KEY: %s}", bin, testAccessKey, testSecretKey),
		remote: `endpoint: "http://127.0.0.1:{{port}}", bucket: served, create-bucket: true, mix: put=1, size: 1k, count: 8, keep: true, ` + keys,
		measured: func(t *testing.T, dir, db string, runs int) {
			starts, _ := filepath.Glob(filepath.Join(dir, "data-*"))
			if len(starts) != runs {
				t.Fatalf("%d server data directories, want one per run (%d)", len(starts), runs)
			}
			for _, d := range starts {
				objects := 0
				_ = filepath.Walk(filepath.Join(d, "served"), func(_ string, info os.FileInfo, err error) error {
					if err == nil && info.Mode().IsRegular() && info.Size() == 1024 {
						objects++
					}
					return nil
				})
				if objects != 8 {
					t.Errorf("%s holds %d objects of 1 KiB, want the run's 8", d, objects)
				}
			}
		},
	}
}

func cmdFixture(t *testing.T) kindFixture {
	return kindFixture{
		local:  `run: "sleep 0.01"`,
		args:   []string{"--run", "sleep 0.01"},
		server: "name: srv\nstart: exec python3 -m http.server {{port}} --bind 127.0.0.1\nready: {http: \"http://127.0.0.1:{{port}}/\", timeout: 20s}",
		remote: `run: "python3 -c 'import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:{{port}}/\").read()' && echo {{port}} >> hits"`,
		measured: func(t *testing.T, dir, db string, runs int) {
			b, _ := os.ReadFile(filepath.Join(dir, "hits"))
			ports := strings.Fields(string(b))
			if len(ports) != runs || ports[0] == ports[len(ports)-1] {
				t.Errorf("the command reached servers on ports %q, want one each of %d runs", ports, runs)
			}
		},
	}
}

// distinct are the values of a one-column query of a SQLite store.
func distinct(t *testing.T, db, query string) []string {
	t.Helper()
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}
