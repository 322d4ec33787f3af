// Command s3_vs_reference measures iolab's S3 client against wrk, an upper
// bound for any HTTP client, on the same local S3 server in alternation, on
// the cases -cases names (default: GET and PUT of 1 KiB objects at
// concurrency 32, of 10 MiB at 8, PUT of 1 MiB at 8). wrk runs twice per
// round: with anonymous requests to a bucket opened by a policy (neither
// side does SigV4 work), and replaying requests the bench signed beforehand
// (the server verifies signatures, as it does for iolab, but wrk computes
// none). iolab signs every request. It prints ops/s, the client's and the
// server's CPU per operation, and iolab's ratios to each: ops/s over all
// rounds, CPU per operation as the median of the rounds' ratios with its
// 95% interval (a round's ratio moves by half from one to the next).
//
// CPU is compared on the same basis for every tool: the client's CPU in its
// run window (the last -runtime of wrk's life, which is its run; iolab's
// run from the start and duration its JSON gives), read from /proc every
// 20 ms and from getrusage at exit; the whole process's (start-up, iolab's
// prepare and clean-up included) per measured operation is printed beside
// it. The server's CPU is /proc's, in the same windows.
//
// It measures each server of -server in turn (default both: versitygw,
// which closes every connection, then MinIO, which keeps them alive),
// each started for its cases and stopped after them.
//
//	go run ./bench/s3_vs_reference [-server versitygw,minio] [-client auto|loop|conn|sdk] [-port N] [-iolab PATH] [-pairs 6] [-runtime 5s]
//	    [-cases "get 1k c32,put 1k c32,get 10m c8,put 10m c8,put 1m c8"]
//
// It needs wrk (apt-get install wrk) and versitygw (go install
// github.com/versity/versitygw/cmd/versitygw@v1.8.0) or minio (go install
// github.com/minio/minio@latest); a server not installed is skipped, and
// the bench says how to install it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
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

const defaultCases = "get 1k c32,put 1k c32,get 10m c8,put 10m c8,put 1m c8"

// parseCases reads -cases: comma-separated "OP SIZE cN".
func parseCases(text string) ([]benchCase, error) {
	var cs []benchCase
	for _, f := range strings.Split(text, ",") {
		w := strings.Fields(f)
		if len(w) != 3 || (w[0] != "get" && w[0] != "put") || !strings.HasPrefix(w[2], "c") {
			return nil, fmt.Errorf("-cases: %q is not OP SIZE cN (OP get or put, e.g. \"get 1k c32\")", strings.TrimSpace(f))
		}
		size, err := units.ParseSize(w[1])
		if err != nil || size <= 0 {
			return nil, fmt.Errorf("-cases: %q: size %q: want a size such as 1k or 10m", strings.TrimSpace(f), w[1])
		}
		n, err := strconv.Atoi(w[2][1:])
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-cases: %q: concurrency %q: want c and a count, e.g. c32", strings.TrimSpace(f), w[2])
		}
		cs = append(cs, benchCase{w[0], size, n})
	}
	return cs, nil
}

// tools are the clients compared on each case: wrk with anonymous
// requests (the reference: no signing on either side), wrk
// replaying requests the bench signed beforehand (the server verifies
// signatures as it does for iolab, the client does not compute them), and
// iolab signing every request.
var tools = []string{"wrk", "wrk-signed", "iolab"}

// measure is one run of a tool: ops/s; CPU-seconds of the client and of
// the server during its run window, and of the client's whole process.
type measure struct{ ops, clientCPU, serverCPU, clientWhole float64 }

func (m measure) plus(o measure) measure {
	return measure{m.ops + o.ops, m.clientCPU + o.clientCPU, m.serverCPU + o.serverCPU, m.clientWhole + o.clientWhole}
}

func main() { harness.Main(bench) }

func bench() {
	pairs := flag.Int("pairs", 6, "rounds per case; each runs every tool once, in rotating order (6 or more give the CPU ratios a 95% interval)")
	runtime := flag.Duration("runtime", 5*time.Second, "duration of each run")
	servers := flag.String("server", "versitygw,minio", "the S3 servers, comma-separated, each measured in turn: versitygw (closes every connection), minio (keeps them alive); one not installed is skipped, saying how to install it")
	client := flag.String("client", "auto", "iolab's --client: auto, loop (event loops), conn (a goroutine and connection per worker) or sdk (minio-go)")
	caseList := flag.String("cases", defaultCases, "the cases, comma-separated: OP SIZE cN (OP get or put, N the concurrency)")
	port := flag.Int("port", 0, "the S3 server's loopback port (0: a free one)")
	iolabBin := flag.String("iolab", "", "iolab binary (default: build ./cmd/iolab)")
	flag.Parse()
	cases, err := parseCases(*caseList)
	if err != nil {
		harness.Fatal(err)
	}
	names := strings.Split(*servers, ",")
	for _, name := range names {
		if harness.S3Install[name] == "" {
			harness.Fatalf("-server: %q is not versitygw or minio", name)
		}
	}
	work := harness.WorkDir("", "s3bench-")
	bin := *iolabBin
	if bin == "" {
		bin = harness.BuildIolab(work)
	}
	for _, name := range names {
		if harness.S3Binary(name) == "" {
			fmt.Printf("%s is not installed, so not measured: %s\n\n", name, harness.S3Install[name])
			continue
		}
		against(name, bin, work, cases, *pairs, *runtime, *client, *port)
	}
}

// against measures the cases against one S3 server, started for them and
// stopped after them, and prints their table.
func against(server, bin, work string, cases []benchCase, pairs int, runtime time.Duration, client string, port int) {
	endpoint, pid, stop := harness.StartS3(work, server, port, accessKey, secretKey)
	defer stop()
	srv := harness.SampleCPU(pid, 20*time.Millisecond)
	defer srv.Stop()
	mc := openBucket(endpoint)
	fmt.Printf("iolab s3 vs wrk against %s at %s, %d rounds x %v\n\n", server, endpoint, pairs, runtime)
	fmt.Println("ops/s, with client and server CPU per operation in µs in each run's window (client/server) and the client's")
	fmt.Println("whole process per measured operation; ratios are iolab's over wrk's (ops/s, then client CPU per operation)")
	fmt.Println()
	fmt.Println("the CPU ratios in a window are the median of the rounds' ratios with its 95% interval (6 rounds or more)")
	fmt.Println()
	fmt.Println("| case | wrk anonymous | wrk pre-signed | iolab | iolab/wrk ops/s | iolab/wrk pre-signed ops/s | iolab/wrk CPU/op, window | iolab/wrk pre-signed CPU/op, window | whole process (wrk anonymous) |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, c := range cases {
		keys := prepare(mc, c)
		sum := map[string]measure{}
		var anonRatios, signedRatios []float64 // iolab's CPU per operation over wrk's, by round
		for i := 0; i < pairs; i++ {
			round := map[string]measure{}
			for k := range tools {
				tool := tools[(i+k)%len(tools)]
				var m measure
				switch tool {
				case "wrk":
					m = runWrk(endpoint, writeScript(work, c, keys, nil), c, runtime, srv)
				case "wrk-signed":
					m = runWrk(endpoint, writeScript(work, c, keys, signer(endpoint)), c, runtime, srv)
				default:
					m = runIolab(bin, endpoint, c, runtime, work, client, srv)
				}
				sum[tool] = sum[tool].plus(m)
				round[tool] = m
			}
			cpuPerOp := func(tool string) float64 { return round[tool].clientCPU / round[tool].ops }
			anonRatios = append(anonRatios, cpuPerOp("iolab")/cpuPerOp("wrk"))
			signedRatios = append(signedRatios, cpuPerOp("iolab")/cpuPerOp("wrk-signed"))
		}
		n := func(tool string) float64 { return sum[tool].ops * runtime.Seconds() } // operations over all rounds
		perOp := func(tool string) float64 { return sum[tool].clientCPU / n(tool) }
		wholePerOp := func(tool string) float64 { return sum[tool].clientWhole / n(tool) }
		cell := func(tool string) string {
			m := sum[tool]
			return fmt.Sprintf("%.0f (%.0f/%.0f; %.0f)", m.ops/float64(pairs), 1e6*perOp(tool), 1e6*m.serverCPU/n(tool), 1e6*wholePerOp(tool))
		}
		fmt.Printf("| %s | %s | %s | %s | %.3f | %.3f | %s | %s | %.3f |\n", c, cell("wrk"), cell("wrk-signed"), cell("iolab"),
			sum["iolab"].ops/sum["wrk"].ops, sum["iolab"].ops/sum["wrk-signed"].ops, harness.MedianRatio(anonRatios), harness.MedianRatio(signedRatios),
			wholePerOp("iolab")/wholePerOp("wrk"))
	}
	fmt.Println()
}

// openBucket creates the bucket and lets anonymous clients (wrk) GET and PUT.
func openBucket(endpoint string) *minio.Client {
	mc := harness.MakeBucket(endpoint, accessKey, secretKey, bucket)
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},` +
		`"Action":["s3:GetObject","s3:PutObject"],"Resource":["arn:aws:s3:::` + bucket + `/*"]}]}`
	if err := mc.SetBucketPolicy(context.Background(), bucket, policy); err != nil {
		harness.Fatalf("bucket policy: %v", err)
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
			harness.Fatal(err)
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
			harness.Fatal(err)
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
// of the size to a new key (anonymous) or a random one of putKeys (signed:
// each request carries headers signed for it beforehand).
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
	if c.op == "put" && sign == nil {
		// Anonymous PUTs make a new object each, as iolab's do: a
		// server's work differs between creating an object and
		// overwriting one (versitygw: 626 against 518 µs of CPU a 1 KiB
		// PUT). Each thread numbers its own, under an id setup gives it
		// (the run's start, in seconds, and the thread's number).
		fmt.Fprintf(&lua, `local threads = 0
setup = function(thread)
  threads = threads + 1
  thread:set("id", os.time() .. "-" .. threads)
end
local n = 0
request = function()
  n = n + 1
  return wrk.format(%q, "/%s/wrk-put/%s/" .. id .. "-" .. n, {}, body)
end
`, method, bucket, units.FormatSize(c.size))
		if err := os.WriteFile(path, []byte(lua.String()), 0o644); err != nil {
			harness.Fatal(err)
		}
		return path
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
		harness.Fatal(err)
	}
	return path
}

var reqPerSec = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

// cpuInterval is how often a client's and the server's CPU are read.
const cpuInterval = 20 * time.Millisecond

func runWrk(endpoint, script string, c benchCase, d time.Duration, srv *harness.CPUSampler) measure {
	cmd := exec.Command("wrk", "-t2", "-c"+strconv.Itoa(c.concurrency), "-d"+d.String(), "-s", script, endpoint)
	out, cpu, err := harness.Measured(cmd, cpuInterval)
	t1 := time.Now()
	if err != nil {
		harness.Fatalf("wrk: %v", err)
	}
	m := reqPerSec.FindSubmatch(out)
	if m == nil {
		harness.Fatalf("wrk output: %s", out)
	}
	if bytes.Contains(out, []byte("Non-2xx")) {
		harness.Fatalf("wrk got error responses: %s", out)
	}
	ops, _ := strconv.ParseFloat(string(m[1]), 64)
	// wrk runs for -d once its threads are up: its run is the last d of
	// its life.
	t0 := t1.Add(-d)
	return measure{ops, cpu.Between(t0, t1), srv.Between(t0, t1), harness.CPUSeconds(cmd)}
}

func runIolab(bin, endpoint string, c benchCase, d time.Duration, work, client string, srv *harness.CPUSampler) measure {
	args := []string{"s3", "--endpoint", endpoint, "--bucket", bucket, "--mix", c.op, "--size", units.FormatSize(c.size),
		"--concurrency", strconv.Itoa(c.concurrency), "--runtime", d.String(), "--rounds=1", "--warmup=0", "--json",
		"--db", filepath.Join(work, "bench.db"), "--client", client}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+accessKey, "AWS_SECRET_ACCESS_KEY="+secretKey)
	out, cpu, err := harness.Measured(cmd, cpuInterval)
	if err != nil {
		harness.Fatalf("iolab: %v", err)
	}
	var r struct {
		Runs []struct {
			OpsPerS   float64   `json:"ops_per_s"`
			Errors    int64     `json:"errors"`
			Start     time.Time `json:"start"`
			DurationS float64   `json:"duration_s"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Runs) != 1 {
		harness.Fatalf("iolab output: %v", err)
	}
	run := r.Runs[0]
	if run.Errors > 0 {
		harness.Fatalf("iolab: %d errors", run.Errors)
	}
	// The run's window: the prepare phase and object clean-up are not
	// part of the measured operations.
	end := run.Start.Add(time.Duration(run.DurationS * float64(time.Second)))
	return measure{run.OpsPerS, cpu.Between(run.Start, end), srv.Between(run.Start, end), harness.CPUSeconds(cmd)}
}
