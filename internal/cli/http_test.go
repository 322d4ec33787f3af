package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
)

// fileApp is a real upload service: raw PUT/POST of objects, and an API
// shaped like a file-sharing server's — log in with a shared secret, upload
// a multipart form, get an id back, download by id. Bodies stream to disk.
type fileApp struct {
	dir      string
	nextID   atomic.Int64
	mu       sync.Mutex
	formKind []string
	stored   map[string]int // raw objects by name: how often each was stored
	h2       atomic.Int64   // requests that arrived over HTTP/2
}

func newFileApp(t *testing.T) (*fileApp, *httptest.Server) {
	a := &fileApp{dir: t.TempDir()}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /obj/{i}", a.store)
	mux.HandleFunc("POST /obj/{i}", a.store)
	mux.HandleFunc("GET /obj/{i}", a.serve)
	mux.HandleFunc("GET /corrupt/{i}", func(w http.ResponseWriter, r *http.Request) {
		b, _ := os.ReadFile(filepath.Join(a.dir, "obj-"+r.PathValue("i")))
		if len(b) > 0 {
			b[len(b)/2] ^= 1
		}
		w.Write(b)
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Secret string }
		if json.NewDecoder(r.Body).Decode(&body) != nil || body.Secret != "s3cret" {
			http.Error(w, `{"error":"bad secret"}`, http.StatusUnauthorized)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "ok", Path: "/"})
		fmt.Fprint(w, `{"token":"tok123"}`)
	})
	mux.HandleFunc("POST /api/upload", a.apiUpload)
	mux.HandleFunc("GET /api/files/{id}", func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r) {
			http.Error(w, "log in", http.StatusUnauthorized)
			return
		}
		http.ServeFile(w, r, filepath.Join(a.dir, "api-"+r.PathValue("id")))
	})
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			a.h2.Add(1)
		}
		mux.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(h2c.NewHandler(handler, &http2.Server{}))
	t.Cleanup(srv.Close)
	return a, srv
}

func authorized(r *http.Request) bool {
	c, err := r.Cookie("session")
	return (err == nil && c.Value == "ok") || r.Header.Get("Authorization") == "Bearer tok123"
}

func (a *fileApp) store(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	if a.stored == nil {
		a.stored = map[string]int{}
	}
	a.stored[r.PathValue("i")]++
	a.mu.Unlock()
	f, err := os.Create(filepath.Join(a.dir, "obj-"+r.PathValue("i")))
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, r.Body); err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	w.WriteHeader(http.StatusCreated)
}

func (a *fileApp) serve(w http.ResponseWriter, r *http.Request) {
	http.ServeFile(w, r, filepath.Join(a.dir, "obj-"+r.PathValue("i")))
}

func (a *fileApp) apiUpload(w http.ResponseWriter, r *http.Request) {
	if !authorized(r) {
		http.Error(w, `{"error":"log in"}`, http.StatusUnauthorized)
		return
	}
	mr, err := r.MultipartReader()
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	id := fmt.Sprintf("f%d", a.nextID.Add(1))
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		if part.FormName() == "kind" {
			b, _ := io.ReadAll(part)
			a.mu.Lock()
			a.formKind = append(a.formKind, string(b))
			a.mu.Unlock()
			continue
		}
		f, _ := os.Create(filepath.Join(a.dir, "api-"+id))
		io.Copy(f, part)
		f.Close()
	}
	fmt.Fprintf(w, `{"data":{"id":%q}}`, id)
}

type httpRunJSON struct {
	Runs []struct {
		Cell      string                    `json:"cell"`
		Status    string                    `json:"status"`
		Errors    int64                     `json:"errors"`
		BytesPerS float64                   `json:"bytes_per_s"`
		Lat       *struct{ P50, P99 int64 } `json:"lat_ns"`
		TTFB      *struct{ P50, P99 int64 } `json:"ttfb_ns"`
		DurationS float64                   `json:"duration_s"`
		Ops       map[string]struct {
			Ops, Bytes, Errors int64
			BytesPerS          float64 `json:"bytes_per_s"`
		} `json:"ops"`
		Extra      map[string]float64                            `json:"extra"`
		Verify     *struct{ Checked, Mismatched, Missing int64 } `json:"verify"`
		ErrorCodes map[string]int64                              `json:"error_codes"`
	} `json:"runs"`
}

func httpRun(t *testing.T, args ...string) (httpRunJSON, error) {
	t.Helper()
	all := append([]string{"http"}, args...)
	all = append(all, "--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(t.TempDir(), "x.db"))
	out, _, err := iolab(t, context.Background(), all...)
	var r httpRunJSON
	if out != "" {
		decodeInto(t, out, &r)
	}
	return r, err
}

func TestHTTPUploadThenDownloadVerified(t *testing.T) {
	t.Parallel()
	_, srv := newFileApp(t)
	up, err := httpRun(t, "upload", "--url", srv.URL+"/obj/{{i}}", "--method", "PUT", "--size", "8m", "--concurrency", "2", "--count", "8")
	if err != nil {
		t.Fatal(err)
	}
	run := up.Runs[0]
	if run.Status != "ok" || run.Errors != 0 || run.BytesPerS <= 0 || run.Lat == nil || run.TTFB == nil || run.Ops["upload"].Bytes != 8*8<<20 {
		t.Fatalf("upload: %+v", run)
	}
	down, err := httpRun(t, "download", "--url", srv.URL+"/obj/{{i}}", "--size", "8m", "--count", "8", "--concurrency", "2", "--verify")
	if err != nil {
		t.Fatal(err)
	}
	run = down.Runs[0]
	if run.Ops["download"].Bytes != 8*8<<20 || run.Verify == nil || run.Verify.Checked != 8 || run.Verify.Mismatched != 0 || run.TTFB == nil {
		t.Fatalf("download: %+v", run)
	}
	// A server that returns other bytes is caught.
	bad, err := httpRun(t, "download", "--url", srv.URL+"/corrupt/{{i}}", "--size", "8m", "--count", "2", "--verify")
	if err == nil || bad.Runs[0].Verify.Mismatched != 2 || bad.Runs[0].Status != "failed" {
		t.Fatalf("corrupt download: err %v, %+v", err, bad.Runs)
	}
	// What verify found is in every report, not only in JSON.
	db := filepath.Join(t.TempDir(), "v.db")
	for _, path := range []string{"/obj/{{i}}", "/corrupt/{{i}}"} {
		iolab(t, context.Background(), "http", "download", "--url", srv.URL+path, "--size", "8m", "--count", "2", "--verify", "--rounds=1", "--warmup=0", "--db", db)
	}
	ids, _, _ := iolab(t, context.Background(), "ls", "--db", db, "--json")
	var list []struct{ ID string }
	decodeInto(t, ids, &list)
	if len(list) != 2 {
		t.Fatalf("ls: %s", ids)
	}
	good, badID := list[1].ID, list[0].ID // newest first
	for _, c := range []struct {
		id, format, want string
	}{
		{good, "text", "read back:\n  http download 8m c1: 2 objects checked in 1 run, every one as written"},
		{badID, "text", "FAILED: of 2 objects checked in 1 run, 2 differ from what was written, 0 are missing and 0 could not be read"},
		{badID, "md", "### Read back\n\n- http download 8m c1: FAILED"},
	} {
		out, _, _ := iolab(t, context.Background(), "show", c.id, "--db", db, "--format", c.format)
		if !strings.Contains(out, c.want) {
			t.Errorf("show %s --format %s lacks %q:\n%s", c.id, c.format, c.want, out)
		}
	}
	page := filepath.Join(t.TempDir(), "r.html")
	if _, _, err := iolab(t, context.Background(), "report", badID, "--db", db, "-o", page); err != nil {
		t.Fatal(err)
	}
	if html, _ := os.ReadFile(page); !strings.Contains(string(html), `<h3>Read back</h3>`) || !strings.Contains(string(html), `class="verdict-slower">FAILED</td>`) {
		t.Errorf("the HTML report does not say verify failed")
	}
}

// Three segments of an upload, then of a download: the segments take
// every third index, so the objects stored are exactly those one process
// would store, each once; the downloads, verified, find what the other
// segments' uploads stored; show merges each load into one run.
func TestHTTPSegments(t *testing.T) {
	t.Parallel()
	app, srv := newFileApp(t)
	db := filepath.Join(t.TempDir(), "x.db")
	load := func(mode, group string, extra ...string) {
		t.Helper()
		runSegments(t, 3, append([]string{"http", mode, "--url", srv.URL + "/obj/{{i}}", "--size", "64k", "--concurrency", "4", "--count", "10",
			"--rounds=1", "--warmup=0", "-q", "--db", db, "--segment-group", group, "--barrier-timeout", "60s"}, extra...)...)
	}
	load("upload", "up")
	app.mu.Lock()
	stored := maps.Clone(app.stored)
	app.mu.Unlock()
	if len(stored) != 10 {
		t.Fatalf("the segments stored %v, want objects 0 to 9 once each", stored)
	}
	for i := range 10 {
		if stored[fmt.Sprint(i)] != 1 {
			t.Fatalf("the segments stored %v, want objects 0 to 9 once each", stored)
		}
	}
	load("download", "down", "--verify")
	out, _, err := iolab(t, context.Background(), "show", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r httpRunJSON
	decodeInto(t, out, &r)
	if len(r.Runs) != 1 || r.Runs[0].Status != "ok" || r.Runs[0].Ops["download"].Ops != 10 || r.Runs[0].Ops["download"].Bytes != 10*64<<10 ||
		r.Runs[0].Extra["verify_checked"] != 10 || r.Runs[0].Extra["verify_mismatched"] != 0 {
		t.Fatalf("the merged download: %s", out)
	}
	// A segment with no worker is refused, naming what would do.
	_, _, err = iolab(t, context.Background(), "http", "upload", "--url", srv.URL+"/obj/{{i}}", "--concurrency", "2", "--count", "10",
		"--db", db, "--segment", "2/3", "--segment-group", "few")
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "--concurrency 2 over 3 segments leaves segment 2/3 no worker; give at least 3") {
		t.Fatalf("too few workers for the segments: %v", err)
	}
}

func TestHTTPLoginMultipartFormAndDownloadByID(t *testing.T) {
	t.Parallel()
	app, srv := newFileApp(t)
	r, err := httpRun(t, "upload", "--url", srv.URL+"/api/upload", "--method", "POST", "--form-field", "file",
		"--form", "kind=test", "--login-url", srv.URL+"/login", "--login-body", `{"secret":"s3cret"}`,
		"--id-from-json", "data.id", "--download-url", srv.URL+"/api/files/{{id}}", "--size", "1m", "--count", "6",
		"--concurrency", "2", "--verify")
	if err != nil {
		t.Fatal(err)
	}
	run := r.Runs[0]
	if run.Ops["upload"].Ops != 6 || run.Ops["download"].Ops != 6 || run.Ops["download"].Bytes != 6<<20 ||
		run.Verify == nil || run.Verify.Checked != 6 || run.Verify.Mismatched != 0 {
		t.Fatalf("%+v", run)
	}
	if len(app.formKind) != 6 || app.formKind[0] != "test" {
		t.Fatalf("form fields the server saw: %v", app.formKind)
	}
	// Uploads and downloads took turns: each direction's rate is over its
	// own time, so the two times add up to no more than the run.
	up, down := run.Ops["upload"], run.Ops["download"]
	if up.BytesPerS <= 0 || down.BytesPerS <= 0 {
		t.Fatalf("rates: %+v", run.Ops)
	}
	if spent := float64(up.Bytes)/up.BytesPerS + float64(down.Bytes)/down.BytesPerS; spent > 1.01*run.DurationS {
		t.Fatalf("upload and download rates imply %.3f s of a %.3f s run: each divides by the whole run", spent, run.DurationS)
	}
	// A token from the login works as well as the cookie.
	if _, err := httpRun(t, "upload", "--url", srv.URL+"/api/upload", "--method", "POST", "--form-field", "file",
		"--login-url", srv.URL+"/login", "--login-body", `{"secret":"s3cret"}`, "--login-token", "token",
		"--size", "4k", "--count", "2"); err != nil {
		t.Fatal(err)
	}
}

func TestHTTPErrorsAndRanges(t *testing.T) {
	t.Parallel()
	_, srv := newFileApp(t)
	_, err := httpRun(t, "upload", "--url", srv.URL+"/api/upload", "--method", "POST", "--form-field", "file",
		"--login-url", srv.URL+"/login", "--login-body", `{"secret":"wrong"}`, "--count", "1")
	if err == nil || !strings.Contains(err.Error(), "login refused with 401") || ExitCode(err) != 2 {
		t.Fatalf("bad login: %v", err)
	}
	// A first URL that is not there is bad input before any run; later
	// ones that are not are failed downloads, counted by their status.
	if _, err := httpRun(t, "download", "--url", srv.URL+"/obj/nope{{i}}", "--count", "3"); err == nil || ExitCode(err) != 2 ||
		!strings.Contains(err.Error(), "/obj/nope0, the first, before any run: 404 Not Found") {
		t.Fatalf("a first URL that 404s: %v", err)
	}
	if _, err := httpRun(t, "upload", "--url", srv.URL+"/obj/some{{i}}", "--size", "4k", "--count", "1"); err != nil {
		t.Fatal(err)
	}
	missing, err := httpRun(t, "download", "--url", srv.URL+"/obj/some{{i}}", "--count", "3")
	if err == nil || ExitCode(err) != 1 || missing.Runs[0].ErrorCodes["download:404"] != 2 || missing.Runs[0].Status != "failed" {
		t.Fatalf("404s: err %v %+v", err, missing.Runs)
	}
	if _, err := httpRun(t, "upload", "--url", srv.URL+"/obj/r{{i}}", "--size", "64k", "--count", "4"); err != nil {
		t.Fatal(err)
	}
	ranged, err := httpRun(t, "download", "--url", srv.URL+"/obj/r{{i}}", "--size", "64k", "--range-size", "4k", "--count", "4")
	if err != nil || ranged.Runs[0].Ops["download"].Bytes != 4*4096 {
		t.Fatalf("ranges: %v %+v", err, ranged.Runs)
	}
	// A download of what the server sends is labelled by what ran, not
	// by an upload's default size it never used.
	plain, err := httpRun(t, "download", "--url", srv.URL+"/obj/r{{i}}", "--count", "4")
	if err != nil || plain.Runs[0].Cell != "http download c1" || plain.Runs[0].Ops["download"].Bytes != 4*64<<10 {
		t.Fatalf("a download without --size: %v %+v", err, plain.Runs)
	}
	// An option of the other mode is refused by name, never ignored; and
	// each mode's help shows only its own.
	for _, c := range []struct{ mode, flag, value string }{{"download", "--method", "POST"}, {"download", "--form-field", "f"},
		{"download", "--download-url", srv.URL}, {"upload", "--range-size", "4k"}, {"upload", "--url-file", "urls.txt"}} {
		_, err := httpRun(t, c.mode, "--url", srv.URL+"/obj/r{{i}}", "--count", "1", c.flag, c.value)
		if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), c.flag+" is an option of http ") {
			t.Errorf("http %s %s: %v", c.mode, c.flag, err)
		}
		other := map[string]string{"upload": "download", "download": "upload"}[c.mode]
		help, _, _ := iolab(t, context.Background(), "http", c.mode, "--help")
		own, _, _ := iolab(t, context.Background(), "http", other, "--help")
		listed := regexp.MustCompile(`(?m)^ +` + c.flag + ` `)
		if listed.MatchString(help) || !listed.MatchString(own) {
			t.Errorf("%s shown in http %s's help, or not in %s's", c.flag, c.mode, other)
		}
	}
	if _, err := httpRun(t, "download", "--url", srv.URL+"/obj/r{{i}}", "--count", "1", "--range-size", "4k"); err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "--size") {
		t.Errorf("--range-size without the objects' size: %v", err)
	}
	for _, bad := range [][]string{{"upload", "--url", "ftp://x", "--count", "1"}, {"upload", "--url", srv.URL, "--method", "PATCH", "--count", "1"},
		{"download", "--url", srv.URL, "--count", "1", "-H", "no colon"}} {
		if _, err := httpRun(t, bad...); err == nil || ExitCode(err) != 2 {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

func TestHTTPH2C(t *testing.T) {
	t.Parallel()
	app, srv := newFileApp(t)
	if _, err := httpRun(t, "upload", "--url", srv.URL+"/obj/{{i}}", "--size", "64k", "--count", "4", "--h2c"); err != nil {
		t.Fatal(err)
	}
	if _, err := httpRun(t, "download", "--url", srv.URL+"/obj/{{i}}", "--size", "64k", "--count", "4", "--h2c", "--verify"); err != nil {
		t.Fatal(err)
	}
	// 4 uploads, the download's first byte fetched before the run, 4
	// downloads.
	if n := app.h2.Load(); n != 9 {
		t.Fatalf("%d of 9 requests arrived over HTTP/2", n)
	}
}

// An http workload in a plan, against a server variant on its {{port}}: a
// real upload server (Python) started for every run, uploads answered with
// an id, each download by id checked against what was uploaded.
func TestHTTPInPlanWithServerVariant(t *testing.T) {
	t.Parallel()
	need(t, "python3")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"server.py": `import http.server, json, os, sys
root = sys.argv[2]
ballast = b"x" * (64 << 20)  # a server that holds 64 MiB
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_PUT(self):
        sum(range(3_000_000))  # and spends CPU on every upload
        name = os.path.basename(self.path)
        n = int(self.headers["Content-Length"])
        with open(os.path.join(root, name), "wb") as f:
            while n > 0:
                b = self.rfile.read(min(n, 65536)); f.write(b); n -= len(b)
        body = json.dumps({"id": name}).encode()
        self.send_response(201); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def do_GET(self):
        p = os.path.join(root, os.path.basename(self.path))
        if not os.path.exists(p):
            self.send_error(404); return
        data = open(p, "rb").read()
        self.send_response(200); self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
`,
		"plan.yaml": `rounds: 2
warmup: 0
variants:
  - name: py
    start: exec python3 server.py {{port}} {{tmp}}
    ready: {tcp: "127.0.0.1:{{port}}"}
workloads:
  - name: roundtrip
    http: {mode: upload, url: "http://127.0.0.1:{{port}}/b{{i}}", id-from-json: id, download-url: "http://127.0.0.1:{{port}}/{{id}}", count: 3, size: 256k, verify: true}
`})
	out, _, err := iolab(t, context.Background(), "experiment", filepath.Join(dir, "plan.yaml"), "--db", filepath.Join(t.TempDir(), "x.db"), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r httpRunJSON
	decodeInto(t, out, &r)
	if len(r.Runs) != 2 {
		t.Fatalf("%d runs", len(r.Runs))
	}
	for _, run := range r.Runs {
		if run.Status != "ok" || run.Ops["upload"].Ops != 3 || run.Ops["download"].Bytes != 3*256<<10 || run.Verify == nil || run.Verify.Checked != 3 || run.Verify.Mismatched != 0 {
			t.Fatalf("run %+v", run)
		}
		// The server's process tree was watched while the workload ran.
		x := run.Extra
		if rss := x["server_rss_peak_bytes"] / (1 << 20); rss < 64 || rss > 256 || x["server_cpu_s"] < 0.05 ||
			x["server_threads_max"] < 1 || x["server_fds_max"] < 3 {
			t.Fatalf("server figures: %v", x)
		}
	}
}

// --keep-going on a single command: a failed run is recorded and the
// others still run; without it the first failure stops the experiment.
func TestKeepGoingOnSingleCommand(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if requests.Add(1) == 1 {
			http.Error(w, "first one fails", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	for _, keepGoing := range []bool{true, false} {
		requests.Store(0)
		args := []string{"http", "upload", "--url", srv.URL + "/x/{{i}}", "--size", "1k", "--count", "1",
			"--rounds", "3", "--warmup", "0", "--json", "--db", filepath.Join(t.TempDir(), "x.db")}
		if keepGoing {
			args = append(args, "--keep-going")
		}
		out, _, err := iolab(t, context.Background(), args...)
		if err == nil || ExitCode(err) != 1 {
			t.Fatalf("keep-going %v: %v, want exit 1", keepGoing, err)
		}
		var r httpRunJSON
		decodeInto(t, out, &r)
		statuses := map[string]int{}
		for _, run := range r.Runs {
			statuses[run.Status]++
		}
		want := map[string]int{"failed": 1}
		if keepGoing {
			want["ok"] = 2
		}
		if fmt.Sprint(statuses) != fmt.Sprint(want) {
			t.Errorf("keep-going %v: runs %v, want %v", keepGoing, statuses, want)
		}
	}
}

// Every run opens its own connections: none is kept warm from the run
// before, so connections_opened counts them in every run.
func TestHTTPConnectionsPerRun(t *testing.T) {
	t.Parallel()
	_, srv := newFileApp(t)
	out, _, err := iolab(t, context.Background(), "http", "upload", "--url", srv.URL+"/obj/{{i}}", "--size", "4k", "--count", "8",
		"--concurrency", "2", "--rounds", "2", "--warmup", "1", "--json", "--db", filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	var r httpRunJSON
	decodeInto(t, out, &r)
	for i, run := range r.Runs {
		if n := run.Extra["connections_opened"]; n < 1 || n > 8 {
			t.Errorf("run %d opened %v connections for 8 requests at concurrency 2", i, n)
		}
	}
}
