// Command s3_vs_reference measures iolab's S3 client against wrk, an upper
// bound for any HTTP client, on the same local S3 server in alternation:
// GET and PUT of 1 KiB objects at concurrency 32 and of 10 MiB objects at
// concurrency 8. wrk sends anonymous requests to a bucket opened by a
// policy, so it does no SigV4 signing; iolab signs every request. It prints
// the ops/s ratio iolab/wrk and the client CPU-seconds per operation of each.
//
//	go run ./bench/s3_vs_reference [-pairs 3] [-runtime 5s]
//
// It needs versitygw (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)
// and wrk (apt-get install wrk).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

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

var cases = []benchCase{{"get", 1 << 10, 32}, {"put", 1 << 10, 32}, {"get", 10 << 20, 8}, {"put", 10 << 20, 8}}

func main() {
	pairs := flag.Int("pairs", 3, "alternating iolab/wrk pairs per case")
	runtime := flag.Duration("runtime", 5*time.Second, "duration of each run")
	server := flag.String("server", "versitygw", "versitygw (closes every connection) or minio (keeps them alive)")
	sdk := flag.Bool("sdk-client", false, "run iolab with --sdk-client (GET and PUT through minio-go)")
	flag.Parse()
	log.SetFlags(0)
	work, err := os.MkdirTemp("", "s3bench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)
	bin := harness.BuildIolab(work)
	endpoint, stop := startServer(work, *server)
	defer stop()
	mc := openBucket(endpoint)
	fmt.Printf("iolab s3 vs wrk against %s at %s, %d pairs x %v; client CPU from getrusage\n\n", *server, endpoint, *pairs, *runtime)
	fmt.Println("| case | wrk ops/s | iolab ops/s | ratio iolab/wrk | CPU ms/op wrk | CPU ms/op iolab |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, c := range cases {
		keys := prepare(mc, c)
		script := writeScript(work, c, keys)
		var wOps, iOps, wCPU, iCPU float64
		for i := 0; i < *pairs; i++ {
			order := []string{"wrk", "iolab"}
			if i%2 == 1 {
				order = []string{"iolab", "wrk"}
			}
			for _, tool := range order {
				if tool == "wrk" {
					ops, cpu := runWrk(endpoint, script, c, *runtime)
					wOps, wCPU = wOps+ops, wCPU+cpu
				} else {
					ops, cpu := runIolab(bin, endpoint, c, *runtime, work, *sdk)
					iOps, iCPU = iOps+ops, iCPU+cpu
				}
			}
		}
		n := float64(*pairs)
		secs := runtime.Seconds()
		fmt.Printf("| %s %s c%d | %.0f | %.0f | %.3f | %.3f | %.3f |\n", c.op, units.FormatSize(c.size), c.concurrency,
			wOps/n, iOps/n, iOps/wOps, 1e3*wCPU/(wOps*secs), 1e3*iCPU/(iOps*secs))
	}
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startServer(work, name string) (string, func()) {
	bin, err := exec.LookPath(name)
	if err != nil {
		bin = filepath.Join(os.Getenv("HOME"), "go", "bin", name)
	}
	port := freePort()
	data := filepath.Join(work, "data")
	os.MkdirAll(data, 0o755)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--port", addr, "posix", data)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+accessKey, "ROOT_SECRET_KEY="+secretKey)
	if name == "minio" {
		cmd = exec.Command(bin, "server", data, "--address", addr, "--quiet")
		cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+accessKey, "MINIO_ROOT_PASSWORD="+secretKey)
	}
	if err := cmd.Start(); err != nil {
		log.Fatalf("start %s: %v", name, err)
	}
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	for i := 0; i < 200; i++ {
		if resp, err := http.Get(endpoint); err == nil {
			resp.Body.Close()
			return endpoint, func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
		}
		time.Sleep(50 * time.Millisecond)
	}
	log.Fatalf("%s did not start", name)
	return "", nil
}

// openBucket creates the bucket and lets anonymous clients (wrk) GET and PUT.
func openBucket(endpoint string) *minio.Client {
	mc, err := minio.New(endpoint[len("http://"):], &minio.Options{Creds: credentials.NewStaticV4(accessKey, secretKey, "")})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := mc.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
		log.Fatal(err)
	}
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},` +
		`"Action":["s3:GetObject","s3:PutObject"],"Resource":["arn:aws:s3:::` + bucket + `/*"]}]}`
	if err := mc.SetBucketPolicy(ctx, bucket, policy); err != nil {
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

// writeScript writes wrk's Lua: GET a random prepared object, or PUT a body
// of the size to a fresh key.
func writeScript(work string, c benchCase, keys []string) string {
	path := filepath.Join(work, c.op+units.FormatSize(c.size)+".lua")
	var lua string
	if c.op == "get" {
		lua = fmt.Sprintf("local n = %d\nrequest = function()\n  return wrk.format(\"GET\", \"/%s/wrk/%s/\" .. math.random(0, n - 1))\nend\n",
			len(keys), bucket, units.FormatSize(c.size))
	} else {
		lua = fmt.Sprintf("local body = string.rep(\"x\", %d)\nlocal i = 0\nrequest = function()\n  i = i + 1\n"+
			"  return wrk.format(\"PUT\", \"/%s/wrk-put/\" .. math.random(1, 1000000000) .. \"-\" .. i, nil, body)\nend\n", c.size, bucket)
	}
	if err := os.WriteFile(path, []byte(lua), 0o644); err != nil {
		log.Fatal(err)
	}
	return path
}

var reqPerSec = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

func runWrk(endpoint, script string, c benchCase, d time.Duration) (float64, float64) {
	cmd := exec.Command("wrk", "-t2", "-c"+strconv.Itoa(c.concurrency), "-d"+d.String(), "-s", script, endpoint)
	out, err := cmd.Output()
	if err != nil {
		log.Fatalf("wrk: %v", err)
	}
	m := reqPerSec.FindSubmatch(out)
	if m == nil {
		log.Fatalf("wrk output: %s", out)
	}
	ops, _ := strconv.ParseFloat(string(m[1]), 64)
	return ops, harness.CPUSeconds(cmd)
}

func runIolab(bin, endpoint string, c benchCase, d time.Duration, work string, sdk bool) (float64, float64) {
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
			OpsPerS float64 `json:"ops_per_s"`
			CPUS    float64 `json:"cpu_s"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Runs) != 1 {
		log.Fatalf("iolab output: %v", err)
	}
	// The run's own CPU (the prepare phase and object clean-up are not
	// part of the measured operations).
	return r.Runs[0].OpsPerS, r.Runs[0].CPUS
}
