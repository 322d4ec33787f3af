// Command s3_vs_reference measures iolab's S3 client against wrk, an upper
// bound for any HTTP client, on the same local S3 server in alternation:
// GET and PUT of 1 KiB objects at concurrency 32 and of 10 MiB objects at
// concurrency 8. wrk runs twice per round: with anonymous requests to a
// bucket opened by a policy (neither side does SigV4 work), and replaying
// requests the bench signed beforehand (the server verifies signatures, as
// it does for iolab, but wrk computes none). iolab signs every request. It
// prints ops/s, the client's and the server's CPU per operation (getrusage;
// /proc sampled during the measured window), and iolab's ratio to each.
//
//	go run ./bench/s3_vs_reference [-server versitygw|minio] [-pairs 3] [-runtime 5s] [-case "get 1k"]
//
// It needs versitygw (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)
// or minio (go install github.com/minio/minio@latest), and wrk (apt-get install wrk).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	s3signer "github.com/minio/minio-go/v7/pkg/signer"

	"github.com/iolab/iolab/bench/internal/harness"
	"github.com/iolab/iolab/internal/units"
)

const (
	accessKey = "benchkey"
	secretKey = "benchsecret12345"
	bucket    = "bench"
)

type benchCase struct {
	op          string // get or put
	size        int64
	concurrency int
}

func (c benchCase) String() string {
	return fmt.Sprintf("%s %s c%d", c.op, units.FormatSize(c.size), c.concurrency)
}

var cases = []benchCase{{"get", 1 << 10, 32}, {"put", 1 << 10, 32}, {"get", 10 << 20, 8}, {"put", 10 << 20, 8}}

// tools are the clients compared on each case: wrk with anonymous
// requests (the reference: no signing on either side), wrk
// replaying requests the bench signed beforehand (the server verifies
// signatures as it does for iolab, the client does not compute them), and
// iolab signing every request.
var tools = []string{"wrk", "wrk-signed", "iolab"}

// measure is one run of a tool: ops/s, and CPU-seconds of the client and of
// the server during its measured window.
type measure struct{ ops, clientCPU, serverCPU float64 }

func main() {
	pairs := flag.Int("pairs", 3, "rounds per case; each runs every tool once, in rotating order")
	runtime := flag.Duration("runtime", 5*time.Second, "duration of each run")
	server := flag.String("server", "versitygw", "versitygw (closes every connection) or minio (keeps them alive)")
	sdk := flag.Bool("sdk-client", false, "run iolab with --sdk-client (GET and PUT through minio-go)")
	only := flag.String("case", "", "run only the cases that start with this, e.g. \"get 1k\"")
	flag.Parse()
	log.SetFlags(0)
	work, err := os.MkdirTemp("", "s3bench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)
	bin := harness.BuildIolab(work)
	endpoint, pid, stop := harness.StartS3(work, *server, accessKey, secretKey)
	defer stop()
	srv := harness.SampleCPU(pid, 20*time.Millisecond)
	defer srv.Stop()
	mc := openBucket(endpoint)
	fmt.Printf("iolab s3 vs wrk against %s at %s, %d rounds x %v; CPU from getrusage (clients) and /proc (server)\n\n",
		*server, endpoint, *pairs, *runtime)
	fmt.Println("ops/s, with client and server CPU per operation in µs (client/server); ratios are iolab's ops/s over wrk's")
	fmt.Println()
	fmt.Println("| case | wrk anonymous | wrk pre-signed | iolab | iolab/wrk | iolab/wrk pre-signed |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, c := range cases {
		if !strings.HasPrefix(c.String(), *only) {
			continue
		}
		keys := prepare(mc, c)
		sum := map[string]measure{}
		for i := 0; i < *pairs; i++ {
			for k := range tools {
				tool := tools[(i+k)%len(tools)]
				var m measure
				switch tool {
				case "wrk":
					m = runWrk(endpoint, writeScript(work, c, keys, nil), c, *runtime, srv)
				case "wrk-signed":
					m = runWrk(endpoint, writeScript(work, c, keys, signer(endpoint)), c, *runtime, srv)
				default:
					m = runIolab(bin, endpoint, c, *runtime, work, *sdk, srv)
				}
				t := sum[tool]
				sum[tool] = measure{t.ops + m.ops, t.clientCPU + m.clientCPU, t.serverCPU + m.serverCPU}
			}
		}
		cell := func(tool string) string {
			m := sum[tool]
			n := m.ops * runtime.Seconds() // operations over all rounds
			return fmt.Sprintf("%.0f (%.0f/%.0f)", m.ops/float64(*pairs), 1e6*m.clientCPU/n, 1e6*m.serverCPU/n)
		}
		fmt.Printf("| %s | %s | %s | %s | %.3f | %.3f |\n", c, cell("wrk"), cell("wrk-signed"), cell("iolab"),
			sum["iolab"].ops/sum["wrk"].ops, sum["iolab"].ops/sum["wrk-signed"].ops)
	}
}

// openBucket creates the bucket and lets anonymous clients (wrk) GET and PUT.
func openBucket(endpoint string) *minio.Client {
	mc := harness.MakeBucket(endpoint, accessKey, secretKey, bucket)
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},` +
		`"Action":["s3:GetObject","s3:PutObject"],"Resource":["arn:aws:s3:::` + bucket + `/*"]}]}`
	if err := mc.SetBucketPolicy(context.Background(), bucket, policy); err != nil {
		log.Fatalf("bucket policy: %v", err)
	}
	return mc
}

// prepare uploads the objects wrk GETs.
func prepare(mc *minio.Client, c benchCase) []string {
	n := 64
	if c.size <= 4096 {
		n = 1000
	}
	var keys []string
	body := bytes.Repeat([]byte{'x'}, int(c.size))
	for i := 0; i < n && c.op == "get"; i++ {
		key := fmt.Sprintf("wrk/%s/%d", units.FormatSize(c.size), i)
		if _, err := mc.PutObject(context.Background(), bucket, key, bytes.NewReader(body), c.size, minio.PutObjectOptions{}); err != nil {
			log.Fatal(err)
		}
		keys = append(keys, key)
	}
	return keys
}

// signer returns the SigV4 headers of a request, as iolab sends them
// (UNSIGNED-PAYLOAD); they stay valid for 15 minutes.
func signer(endpoint string) func(method, path string) map[string]string {
	return func(method, path string) map[string]string {
		req, err := http.NewRequest(method, endpoint+path, nil)
		if err != nil {
			log.Fatal(err)
		}
		req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
		req = s3signer.SignV4(*req, accessKey, secretKey, "", "us-east-1")
		h := map[string]string{}
		for _, k := range []string{"X-Amz-Date", "X-Amz-Content-Sha256", "Authorization"} {
			h[k] = req.Header.Get(k)
		}
		return h
	}
}

// putKeys is how many keys a PUT script cycles through (overwriting is
// fine); with sign, each is signed in advance.
const putKeys = 4096

// writeScript writes wrk's Lua: GET a random prepared object, or PUT a body
// of the size to a random key. With sign, each request carries headers
// signed for it beforehand.
func writeScript(work string, c benchCase, keys []string, sign func(method, path string) map[string]string) string {
	path := filepath.Join(work, c.op+units.FormatSize(c.size)+".lua")
	method := strings.ToUpper(c.op)
	if c.op == "put" {
		keys = keys[:0]
		for i := 0; i < putKeys; i++ {
			keys = append(keys, fmt.Sprintf("wrk-put/%s/%d", units.FormatSize(c.size), i))
		}
	}
	var lua strings.Builder
	lua.WriteString("local reqs = {\n")
	for _, k := range keys {
		p := "/" + bucket + "/" + k
		fmt.Fprintf(&lua, "  {%q, {", p)
		if sign != nil {
			for name, v := range sign(method, p) {
				fmt.Fprintf(&lua, "[%q] = %q, ", name, v)
			}
		}
		lua.WriteString("}},\n")
	}
	lua.WriteString("}\n")
	if c.op == "put" {
		fmt.Fprintf(&lua, "local body = string.rep(\"x\", %d)\n", c.size)
	} else {
		lua.WriteString("local body = nil\n")
	}
	// wrk.format adds Host and Content-Length to the headers table it is
	// given, so each request gets a fresh copy.
	fmt.Fprintf(&lua, `request = function()
  local r = reqs[math.random(1, #reqs)]
  local h = {}
  for k, v in pairs(r[2]) do h[k] = v end
  return wrk.format(%q, r[1], h, body)
end
`, method)
	if err := os.WriteFile(path, []byte(lua.String()), 0o644); err != nil {
		log.Fatal(err)
	}
	return path
}

var reqPerSec = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

func runWrk(endpoint, script string, c benchCase, d time.Duration, srv *harness.CPUSampler) measure {
	cmd := exec.Command("wrk", "-t2", "-c"+strconv.Itoa(c.concurrency), "-d"+d.String(), "-s", script, endpoint)
	t0 := time.Now()
	out, err := cmd.Output()
	t1 := time.Now()
	if err != nil {
		log.Fatalf("wrk: %v", err)
	}
	m := reqPerSec.FindSubmatch(out)
	if m == nil {
		log.Fatalf("wrk output: %s", out)
	}
	if bytes.Contains(out, []byte("Non-2xx")) {
		log.Fatalf("wrk got error responses: %s", out)
	}
	ops, _ := strconv.ParseFloat(string(m[1]), 64)
	return measure{ops, harness.CPUSeconds(cmd), srv.Between(t0, t1)}
}

func runIolab(bin, endpoint string, c benchCase, d time.Duration, work string, sdk bool, srv *harness.CPUSampler) measure {
	args := []string{"s3", "--endpoint", endpoint, "--bucket", bucket, "--mix", c.op, "--size", units.FormatSize(c.size),
		"--concurrency", strconv.Itoa(c.concurrency), "--runtime", d.String(), "--rounds=1", "--warmup=0", "--json",
		"--db", filepath.Join(work, "bench.db")}
	if sdk {
		args = append(args, "--sdk-client")
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+accessKey, "AWS_SECRET_ACCESS_KEY="+secretKey)
	out, err := cmd.Output()
	if err != nil {
		log.Fatalf("iolab: %v", err)
	}
	var r struct {
		Runs []struct {
			OpsPerS   float64   `json:"ops_per_s"`
			CPUS      float64   `json:"cpu_s"`
			Errors    int64     `json:"errors"`
			Start     time.Time `json:"start"`
			DurationS float64   `json:"duration_s"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Runs) != 1 {
		log.Fatalf("iolab output: %v", err)
	}
	run := r.Runs[0]
	if run.Errors > 0 {
		log.Fatalf("iolab: %d errors", run.Errors)
	}
	// The run's own CPU and the server's during it: the prepare phase and
	// object clean-up are not part of the measured operations.
	end := run.Start.Add(time.Duration(run.DurationS * float64(time.Second)))
	return measure{run.OpsPerS, run.CPUS, srv.Between(run.Start, end)}
}
