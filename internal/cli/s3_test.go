package cli

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	gocsv "encoding/csv"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// s3Server is a real S3 server process on 127.0.0.1 for the tests.
type s3Server struct {
	name     string
	endpoint string
	dataDir  string // where the server keeps bucket contents as files
}

const (
	testAccessKey = "iolabtestkey"
	testSecretKey = "iolabtestsecret1234"
)

var (
	serversOnce sync.Once
	servers     []s3Server
)

func findTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{os.Getenv("GOBIN"), filepath.Join(os.Getenv("HOME"), "go", "bin")} {
		if p := filepath.Join(dir, name); dir != "" && fileExists(p) {
			return p
		}
	}
	return ""
}

func freeLoopbackPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// s3Servers starts every S3 server installed here once for the package's
// tests: versitygw and MinIO. In CI at least one must be present.
func s3Servers(t *testing.T) []s3Server {
	serversOnce.Do(func() {
		root, err := os.MkdirTemp("", "iolab-s3-")
		if err != nil {
			t.Fatal(err)
		}
		if bin := findTool("versitygw"); bin != "" {
			port := freeLoopbackPort(t)
			data := filepath.Join(root, "versitygw")
			os.MkdirAll(data, 0o755)
			cmd := exec.Command(bin, "--port", fmt.Sprintf("127.0.0.1:%d", port), "posix", data)
			cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+testAccessKey, "ROOT_SECRET_KEY="+testSecretKey)
			startServer(t, cmd, "versitygw", port, data)
		}
		if bin := findTool("minio"); bin != "" {
			port := freeLoopbackPort(t)
			data := filepath.Join(root, "minio")
			cmd := exec.Command(bin, "server", data, "--address", fmt.Sprintf("127.0.0.1:%d", port), "--quiet")
			cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+testAccessKey, "MINIO_ROOT_PASSWORD="+testSecretKey)
			startServer(t, cmd, "minio", port, data)
		}
	})
	if len(servers) == 0 {
		msg := "NO S3 SERVER INSTALLED: s3 tests did not run; install one: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return servers
}

func startServer(t *testing.T, cmd *exec.Cmd, name string, port int, data string) {
	if err := startDying(cmd); err != nil {
		t.Logf("%s did not start: %v", name, err)
		return
	}
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(endpoint + "/"); err == nil {
			resp.Body.Close()
			servers = append(servers, s3Server{name: name, endpoint: endpoint, dataDir: data})
			return
		}
	}
	_ = cmd.Process.Kill()
	t.Logf("%s did not answer on %s", name, endpoint)
}

func s3Run(t *testing.T, srv s3Server, args ...string) (jsonRunS3, error) {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", testAccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testSecretKey)
	all := append([]string{"s3", "--endpoint", srv.endpoint, "--rounds=1", "--warmup=0", "--json",
		"--db", filepath.Join(t.TempDir(), "x.db")}, args...)
	out, _, err := iolab(t, context.Background(), all...)
	var r jsonRunS3
	if out != "" {
		decodeInto(t, out, &r)
	}
	return r, err
}

type s3OpJSON struct {
	Ops       int64                         `json:"ops"`
	Bytes     int64                         `json:"bytes"`
	Errors    int64                         `json:"errors"`
	OpsPerS   float64                       `json:"ops_per_s"`
	BytesPerS float64                       `json:"bytes_per_s"`
	Lat       struct{ P50, P99, Max int64 } `json:"lat_ns"`
	TTFB      *struct{ P50, P99 int64 }     `json:"ttfb_ns"`
}

type jsonRunS3 struct {
	Runs []struct {
		Status string              `json:"status"`
		Errors int64               `json:"errors"`
		Ops    map[string]s3OpJSON `json:"ops"`
		Verify *struct {
			Checked, Mismatched, Missing, Unreadable int64
		} `json:"verify"`
		Extra map[string]float64 `json:"extra"`
	} `json:"runs"`
}

// TestS3Conformance runs the s3 workload against every real S3 server
// installed here.
func TestS3Conformance(t *testing.T) {
	slow(t)
	for _, srv := range s3Servers(t) {
		t.Run(srv.name, func(t *testing.T) {
			s3Contract(t, srv)
			s3SDKClient(t, srv)
			s3AllOperations(t, srv)
			s3DeleteRemoves(t, srv)
			s3ReadmeMix(t, srv)
			s3RangeGet(t, srv)
			s3SizeBuckets(t, srv)
			s3DataPatterns(t, srv)
			s3BadInput(t, srv)
			s3InPlan(t, srv)
			s3VerifyLater(t, srv)
			s3Rate(t, srv)
		})
	}
}

func s3Contract(t *testing.T, srv s3Server) {
	r, err := s3Run(t, srv, "--bucket", "contract", "--create-bucket", "--mix", "put=50,get=50", "--size", "4k",
		"--concurrency", "8", "--runtime", "1s", "--verify")
	if err != nil {
		t.Fatal(err)
	}
	run := r.Runs[0]
	put, get := run.Ops["put"], run.Ops["get"]
	if run.Status != "ok" || put.Ops == 0 || get.Ops == 0 || put.Errors != 0 || get.OpsPerS <= 0 || get.BytesPerS <= 0 ||
		put.Bytes != 4096*put.Ops || get.Lat.P50 <= 0 || get.TTFB == nil || get.TTFB.P50 <= 0 || get.TTFB.P50 > get.Lat.Max {
		t.Fatalf("contract run: %+v", run)
	}
	if v := run.Verify; v == nil || v.Checked != put.Ops || v.Mismatched != 0 || v.Missing != 0 {
		t.Fatalf("verify %+v for %d puts", run.Verify, put.Ops)
	}
	// versitygw closes every connection (one per operation); a server that
	// keeps them alive must see no churn: the pool covers the concurrency.
	conns, ok := run.Extra["connections_opened"]
	switch {
	case !ok:
		t.Fatalf("connections not counted: %v", run.Extra)
	case srv.name == "versitygw" && conns < float64(put.Ops):
		t.Fatalf("%v connections for %d puts to a server that closes each", conns, put.Ops)
	case srv.name == "minio" && conns > 16:
		t.Fatalf("%v connections opened at concurrency 8 with keep-alive", conns)
	}
}

// minio-go for GET and PUT too gives the same results.
func s3SDKClient(t *testing.T, srv s3Server) {
	r, err := s3Run(t, srv, "--bucket", "contract", "--mix", "put=1,get=1,head=1", "--size", "4k,64k",
		"--concurrency", "4", "--count", "60", "--verify", "--sdk-client", "--range-size", "1k")
	if err != nil {
		t.Fatal(err)
	}
	run := r.Runs[0]
	if run.Status != "ok" || run.Ops["get"].Ops == 0 || run.Verify.Mismatched != 0 || run.Verify.Checked != run.Ops["put"].Ops {
		t.Fatalf("sdk client: %+v", run)
	}
}

func s3AllOperations(t *testing.T, srv s3Server) {
	r, err := s3Run(t, srv, "--bucket", "allops", "--create-bucket", "--mix",
		"put=3,get=3,head=2,list=1,delete=1,copy=1,multipart=1", "--size", "6m", "--part-size", "5m",
		"--objects", "8", "--concurrency", "2", "--count", "40", "--verify")
	if err != nil {
		t.Fatal(err)
	}
	run := r.Runs[0]
	for _, op := range []string{"put", "get", "head", "list", "delete", "copy", "multipart"} {
		if s := run.Ops[op]; s.Ops == 0 || s.Errors != 0 {
			t.Errorf("%s: %+v", op, s)
		}
	}
	if run.Verify == nil || run.Verify.Mismatched != 0 || run.Verify.Missing != 0 {
		t.Errorf("verify after copy and multipart: %+v", run.Verify)
	}
}

// The README's mix: deletes never take an object that reads may still
// pick, in any run (the second run reads after the first one deleted).
func s3ReadmeMix(t *testing.T, srv s3Server) {
	r, err := s3Run(t, srv, "--bucket", "readme", "--create-bucket", "--mix", "put=20,get=60,head=10,list=5,delete=5",
		"--size", "1k-64k", "--concurrency", "8", "--runtime", "1s", "--objects", "16", "--rounds=3")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 3 {
		t.Fatalf("%d runs", len(r.Runs))
	}
	for i, run := range r.Runs {
		for _, op := range []string{"put", "get", "head", "list", "delete"} {
			if s := run.Ops[op]; s.Ops == 0 || s.Errors != 0 {
				t.Errorf("run %d: %s: %+v", i, op, s)
			}
		}
	}
}

// DELETE succeeds on keys that do not exist, so a delete that aimed at the
// wrong key would look fine: the bucket must be empty after deleting every
// prepared object.
func s3DeleteRemoves(t *testing.T, srv s3Server) {
	bucket := fmt.Sprintf("deletes-%d", time.Now().UnixNano())
	r, err := s3Run(t, srv, "--bucket", bucket, "--create-bucket", "--mix", "delete", "--size", "4k",
		"--objects", "16", "--count", "16", "--concurrency", "2", "--keep")
	if err != nil {
		t.Fatal(err)
	}
	if d := r.Runs[0].Ops["delete"]; d.Ops != 16 || d.Errors != 0 {
		t.Fatalf("deletes: %+v", d)
	}
	mc, err := minio.New(strings.TrimPrefix(srv.endpoint, "http://"),
		&minio.Options{Creds: credentials.NewStaticV4(testAccessKey, testSecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for o := range mc.ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		left = append(left, o.Key)
	}
	if len(left) != 0 {
		t.Fatalf("%d objects left after deleting all 16, e.g. %s", len(left), left[0])
	}
}

// A list of sizes gives statistics per size.
func s3SizeBuckets(t *testing.T, srv s3Server) {
	r, err := s3Run(t, srv, "--bucket", "sizes", "--create-bucket", "--mix", "put=1,get=1", "--size", "1k,16k",
		"--concurrency", "2", "--count", "60")
	if err != nil {
		t.Fatal(err)
	}
	x := r.Runs[0].Extra
	for _, key := range []string{"size.put.1k.ops_per_s", "size.put.16k.lat_p99_ns", "size.get.1k.bytes_per_s", "size.get.16k.ops_per_s"} {
		if x[key] <= 0 {
			t.Errorf("%s = %v; extra %v", key, x[key], x)
		}
	}
	total := r.Runs[0].Ops["put"].OpsPerS
	if sum := x["size.put.1k.ops_per_s"] + x["size.put.16k.ops_per_s"]; sum < total*0.999 || sum > total*1.001 {
		t.Errorf("size buckets of put add to %.1f ops/s, the operation to %.1f", sum, total)
	}
}

func s3RangeGet(t *testing.T, srv s3Server) {
	r, err := s3Run(t, srv, "--bucket", "ranges", "--create-bucket", "--mix", "get", "--size", "64k", "--range-size", "4k",
		"--objects", "4", "--concurrency", "2", "--count", "20")
	if err != nil {
		t.Fatal(err)
	}
	if g := r.Runs[0].Ops["get"]; g.Ops != 20 || g.Bytes != 20*4096 {
		t.Fatalf("range gets: %+v", g)
	}
}

// Data patterns as the server stores them: with --keep, the objects are
// files in the server's data directory.
func s3DataPatterns(t *testing.T, srv s3Server) {
	if srv.name != "versitygw" { // its posix backend keeps each object as a plain file
		return
	}
	for _, tc := range []struct {
		bucket, flag       string
		dupShare, compress [2]float64
	}{
		{"dedup", "--dedup=50", [2]float64{0.35, 0.65}, [2]float64{0.95, 1.1}},
		{"compress", "--compressible=50", [2]float64{0, 0.05}, [2]float64{0.4, 0.6}},
		{"random", "--dedup=0", [2]float64{0, 0.01}, [2]float64{0.95, 1.1}},
	} {
		bucket := fmt.Sprintf("%s-%d", tc.bucket, time.Now().UnixNano()) // its own, also when the test repeats
		_, err := s3Run(t, srv, "--bucket", bucket, "--create-bucket", "--mix", "put", "--size", "64k",
			"--concurrency", "1", "--count", "200", "--keep", tc.flag)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[[32]byte]bool{}
		dups, files := 0, 0
		var all []byte
		filepath.Walk(filepath.Join(srv.dataDir, bucket), func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() || fi.Size() != 64<<10 {
				return nil
			}
			b, _ := os.ReadFile(p)
			sum := sha256.Sum256(b)
			if seen[sum] {
				dups++
			}
			seen[sum] = true
			files++
			all = append(all, b...)
			return nil
		})
		var z bytes.Buffer
		w, _ := flate.NewWriter(&z, flate.BestSpeed)
		w.Write(all)
		w.Close()
		share, ratio := float64(dups)/float64(max(files, 1)), float64(z.Len())/float64(max(len(all), 1))
		if files != 200 || share < tc.dupShare[0] || share > tc.dupShare[1] || ratio < tc.compress[0] || ratio > tc.compress[1] {
			t.Errorf("%s: %d objects stored, %.2f duplicates, compress to %.2f", tc.flag, files, share, ratio)
		}
	}
}

func s3BadInput(t *testing.T, srv s3Server) {
	closed := fmt.Sprintf("http://127.0.0.1:%d", freeLoopbackPort(t))
	tests := []struct {
		name string
		args []string
		env  [2]string
		want string
	}{
		{"unreachable", []string{"--endpoint", closed, "--bucket", "x1y"}, [2]string{testAccessKey, testSecretKey}, "unreachable"},
		{"unreachable second", []string{"--endpoint", srv.endpoint + "," + closed, "--bucket", "contract"}, [2]string{testAccessKey, testSecretKey},
			closed + ": unreachable"},
		{"bad credentials", []string{"--endpoint", srv.endpoint, "--bucket", "contract"}, [2]string{"nobody", "wrongsecret123"}, "credentials rejected"},
		{"missing bucket", []string{"--endpoint", srv.endpoint, "--bucket", "no-such-bucket"}, [2]string{testAccessKey, testSecretKey}, "does not exist at"},
		{"bad mix", []string{"--endpoint", srv.endpoint, "--bucket", "contract", "--mix", "put=1,fly=2"}, [2]string{testAccessKey, testSecretKey}, "--mix"},
		{"bad layout", []string{"--endpoint", srv.endpoint, "--bucket", "contract", "--key-layout", "{name}/{stamp}"}, [2]string{testAccessKey, testSecretKey},
			`--key-layout "{name}/{stamp}": want prefix`},
	}
	for _, tc := range tests {
		t.Setenv("AWS_ACCESS_KEY_ID", tc.env[0])
		t.Setenv("AWS_SECRET_ACCESS_KEY", tc.env[1])
		args := append([]string{"s3", "--runtime", "1s", "--db", filepath.Join(t.TempDir(), "x.db")}, tc.args...)
		_, _, err := iolab(t, context.Background(), args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || ExitCode(err) != 2 {
			t.Errorf("%s: %v (exit %d), want one line with %q", tc.name, err, ExitCode(err), tc.want)
		}
	}
}

// The s3 workload in an experiment plan: keys are the flags of iolab s3.
func s3InPlan(t *testing.T, srv s3Server) {
	t.Setenv("AWS_ACCESS_KEY_ID", testAccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testSecretKey)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"plan.yaml": fmt.Sprintf(`rounds: 2
warmup: 0
variants:
  - name: small-pool
  - name: big-pool
workloads:
  - name: obj
    s3: {endpoint: "%s", bucket: planned, create-bucket: true, mix: "put=1,get=1", count: 20, concurrency: 2}
    matrix: {size: [1k, 8k]}
`, srv.endpoint)})
	r, err := runPlan(t, context.Background(), filepath.Join(dir, "plan.yaml"), "--db", filepath.Join(t.TempDir(), "x.db"), "--json")
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string]int{}
	for _, run := range r.Runs {
		if run.Status != "ok" {
			t.Fatalf("run %+v", run)
		}
		cells[run.Cell]++
	}
	if cells["obj size=1k"] != 4 || cells["obj size=8k"] != 4 || len(r.Comparisons) == 0 {
		t.Fatalf("cells %v, %d comparisons", cells, len(r.Comparisons))
	}
}

// Objects left with --keep are verified later from the stored manifest; a
// deleted object and a corrupted one are found.
func s3VerifyLater(t *testing.T, srv s3Server) {
	t.Setenv("AWS_ACCESS_KEY_ID", testAccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testSecretKey)
	db := filepath.Join(t.TempDir(), "x.db")
	bucket := fmt.Sprintf("later-%d", time.Now().UnixNano()) // its own, also when the test repeats
	_, _, err := iolab(t, context.Background(), "s3", "--endpoint", srv.endpoint, "--bucket", bucket, "--create-bucket",
		"--mix", "put", "--size", "16k", "--count", "30", "--concurrency", "3", "--rounds=1", "--warmup=0", "--keep",
		"--compressible=30", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := iolab(t, context.Background(), "s3", "verify", "--db", db)
	if err != nil || !strings.Contains(out, "30 objects checked, 0 differ, 0 missing") {
		t.Fatalf("verify of intact objects (%v): %s", err, out)
	}
	if srv.name != "versitygw" {
		return
	}
	// Damage the bucket behind the server's back: delete one, flip a byte of another.
	var files []string
	filepath.Walk(filepath.Join(srv.dataDir, bucket), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && fi.Size() == 16<<10 {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 30 {
		t.Fatalf("%d object files in the bucket", len(files))
	}
	os.Remove(files[0])
	b, _ := os.ReadFile(files[1])
	b[100] ^= 0xff
	os.WriteFile(files[1], b, 0o644)
	out, _, err = iolab(t, context.Background(), "s3", "verify", "--db", db)
	if err == nil || ExitCode(err) != 1 || !strings.Contains(out, "30 objects checked, 1 differ, 1 missing, 0 unreadable") {
		t.Fatalf("verify of damaged objects (%v): %s", err, out)
	}
	// What it found is the experiment's: kept, shown, judged.
	show, _, err := iolab(t, context.Background(), "show", "--db", db)
	if err != nil || !strings.Contains(show, "FAILED: of 30 objects checked by s3 verify at ") || !strings.Contains(show, "1 differ from what was written, 1 are missing and 0 could not be read") ||
		!strings.Contains(show, "30 objects checked by s3 verify at ") {
		t.Errorf("show does not say what the later checks found (%v):\n%s", err, show)
	}
	var r struct {
		Verified []struct {
			By                                       string
			Checked, Mismatched, Missing, Unreadable int64
			First                                    []string
		}
	}
	js, _, _ := iolab(t, context.Background(), "show", "--db", db, "--json")
	decodeInto(t, js, &r)
	if n := len(r.Verified); n != 2 || r.Verified[1].By != "s3 verify" || r.Verified[1].Missing != 1 || r.Verified[1].Mismatched != 1 || len(r.Verified[1].First) != 2 {
		t.Errorf("show --json: %+v", r.Verified)
	}
	if _, _, err := iolab(t, context.Background(), "show", "--db", db, "--fail-on", "verify"); ExitCode(err) != 1 || !strings.Contains(err.Error(), "s3 verify at") {
		t.Errorf("--fail-on verify of a loss found later: %v", err)
	}
	html := filepath.Join(t.TempDir(), "r.html")
	if _, _, err := iolab(t, context.Background(), "report", "--db", db, "-o", html); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(html); !strings.Contains(string(b), "s3 verify at ") || !strings.Contains(string(b), "FAILED") {
		t.Errorf("the HTML report does not show the later check")
	}
	if hist, _, err := iolab(t, context.Background(), "history", "--db", db); !strings.Contains(hist, "s3 verify at ") || !strings.Contains(hist, "1 differ, 1 missing, 0 unreadable") {
		t.Errorf("history does not say the objects were found lost (%v):\n%s", err, hist)
	}
	csv, _, _ := iolab(t, context.Background(), "show", "--db", db, "--format", "csv")
	rows, err := gocsv.NewReader(strings.NewReader(csv)).ReadAll() // as a CSV reader sees it
	if err != nil || !slices.ContainsFunc(rows, func(r []string) bool {
		return len(r) == 9 && strings.HasPrefix(r[6], "s3 verify ") && r[7] == "verify_missing" && r[8] == "1"
	}) {
		t.Errorf("the CSV export has no row of the later check (%v):\n%s", err, csv)
	}
	// A bucket lost whole is every object missing, found and kept — not
	// an error of the check.
	if err := os.RemoveAll(filepath.Join(srv.dataDir, bucket)); err != nil {
		t.Fatal(err)
	}
	out, _, err = iolab(t, context.Background(), "s3", "verify", "--db", db)
	if ExitCode(err) != 1 || !strings.Contains(out, "30 objects checked, 0 differ, 30 missing, 0 unreadable") || !strings.Contains(out, "(missing: no bucket "+bucket+")") {
		t.Fatalf("verify of a bucket lost whole (%v): %s", err, out)
	}
	js, _, _ = iolab(t, context.Background(), "show", "--db", db, "--json")
	decodeInto(t, js, &r)
	if n := len(r.Verified); n != 3 || r.Verified[2].Missing != 30 {
		t.Errorf("the lost bucket's check is not kept: %+v", r.Verified)
	}
}

// An object the server has but cannot serve whole (its answers cut short:
// a slow or broken server after a restart) is unreadable, not missing: no
// loss is claimed that was not seen.
func TestS3VerifyUnreadableIsNotMissing(t *testing.T) {
	t.Parallel()
	srv := s3Servers(t)[0]
	front := halfBodies(t, srv.endpoint)
	db := filepath.Join(t.TempDir(), "x.db")
	keys := []string{"--access-key", testAccessKey, "--secret-key", testSecretKey}
	if _, stderr, err := iolab(t, t.Context(), append([]string{"s3", "--endpoint", front, "--bucket", "unreadable", "--create-bucket",
		"--mix", "put", "--size", "4k", "--count", "6", "--rounds=1", "--warmup=0", "--keep", "--db", db}, keys...)...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	out, _, err := iolab(t, t.Context(), append([]string{"s3", "verify", "--db", db}, keys...)...)
	if ExitCode(err) != 1 || !strings.Contains(out, "6 objects checked, 0 differ, 0 missing, 6 unreadable") || !strings.Contains(out, "(unreadable: body-length)") {
		t.Fatalf("verify through a server that cuts bodies short (%v):\n%s", err, out)
	}
}

// TLS problems are named before any load, against real local servers.
func TestS3TLSErrors(t *testing.T) {
	t.Parallel()
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the rejected handshakes are the point
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	tests := []struct{ endpoint, want string }{
		{tlsSrv.URL, "TLS certificate not trusted"},
		{strings.Replace(plain.URL, "http://", "https://", 1), "does not speak TLS"},
	}
	for _, tc := range tests {
		_, _, err := iolab(t, context.Background(), "s3", "--endpoint", tc.endpoint, "--bucket", "b12", "--access-key", "k",
			"--secret-key", "s", "--runtime", "1s", "--db", filepath.Join(t.TempDir(), "x.db"))
		if err == nil || !strings.Contains(err.Error(), tc.want) || ExitCode(err) != 2 {
			t.Errorf("%s: %v, want %q", tc.endpoint, err, tc.want)
		}
	}
}

func s3Rate(t *testing.T, srv s3Server) {
	r, err := s3Run(t, srv, "--bucket", "rated", "--create-bucket", "--mix", "put", "--size", "1k",
		"--concurrency", "4", "--runtime", "1s", "--rate", "40")
	if err != nil {
		t.Fatal(err)
	}
	// Paced at 40/s for one second: never more than the schedule allows.
	if n := r.Runs[0].Ops["put"].Ops; n == 0 || n > 40+4 {
		t.Fatalf("%d puts in 1s at --rate 40", n)
	}
	if _, ok := r.Runs[0].Extra["late_starts"]; !ok {
		t.Fatal("late starts not reported")
	}
}

// tlsFront serves HTTPS (HTTP/1.1 and HTTP/2, with keep-alive) in front of
// a real S3 server and counts the requests it passes on by protocol.
func tlsFront(t *testing.T, srv s3Server) (s3Server, func() map[string]int) {
	backend, err := url.Parse(srv.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	protos := map[string]int{}
	proxy := httputil.NewSingleHostReverseProxy(backend) // keeps the Host the client signed
	front := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos[r.Proto]++
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	front.EnableHTTP2 = true
	front.StartTLS()
	t.Cleanup(front.Close)
	// taken returns the counts so far and starts new ones.
	taken := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		got := protos
		protos = map[string]int{}
		return got
	}
	return s3Server{name: srv.name + " behind TLS", endpoint: front.URL}, taken
}

// With --http2 every request reaches the server over HTTP/2; without it,
// over HTTP/1.1.
func TestS3HTTP2(t *testing.T) {
	h2srv, taken := tlsFront(t, s3Servers(t)[0])
	for _, tc := range []struct {
		flags []string
		want  string
	}{{[]string{"--http2"}, "HTTP/2.0"}, {nil, "HTTP/1.1"}} {
		taken()
		args := append([]string{"--insecure", "--bucket", "h2bucket", "--create-bucket", "--mix", "put=50,get=50",
			"--size", "4k", "--concurrency", "4", "--count", "40", "--verify"}, tc.flags...)
		r, err := s3Run(t, h2srv, args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.flags, err)
		}
		run := r.Runs[0]
		if run.Errors != 0 || run.Ops["put"].Ops == 0 || run.Ops["get"].Ops == 0 || run.Verify == nil ||
			run.Verify.Checked == 0 || run.Verify.Mismatched+run.Verify.Missing != 0 {
			t.Fatalf("%v: run %+v", tc.flags, run)
		}
		if protos := taken(); len(protos) != 1 || protos[tc.want] == 0 {
			t.Errorf("%v: requests by protocol %v, want all %s", tc.flags, protos, tc.want)
		}
	}
}

// By default the client keeps a connection per request in flight, so a
// keep-alive server sees no churn: never more connections than requests in
// flight, each with its TLS handshake. A smaller --pool runs (through
// net/http's pool) and one above the concurrency is refused.
func TestS3Pool(t *testing.T) {
	front, _ := tlsFront(t, s3Servers(t)[0])
	const concurrency, count = 16, 400
	for _, pool := range []string{"0", "2"} {
		r, err := s3Run(t, front, "--insecure", "--bucket", "poolbucket", "--create-bucket", "--mix", "get", "--size", "1k",
			"--concurrency", fmt.Sprint(concurrency), "--count", fmt.Sprint(count), "--pool", pool)
		if err != nil {
			t.Fatalf("--pool %s: %v", pool, err)
		}
		run := r.Runs[0]
		if run.Errors != 0 || run.Ops["get"].Ops != count {
			t.Fatalf("--pool %s: run %+v", pool, run)
		}
		if opened := run.Extra["connections_opened"]; pool == "0" && (opened < 1 || opened > concurrency) {
			t.Errorf("default pool: %v connections opened for %d requests in flight", opened, concurrency)
		}
	}
	_, _, err := iolab(t, context.Background(), "s3", "--endpoint", front.endpoint, "--bucket", "b12", "--concurrency", "4",
		"--pool", "5", "--runtime", "1s", "--db", filepath.Join(t.TempDir(), "x.db"))
	if err == nil || !strings.Contains(err.Error(), "--pool 5") || ExitCode(err) != 2 {
		t.Errorf("--pool above --concurrency: %v", err)
	}
}

// versitygwBin is the versitygw binary; without one the test is skipped,
// and fails in CI.
func versitygwBin(t *testing.T) string {
	t.Helper()
	bin := findTool("versitygw")
	if bin == "" {
		msg := "NO S3 SERVER INSTALLED: install versitygw (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// An S3 server that is the variant: started fresh for every run, with an
// empty data directory each time, so the workload's bucket and the objects
// its reads need must be set up after every start, not once before. The
// second variant is the same build with other runtime settings; every
// object written is read back and checked, and the server is watched.
func TestS3AgainstServerVariants(t *testing.T) {
	t.Parallel()
	bin := versitygwBin(t)
	dir := t.TempDir()
	server := fmt.Sprintf(`rm -rf {{tmp}}/data && mkdir -p {{tmp}}/data && exec %s --port 127.0.0.1:{{port}} posix {{tmp}}/data`, bin)
	writeFiles(t, dir, map[string]string{"plan.yaml": fmt.Sprintf(`rounds: 2
warmup: 1
variants:
  - &gw
    name: a
    start: %q
    ready: {tcp: "127.0.0.1:{{port}}"}
    env: {ROOT_ACCESS_KEY: %s, ROOT_SECRET_KEY: %s}
  - <<: *gw
    name: b
    env: {ROOT_ACCESS_KEY: %s, ROOT_SECRET_KEY: %s, GOMAXPROCS: "1", GOMEMLIMIT: 64MiB}
workloads:
  - name: obj
    s3: {endpoint: "http://127.0.0.1:{{port}}", bucket: fresh, create-bucket: true, access-key: %s, secret-key: %s,
         mix: "put=1,get=1,delete=1", size: 4k, count: 30, concurrency: 2, objects: 8, verify: true}
  - name: keys   # a setup step's keys, handed on in {{ids}}
    setup:
      s3: {endpoint: "http://127.0.0.1:{{port}}", bucket: seeded, create-bucket: true, access-key: %s, secret-key: %s,
           mix: put=1, size: 1k, count: 5, keep: true}
    cmd: {run: "test $(grep -c . {{ids}}) -eq 5 && test $(sort -u {{ids}} | wc -l) -eq 5"}
`, server, testAccessKey, testSecretKey, testAccessKey, testSecretKey, testAccessKey, testSecretKey, testAccessKey, testSecretKey)})
	out, _, err := iolab(t, context.Background(), "experiment", filepath.Join(dir, "plan.yaml"), "--db", filepath.Join(t.TempDir(), "x.db"), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r studyRunJSON
	decodeInto(t, out, &r)
	if len(r.Runs) != 12 {
		t.Fatalf("%d runs", len(r.Runs))
	}
	for _, run := range r.Runs {
		if run.Status != "ok" || run.Extra["server_rss_peak_bytes"] <= 0 {
			t.Fatalf("run %+v", run)
		}
		if run.Cell == "obj" && (run.Verify == nil || run.Verify.Checked == 0 || run.Verify.Mismatched != 0) {
			t.Fatalf("run %+v", run)
		}
	}
	// Every start had a port of its own: the cell's parameters say
	// {{port}}, not the port the plan was compiled with.
	for _, c := range r.Cells {
		if c.Name == "obj" && c.Params["endpoint"] != "http://127.0.0.1:{{port}}" {
			t.Errorf("%s/%s endpoint %q", c.Variant, c.Name, c.Params["endpoint"])
		}
	}
}
