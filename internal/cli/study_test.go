package cli

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/cgroup"
)

// studyRunJSON is what these tests read of a run.
type studyRunJSON struct {
	Runs []struct {
		Cell, Variant, Status, Error string
		Warmup                       bool
		Ops                          map[string]struct{ Ops, Bytes, Errors int64 }
		Extra                        map[string]float64 `json:"extra"`
		Verify                       *struct{ Checked, Mismatched int64 }
		ServerSeries                 []struct {
			T        int64
			RSSBytes int64   `json:"rss_bytes"`
			CPUS     float64 `json:"cpu_s"`
			Threads  int
			FDs      int `json:"fds"`
		} `json:"server_series"`
	} `json:"runs"`
	Cells []struct {
		Name, Variant string
		Params        map[string]string
		Summary       map[string]struct{ Median float64 }
	} `json:"cells"`
	Comparisons []comparisonJSON `json:"comparisons"`
}

var (
	fileshareOnce sync.Once
	fileshareBin  string
	fileshareErr  error
)

// fileshare builds the example's stand-in server (examples/fileshare)
// once for the package's tests.
func fileshare(t *testing.T) string {
	t.Helper()
	fileshareOnce.Do(func() {
		dir, err := os.MkdirTemp("", "iolab-fileshare-")
		if err != nil {
			fileshareErr = err
			return
		}
		fileshareBin = filepath.Join(dir, "fileshare")
		if out, err := exec.Command("go", "build", "-o", fileshareBin, "github.com/iolab/iolab/examples/fileshare/server").CombinedOutput(); err != nil {
			fileshareErr = fmt.Errorf("build the stand-in server: %v\n%s", err, out)
		}
	})
	if fileshareErr != nil {
		t.Fatal(fileshareErr)
	}
	return fileshareBin
}

func studyPlan(t *testing.T, dir, text string) (studyRunJSON, string, error) {
	t.Helper()
	writeFiles(t, dir, map[string]string{"plan.yaml": text})
	out, stderr, err := iolab(t, context.Background(), "experiment", filepath.Join(dir, "plan.yaml"), "--db", filepath.Join(dir, "x.db"), "--json", "--keep-going")
	var r studyRunJSON
	if out != "" {
		decodeInto(t, out, &r)
	}
	return r, stderr, err
}

// The field report's study in small: two builds of a file-sharing server
// whose login issues a fresh session at every start, uploads, and a
// download benchmark whose files a setup step uploads after each start,
// verified byte for byte; every run on a port of its own.
func TestStudyUploadAndSeededDownload(t *testing.T) {
	t.Parallel()
	bin := fileshare(t)
	dir := t.TempDir()
	r, stderr, err := studyPlan(t, dir, `name: fileshare
rounds: 2
warmup: 0
variants:
  - name: baseline
    start: exec `+bin+` -listen 127.0.0.1:{{port}} -data {{tmp}}/d{{port}} -chunk-size 320k
    ready: {http: "http://127.0.0.1:{{port}}/healthz"}
    env: {PS_SHARED_SECRET: pass-7f3a9}
  - name: larger-chunk-size
    start: exec `+bin+` -listen 127.0.0.1:{{port}} -data {{tmp}}/d{{port}} -chunk-size 4m
    ready: {http: "http://127.0.0.1:{{port}}/healthz"}
    env: {PS_SHARED_SECRET: pass-7f3a9}
hooks:
  before_run: echo {{port}} >> ports.txt
workloads:
  - name: upload
    matrix: {size: [256k, 1m]}
    http:
      mode: upload
      method: POST
      url: http://127.0.0.1:{{port}}/api/entry
      form-field: file
      login-url: http://127.0.0.1:{{port}}/api/auth
      login-body: passphrase=pass-7f3a9
      id-from-json: id
      count: 4
  - name: download
    matrix: {size: [256k, 1m]}
    setup:
      http:
        mode: upload
        method: POST
        url: http://127.0.0.1:{{port}}/api/entry
        form-field: file
        login-url: http://127.0.0.1:{{port}}/api/auth
        login-body: passphrase=pass-7f3a9
        id-from-json: id
        size: "{{size}}"
        count: 3
    http:
      mode: download
      url: "http://127.0.0.1:{{port}}/-{{id}}"
      id-file: "{{ids}}"
      login-url: http://127.0.0.1:{{port}}/api/auth
      login-body: passphrase=pass-7f3a9
      header: ["X-Study: fileshare", "X-Round: any"]
      verify: true
      count: 6
`)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if len(r.Runs) != 16 {
		t.Fatalf("%d runs, want 2 variants x 4 cells x 2 rounds", len(r.Runs))
	}
	for _, run := range r.Runs {
		if run.Status != "ok" {
			t.Fatalf("%s/%s: %s %s", run.Variant, run.Cell, run.Status, run.Error)
		}
		if strings.HasPrefix(run.Cell, "download") {
			// 6 downloads of the 3 files the setup step uploaded, each
			// checked against what was sent; the setup's uploads are not
			// part of the run.
			if run.Ops["download"].Ops != 6 || run.Ops["upload"].Ops != 0 || run.Verify == nil || run.Verify.Checked != 6 || run.Verify.Mismatched != 0 {
				t.Errorf("%s/%s: %+v verify %+v", run.Variant, run.Cell, run.Ops, run.Verify)
			}
		}
		if run.Extra["server_rss_peak_bytes"] <= 0 {
			t.Errorf("%s/%s: no server figures: %v", run.Variant, run.Cell, run.Extra)
		}
	}
	ports, err := os.ReadFile(filepath.Join(dir, "ports.txt"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range strings.Fields(string(ports)) {
		seen[p] = true
	}
	if len(seen) < 12 { // 16 runs; a port freed by a finished run may come back
		t.Errorf("%d distinct ports over 16 runs: %s", len(seen), ports)
	}
	// The secret passphrase is in neither output nor store.
	db, _ := os.ReadFile(filepath.Join(dir, "x.db"))
	if strings.Contains(string(db), "pass-7f3a9") || strings.Contains(stderr, "pass-7f3a9") {
		t.Error("the passphrase was stored or printed")
	}
}

// A server that holds a known 100 MiB and burns a known CPU time per
// request shows both in its run's figures, from /proc and from its
// cgroup.
func TestServerFiguresOfAKnownLoad(t *testing.T) {
	t.Parallel()
	if err := cgroup.Check(cgroup.Limits{Memory: 512 << 20}); err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	bin := fileshare(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"plan.yaml": `rounds: 1
warmup: 0
variants:
  - name: hog
    start: exec ` + bin + ` -listen 127.0.0.1:{{port}} -hold-mib 100
    ready: {http: "http://127.0.0.1:{{port}}/healthz"}
    limits: {memory: 512m}
workloads:
  - name: burn
    http: {mode: download, url: "http://127.0.0.1:{{port}}/burn/100", count: 25}
`})
	out, stderr, err := iolab(t, context.Background(), "experiment", filepath.Join(dir, "plan.yaml"), "--db", filepath.Join(dir, "x.db"), "--json", "--series")
	var r studyRunJSON
	if out != "" {
		decodeInto(t, out, &r)
	}
	if err != nil || len(r.Runs) != 1 || r.Runs[0].Status != "ok" {
		t.Fatalf("%v %+v\n%s", err, r.Runs, stderr)
	}
	x := r.Runs[0].Extra
	mib := func(k string) float64 { return x[k] / (1 << 20) }
	// 100 MiB held, plus a Go runtime's few MiB.
	if rss := mib("server_rss_peak_bytes"); rss < 100 || rss > 100*1.1+8 {
		t.Errorf("server_rss_peak_bytes %.1f MiB, want 100 MiB + runtime", rss)
	}
	if peak := mib("cgroup_memory_peak_bytes"); peak < 100 || peak > 100*1.1+8 {
		t.Errorf("cgroup_memory_peak_bytes %.1f MiB, want 100 MiB + runtime", peak)
	}
	// 25 requests x 100 ms of the thread's own CPU time; /proc counts in
	// 10 ms ticks, so a tick or two may fall off the low end.
	if cpu := x["server_cpu_s"]; cpu < 2.45 || cpu > 2.75 {
		t.Errorf("server_cpu_s %.3f, want 2.5 s within 10%%", cpu)
	}
	if cpu, ok := x["cgroup_cpu_s"]; ok && (cpu < 2.45 || cpu > 2.75) {
		t.Errorf("cgroup_cpu_s %.3f, want 2.5 s within 10%%", cpu)
	}
	// Per operation: 100 ms of the server's CPU each.
	if perOp := r.Cells[0].Summary["server_cpu_us_per_op"].Median; perOp < 98e3 || perOp > 110e3 {
		t.Errorf("server_cpu_us_per_op %.0f, want 100 ms per request within 10%%", perOp)
	}
	// Second by second: the memory held in each, the CPU adding up.
	series := r.Runs[0].ServerSeries
	cpu := 0.0
	for _, s := range series {
		cpu += s.CPUS
		if s.RSSBytes < 100<<20 || s.Threads < 1 || s.FDs < 3 {
			t.Errorf("server second %+v", s)
		}
	}
	if len(series) < 2 || cpu < 0.95*x["server_cpu_s"] || cpu > 1.05*x["server_cpu_s"] {
		t.Errorf("%d server seconds with %.3f s CPU, run %.3f s: %+v", len(series), cpu, x["server_cpu_s"], series)
	}
	if r.Cells[0].Params["limit_memory"] != "512m" {
		t.Errorf("cell params %v: want the limit recorded", r.Cells[0].Params)
	}
}

// The field report's memory matrix: a server that needs 200 MiB is killed
// by the OOM killer under 64 MiB — a failed run that says so — and runs
// under 256 MiB. No cgroup of iolab's is left. (Not parallel: that check
// would see the groups of other tests of this process.)
func TestMemoryLimitMatrix(t *testing.T) {
	if err := cgroup.Check(cgroup.Limits{Memory: 64 << 20}); err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	bin := fileshare(t)
	r, stderr, err := studyPlan(t, t.TempDir(), `rounds: 2
warmup: 0
variants:
  - name: big
    start: exec `+bin+` -listen 127.0.0.1:{{port}} -hold-mib 200
    ready: {http: "http://127.0.0.1:{{port}}/healthz", timeout: 20s}
    limits: {memory: "{{memory}}"}
workloads:
  - name: ping
    matrix: {memory: [64m, 256m]}
    http: {mode: download, url: "http://127.0.0.1:{{port}}/healthz", count: 3}
`)
	if err == nil || !strings.Contains(err.Error(), "OOM killer") {
		t.Errorf("want the experiment to end with the OOM failures named, got %v", err)
	}
	if len(r.Runs) != 4 {
		t.Fatalf("%d runs\n%s", len(r.Runs), stderr)
	}
	for _, run := range r.Runs {
		switch run.Cell {
		case "ping memory=64m":
			if run.Status != "failed" || !strings.Contains(run.Error, "OOM killer") || !strings.Contains(run.Error, "64m") {
				t.Errorf("under 64m: %s %q; want failed by the OOM killer", run.Status, run.Error)
			}
		case "ping memory=256m":
			if run.Status != "ok" || run.Extra["cgroup_oom_kills"] != 0 || run.Extra["cgroup_memory_peak_bytes"] < 200<<20 {
				t.Errorf("under 256m: %s %q %v", run.Status, run.Error, run.Extra)
			}
		default:
			t.Errorf("cell %q", run.Cell)
		}
	}
	assertNoCgroups(t, os.Getpid())
}

// assertNoCgroups checks that no cgroup of iolab process pid remains.
func assertNoCgroups(t *testing.T, pid int) {
	t.Helper()
	for _, d := range ownCgroups(t, pid) {
		t.Errorf("cgroup %s left behind", d)
	}
}

// cgroupDirs are this process's own cgroup directories, where iolab's go.
func cgroupDirs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		switch {
		case len(f) != 3:
		case f[1] == "":
			out = append(out, filepath.Join("/sys/fs/cgroup/unified", f[2]), filepath.Join("/sys/fs/cgroup", f[2]))
		case f[1] == "memory" || f[1] == "cpu" || f[1] == "cpuacct":
			out = append(out, filepath.Join("/sys/fs/cgroup", f[1], f[2]))
		}
	}
	return out
}

// A cmd workload's templates: {{run}} and {{round}} per run, a matrix
// field as items; and a variant's limits on the command itself, whose
// OOM kill fails its run with the reason. (Not parallel: see
// TestMemoryLimitMatrix.)
func TestCmdTemplatesAndLimits(t *testing.T) {
	slow(t)
	if err := cgroup.Check(cgroup.Limits{Memory: 64 << 20}); err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	dir := t.TempDir()
	r, stderr, err := studyPlan(t, dir, `rounds: 2
warmup: 1
variants:
  - name: small
    limits: {memory: 64m, cpus: 1}
workloads:
  - name: count
    matrix: {objects: [10, 20]}
    cmd: {run: "echo {{run}} {{round}} {{objects}} >> runs.txt", items: "{{objects}}"}
  - name: hog
    cmd: {run: "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo ${#x}"}
`)
	if err == nil || !strings.Contains(err.Error(), "OOM killer") {
		t.Errorf("want the OOM failures named, got %v", err)
	}
	if len(r.Runs) != 9 {
		t.Fatalf("%d runs\n%s", len(r.Runs), stderr)
	}
	for _, run := range r.Runs {
		switch {
		case run.Cell == "hog":
			if run.Status != "failed" || !strings.Contains(run.Error, "OOM killer") || run.Extra["cgroup_oom_kills"] < 1 {
				t.Errorf("hog: %s %q %v", run.Status, run.Error, run.Extra)
			}
		case run.Status != "ok" || run.Extra["items_per_s"] <= 0 || run.Extra["cgroup_memory_peak_bytes"] <= 0:
			t.Errorf("%s: %s %q %v", run.Cell, run.Status, run.Error, run.Extra)
		}
	}
	text, err := os.ReadFile(filepath.Join(dir, "runs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(text)), "\n")
	runs, rounds := map[string]bool{}, map[string]int{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 || strings.Contains(l, "{{") {
			t.Fatalf("line %q", l)
		}
		runs[f[0]] = true
		rounds[f[1]]++
	}
	// 6 count runs with distinct run numbers; rounds 0 (warm-up), 1, 2
	// each with both cells.
	if len(lines) != 6 || len(runs) != 6 || rounds["0"] != 2 || rounds["1"] != 2 || rounds["2"] != 2 {
		t.Errorf("runs.txt:\n%s", text)
	}
	assertNoCgroups(t, os.Getpid())
}

// kill -9 of iolab while a limited server runs: the server dies with it,
// and the next iolab removes the cgroup left behind.
func TestKilledIolabLeavesNoCgroup(t *testing.T) {
	t.Parallel()
	if err := cgroup.Check(cgroup.Limits{Memory: 64 << 20}); err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	bin, srv, dir := buildIolab(t), fileshare(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"plan.yaml": `rounds: 50
warmup: 0
variants:
  - name: a
    start: exec ` + srv + ` -listen 127.0.0.1:{{port}}
    ready: {http: "http://127.0.0.1:{{port}}/healthz"}
    limits: {memory: 128m}
workloads:
  - name: slow
    http: {mode: download, url: "http://127.0.0.1:{{port}}/burn/20", runtime: 2s}
`, "other.yaml": "rounds: 1\nwarmup: 0\nworkloads:\n  - cmd: {run: 'true'}\n"})
	first := exec.Command(bin, "experiment", filepath.Join(dir, "plan.yaml"), "--db", filepath.Join(dir, "x.db"))
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	pid := first.Process.Pid
	// The run's group is the one the server is in (the check before the
	// runs creates and removes one of its own).
	var left []string
	deadline := time.Now().Add(30 * time.Second)
	for len(left) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		for _, g := range ownCgroups(t, pid) {
			if procs, _ := os.ReadFile(filepath.Join(g, "cgroup.procs")); len(strings.TrimSpace(string(procs))) > 0 {
				left = append(left, g)
			}
		}
	}
	if len(left) == 0 {
		first.Process.Kill()
		first.Wait()
		t.Fatal("the limited server's cgroup never appeared")
	}
	time.Sleep(300 * time.Millisecond) // into the run
	_ = first.Process.Signal(syscall.SIGKILL)
	_ = first.Wait()
	if _, err := os.Stat(left[0]); err != nil {
		t.Fatalf("the cgroup went with iolab (%v): nothing for the next one to clean", err)
	}
	if out, err := exec.Command(bin, "experiment", filepath.Join(dir, "other.yaml"), "--db", filepath.Join(dir, "y.db")).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rest := ownCgroups(t, pid); len(rest) != 0 {
		t.Errorf("left behind after the next start: %v", rest)
	}
}

// ownCgroups lists the cgroups iolab process pid created.
func ownCgroups(t *testing.T, pid int) []string {
	var out []string
	for _, d := range cgroupDirs(t) {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), fmt.Sprintf("iolab-%d-", pid)) {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
	}
	return out
}

// --observe-pid watches a server iolab did not start, as a plan's
// observe: does; a PID that is no process is refused before anything runs.
func TestObserveAServerIolabDidNotStart(t *testing.T) {
	t.Parallel()
	bin, dir := fileshare(t), t.TempDir()
	port := freeLoopbackPort(t)
	srv := exec.Command(bin, "-listen", fmt.Sprintf("127.0.0.1:%d", port), "-hold-mib", "40")
	if err := startDying(srv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/burn/50", port)
	r, err := httpRun(t, "download", "--url", url, "--count", "4", "--observe-pid", fmt.Sprint(srv.Process.Pid))
	if err != nil || len(r.Runs) != 1 {
		t.Fatalf("%v %+v", err, r)
	}
	// 4 x 50 ms of CPU, less a 10 ms tick /proc may not have counted yet.
	if x := r.Runs[0].Extra; x["server_rss_peak_bytes"] < 40<<20 || x["server_cpu_s"] < 0.18 {
		t.Errorf("server figures %v", x)
	}
	_, err = httpRun(t, "download", "--url", url, "--count", "1", "--observe-pid", "4194000")
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "--observe-pid 4194000: no such process") {
		t.Errorf("a PID that is no process: %v", err)
	}
	// The same from a plan, through a PID file.
	writeFiles(t, dir, map[string]string{"srv.pid": fmt.Sprint(srv.Process.Pid)})
	pr, stderr, err := studyPlan(t, dir, `rounds: 1
warmup: 0
variants:
  - name: running
    observe: {pidfile: srv.pid}
workloads:
  - http: {mode: download, url: "`+url+`", count: 4}
`)
	if err != nil || len(pr.Runs) != 1 || pr.Runs[0].Extra["server_cpu_s"] < 0.18 {
		t.Errorf("%v %+v\n%s", err, pr.Runs, stderr)
	}
}

// Profiles of a Go server during the measured runs: the function it
// spends its time in comes first, and what another build spends more on
// (a checksum of every upload) shows as a gain against the baseline.
func TestProfilesNameTheHotFunction(t *testing.T) {
	slow(t)
	t.Parallel()
	bin, dir := fileshare(t), t.TempDir()
	db := filepath.Join(dir, "x.db")
	writeFiles(t, dir, map[string]string{"plan.yaml": `rounds: 2
warmup: 0
variants:
  - name: baseline
    start: exec ` + bin + ` -listen 127.0.0.1:{{port}} -data {{tmp}}/d{{port}}
    ready: {http: "http://127.0.0.1:{{port}}/healthz"}
    env: {PS_SHARED_SECRET: pw-1234}
    profile: {go_pprof: "http://127.0.0.1:{{port}}/debug/pprof/profile"}
  - name: checksum
    start: exec ` + bin + ` -listen 127.0.0.1:{{port}} -data {{tmp}}/d{{port}} -checksum
    ready: {http: "http://127.0.0.1:{{port}}/healthz"}
    env: {PS_SHARED_SECRET: pw-1234}
    profile: {go_pprof: "http://127.0.0.1:{{port}}/debug/pprof/profile"}
workloads:
  - name: burn
    http: {mode: download, url: "http://127.0.0.1:{{port}}/burn/100", count: 8}
  - name: upload
    http: {mode: upload, method: POST, url: "http://127.0.0.1:{{port}}/api/entry", form-field: file,
           login-url: "http://127.0.0.1:{{port}}/api/auth", login-body: passphrase=pw-1234, size: 16m, count: 6}
`})
	if _, stderr, err := iolab(t, context.Background(), "experiment", filepath.Join(dir, "plan.yaml"), "--db", db, "--json"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	out, _, err := iolab(t, context.Background(), "show", "--db", db, "--profile", "--json", "--top", "50")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Profiles []struct {
			Cell, Variant, Kind string
			Runs                int
			Top                 []struct {
				Name      string
				Flat, Cum float64
			}
			Changes []struct {
				Name     string
				BaseFlat float64 `json:"base_flat"`
				Flat     float64
			} `json:"changes_vs_baseline"`
		}
	}
	decodeInto(t, out, &r)
	if len(r.Profiles) != 4 {
		t.Fatalf("%d profiles: %s", len(r.Profiles), out)
	}
	for _, p := range r.Profiles {
		if p.Runs != 2 || p.Kind != "go_pprof" || len(p.Top) == 0 {
			t.Errorf("%s/%s: %+v", p.Variant, p.Cell, p)
			continue
		}
		if p.Cell == "burn" && (p.Top[0].Name != "main.spin" || p.Top[0].Flat < 0.5) {
			t.Errorf("%s/burn: top %+v, want main.spin first", p.Variant, p.Top[:min(3, len(p.Top))])
		}
		if p.Cell == "upload" && p.Variant == "checksum" {
			gain := 0.0
			for _, c := range p.Changes {
				if strings.Contains(c.Name, "sha256") {
					gain += c.Flat - c.BaseFlat
				}
			}
			if gain < 0.05 {
				t.Errorf("checksum/upload: SHA-256 gained %.1f%% of CPU against the baseline; changes %+v", 100*gain, p.Changes)
			}
		}
	}
	text, _, err := iolab(t, context.Background(), "show", "--db", db, "--profile")
	if err != nil || !strings.Contains(text, "main.spin") || !strings.Contains(text, "against baseline") {
		t.Errorf("text: %v\n%s", err, text)
	}
	// By cumulative share, the handler that calls spin shows above it;
	// --focus names who calls spin and what it calls; --pprof writes the
	// merged profiles as go tool pprof reads them.
	pprofBase := filepath.Join(dir, "prof.pb.gz")
	out, _, err = iolab(t, context.Background(), "show", "--db", db, "--profile", "--json", "--sort", "cum", "--focus", `^main\.spin$`, "--top", "200", "--pprof", pprofBase)
	if err != nil {
		t.Fatal(err)
	}
	out = out[strings.Index(out, "{"):] // after the lines naming the files written
	var cum struct {
		Profiles []struct {
			Cell, Variant, Sort string
			Top                 []struct {
				Name      string
				Flat, Cum float64
			}
			Focus []struct {
				Name             string
				Cum              float64
				Callers, Callees []struct {
					Name string
					Cum  float64
				}
			}
		}
	}
	decodeInto(t, out, &cum)
	for _, p := range cum.Profiles {
		if p.Cell != "burn" {
			continue
		}
		cumOf := map[string]float64{}
		for i, f := range p.Top {
			cumOf[f.Name] = f.Cum
			if i > 0 && f.Cum > p.Top[i-1].Cum {
				t.Errorf("%s/burn by cum: %s (%.3f) after %s (%.3f)", p.Variant, f.Name, f.Cum, p.Top[i-1].Name, p.Top[i-1].Cum)
			}
		}
		// The server's own stack, from net/http down to the handler, holds
		// at least the share of the function its time is spent in.
		serve := cumOf["net/http.(*conn).serve"]
		if p.Sort != "cum" || cumOf["main.spin"] < 0.5 || cumOf["main.burn"] < cumOf["main.spin"] || serve < cumOf["main.burn"] {
			t.Errorf("%s/burn by cum: net/http serve %.3f, main.burn %.3f, main.spin %.3f", p.Variant, serve, cumOf["main.burn"], cumOf["main.spin"])
		}
		if len(p.Focus) != 1 || p.Focus[0].Name != "main.spin" || len(p.Focus[0].Callers) == 0 || p.Focus[0].Callers[0].Name != "main.burn" {
			t.Errorf("%s/burn focus on main.spin: %+v", p.Variant, p.Focus)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "prof-*.pb.gz"))
	if len(files) != 4 {
		t.Fatalf("--pprof wrote %v, want 4 files (2 variants x 2 cells)", files)
	}
	for _, f := range files {
		if !strings.Contains(f, "burn") {
			continue
		}
		top, err := exec.Command("go", "tool", "pprof", "-top", f).CombinedOutput()
		if err != nil || !strings.Contains(string(top), "main.spin") {
			t.Errorf("go tool pprof -top %s: %v\n%s", f, err, top)
		}
	}
	if _, _, err := iolab(t, context.Background(), "show", "--db", db, "--profile", "--sort", "own"); err == nil || ExitCode(err) != 2 {
		t.Errorf("--sort own: %v", err)
	}
	if _, _, err := iolab(t, context.Background(), "show", "--db", db, "--focus", "x"); err == nil || ExitCode(err) != 2 {
		t.Errorf("--focus without --profile: %v", err)
	}
}

// The example in examples/fileshare runs as written, made small: one
// round of the smallest size under the larger limit, the server built by
// the test.
func TestExampleFileshareStudy(t *testing.T) {
	slow(t)
	t.Parallel()
	if err := cgroup.Check(cgroup.Limits{Memory: 256 << 20}); err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	bin, dir := fileshare(t), t.TempDir()
	text, err := os.ReadFile("../../examples/fileshare/plan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan := string(text)
	for old, repl := range map[string]string{
		"rounds: 6": "rounds: 1", "warmup: 1": "warmup: 0",
		"[1m, 8m, 32m]": "[256k]", "[64m, 256m]": "[256m]",
		"build: go build -o {{tmp}}/fileshare ./server": "build: cp " + bin + " {{tmp}}/fileshare",
	} {
		if !strings.Contains(plan, old) {
			t.Fatalf("the example no longer has %q", old)
		}
		plan = strings.ReplaceAll(plan, old, repl)
	}
	r, stderr, err := studyPlan(t, dir, plan)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if len(r.Runs) != 6 {
		t.Fatalf("%d runs, want 3 variants x 2 cells", len(r.Runs))
	}
	for _, run := range r.Runs {
		if run.Status != "ok" || run.Extra["server_rss_peak_bytes"] <= 0 || run.Extra["cgroup_memory_peak_bytes"] <= 0 {
			t.Errorf("%s/%s: %s %q %v", run.Variant, run.Cell, run.Status, run.Error, run.Extra)
		}
	}
	out, _, err := iolab(t, context.Background(), "show", "--db", filepath.Join(dir, "x.db"), "--profile")
	if err != nil || !strings.Contains(out, "checksum") {
		t.Errorf("show --profile: %v\n%s", err, out)
	}
}
