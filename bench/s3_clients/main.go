// Command s3_clients compares the client CPU that iolab and the S3 clients
// Debian packages — rclone, s3cmd, awscli — spend per 1 KiB object, for GET
// and PUT, against the same local S3 server.
//
//	go run ./bench/s3_clients [-server versitygw|minio] [-reps 3] [-n 500]
//
// Each client moves n objects and n/5 objects in one invocation; the
// difference of the two runs' CPU over the difference of their object
// counts is the CPU per object, without start-up (an interpreter's import
// time would otherwise dominate). iolab, rclone and awscli run 32 requests
// at a time; s3cmd has no concurrency. Clients write GETs to local files
// where they must (s3cmd, awscli: a tmpfs-like page-cache write of 1 KiB),
// rclone hashes them (md5sum --download), iolab discards them.
//
// It needs rclone, s3cmd (apt-get install rclone s3cmd), aws (awscli), and
// versitygw or minio.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/iolab/iolab/bench/internal/harness"
)

const (
	accessKey = "benchkey"
	secretKey = "benchsecret12345"
	bucket    = "clients"
	size      = 1 << 10
)

// client runs one invocation that moves the objects under prefix (get), or
// uploads the files in dir to prefix (put), and returns its CPU-seconds.
type client struct {
	name string
	get  func(prefix string, n int) *exec.Cmd
	put  func(dir, prefix string, n int) *exec.Cmd
}

func main() { harness.Main(bench) }

func bench() {
	server := flag.String("server", "versitygw", "versitygw or minio")
	reps := flag.Int("reps", 3, "repetitions of each measurement; the median is printed")
	n := flag.Int("n", 500, "objects in the large run (the small one has n/5)")
	port := flag.Int("port", 0, "the S3 server's loopback port (0: a free one)")
	flag.Parse()
	work := harness.WorkDir("", "s3clients-")
	bin := harness.BuildIolab(work)
	endpoint, _, stop := harness.StartS3(work, *server, *port, accessKey, secretKey)
	defer stop()
	mc := harness.MakeBucket(endpoint, accessKey, secretKey, bucket)
	clients := setUp(work, endpoint, bin)
	small := *n / 5
	counts := []int{small, *n}
	for _, c := range counts { // objects to GET, and files to PUT
		srcDir := filepath.Join(work, "src", strconv.Itoa(c))
		os.MkdirAll(srcDir, 0o755)
		for i := 0; i < c; i++ {
			name := fmt.Sprintf("obj-%05d", i)
			body := make([]byte, size)
			copy(body, name)
			if err := os.WriteFile(filepath.Join(srcDir, name), body, 0o644); err != nil {
				harness.Fatal(err)
			}
			if _, err := mc.FPutObject(context.Background(), bucket, fmt.Sprintf("get/%d/%s", c, name), filepath.Join(srcDir, name),
				minio.PutObjectOptions{}); err != nil {
				harness.Fatal(err)
			}
		}
	}
	fmt.Printf("client CPU per 1 KiB object (µs), %s at %s; marginal over %d and %d objects, median of %d\n\n",
		*server, endpoint, small, *n, *reps)
	fmt.Println("| client | GET | PUT |")
	fmt.Println("|---|---|---|")
	seq := 0
	for _, cl := range clients {
		var perOp [2][]float64
		for r := 0; r < *reps; r++ {
			for op := 0; op < 2; op++ {
				var cpu [2]float64
				for k, c := range counts {
					seq++
					var cmd *exec.Cmd
					if op == 0 {
						cmd = cl.get(fmt.Sprintf("get/%d/", c), c)
					} else {
						cmd = cl.put(filepath.Join(work, "src", strconv.Itoa(c)), fmt.Sprintf("put/%s/%d/", cl.name, seq), c)
					}
					cpu[k] = run(cl.name, cmd)
				}
				perOp[op] = append(perOp[op], 1e6*(cpu[1]-cpu[0])/float64(*n-small))
			}
		}
		fmt.Printf("| %s | %.0f | %.0f |\n", cl.name, median(perOp[0]), median(perOp[1]))
	}
}

func setUp(work, endpoint, bin string) []client {
	host := strings.TrimPrefix(endpoint, "http://")
	env := append(baseEnv(), "AWS_ACCESS_KEY_ID="+accessKey, "AWS_SECRET_ACCESS_KEY="+secretKey, "AWS_DEFAULT_REGION=us-east-1")
	// rclone: a remote named "bench" from the environment.
	rcloneEnv := append(baseEnv(), "RCLONE_CONFIG_BENCH_TYPE=s3", "RCLONE_CONFIG_BENCH_PROVIDER=Other",
		"RCLONE_CONFIG_BENCH_ACCESS_KEY_ID="+accessKey, "RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY="+secretKey,
		"RCLONE_CONFIG_BENCH_ENDPOINT="+endpoint, "RCLONE_CONFIG_BENCH_FORCE_PATH_STYLE=true", "RCLONE_CONFIG=/dev/null")
	s3cfg := filepath.Join(work, "s3cfg")
	must(os.WriteFile(s3cfg, []byte(fmt.Sprintf("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = %s\nhost_bucket = %s\n"+
		"use_https = False\nsignature_v2 = False\nbucket_location = us-east-1\n", accessKey, secretKey, host, host)), 0o600))
	awsCfg := filepath.Join(work, "awsconfig")
	must(os.WriteFile(awsCfg, []byte("[default]\ns3 =\n  max_concurrent_requests = 32\n"), 0o600))
	awsEnv := append(env, "AWS_CONFIG_FILE="+awsCfg)
	dst := func() string {
		d, err := os.MkdirTemp(work, "dst-")
		must(err)
		return d
	}
	with := func(cmd *exec.Cmd, env []string) *exec.Cmd { cmd.Env = env; return cmd }
	return []client{
		{name: "iolab",
			get: func(prefix string, n int) *exec.Cmd {
				return with(exec.Command(bin, "s3", "--endpoint", endpoint, "--bucket", bucket, "--mix", "get", "--size", "1k",
					"--objects", "64", "--count", strconv.Itoa(n), "--concurrency", "32", "--rounds=1", "--warmup=0", "--json",
					"--db", filepath.Join(work, "iolab.db")), env)
			},
			put: func(dir, prefix string, n int) *exec.Cmd {
				return with(exec.Command(bin, "s3", "--endpoint", endpoint, "--bucket", bucket, "--mix", "put", "--size", "1k",
					"--count", strconv.Itoa(n), "--concurrency", "32", "--rounds=1", "--warmup=0", "--keep", "--json",
					"--db", filepath.Join(work, "iolab.db")), env)
			}},
		{name: "rclone " + version("rclone", "version"),
			get: func(prefix string, n int) *exec.Cmd {
				return with(exec.Command("rclone", "md5sum", "--download", "--checkers", "32", "bench:"+bucket+"/"+prefix), rcloneEnv)
			},
			put: func(dir, prefix string, n int) *exec.Cmd {
				return with(exec.Command("rclone", "copy", "--transfers", "32", "--checkers", "32", "--no-check-dest",
					"--s3-no-check-bucket", dir, "bench:"+bucket+"/"+prefix), rcloneEnv)
			}},
		{name: "s3cmd " + version("s3cmd", "--version"),
			get: func(prefix string, n int) *exec.Cmd {
				return with(exec.Command("s3cmd", "-c", s3cfg, "--quiet", "get", "--recursive", "s3://"+bucket+"/"+prefix, dst()+"/"), baseEnv())
			},
			put: func(dir, prefix string, n int) *exec.Cmd {
				return with(exec.Command("s3cmd", "-c", s3cfg, "--quiet", "put", "--recursive", dir+"/", "s3://"+bucket+"/"+prefix), baseEnv())
			}},
		{name: "awscli " + version("aws", "--version"),
			get: func(prefix string, n int) *exec.Cmd {
				return with(exec.Command("aws", "--endpoint-url", endpoint, "s3", "cp", "--recursive", "--quiet",
					"s3://"+bucket+"/"+prefix, dst()), awsEnv)
			},
			put: func(dir, prefix string, n int) *exec.Cmd {
				return with(exec.Command("aws", "--endpoint-url", endpoint, "s3", "cp", "--recursive", "--quiet",
					dir, "s3://"+bucket+"/"+prefix), awsEnv)
			}},
	}
}

// baseEnv is this process's environment without settings that would point
// a client at a CA bundle (the server is plain HTTP on loopback; rclone's
// SDK refuses AWS_CA_BUNDLE with its own transport).
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_CA_BUNDLE=") {
			env = append(env, kv)
		}
	}
	return env
}

// version returns the first word that looks like a version in a tool's
// version output.
func version(tool, flag string) string {
	out, _ := harness.CombinedOutput(exec.Command(tool, flag))
	for _, f := range strings.Fields(string(out)) {
		f = strings.TrimPrefix(strings.TrimPrefix(f, "aws-cli/"), "v")
		if len(f) > 0 && f[0] >= '0' && f[0] <= '9' && strings.Contains(f, ".") {
			return f
		}
	}
	return "?"
}

// run runs cmd and returns its CPU-seconds; a failed client stops the bench.
func run(name string, cmd *exec.Cmd) float64 {
	out, err := harness.CombinedOutput(cmd)
	if err != nil {
		harness.Fatalf("%s: %v\n%s", name, err, out)
	}
	if strings.HasPrefix(name, "iolab") {
		var r struct {
			Runs []struct{ Errors int64 } `json:"runs"`
		}
		if err := json.Unmarshal(out, &r); err != nil || len(r.Runs) != 1 || r.Runs[0].Errors > 0 {
			harness.Fatalf("iolab: %v, output %s", err, out)
		}
	}
	return harness.CPUSeconds(cmd)
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

func must(err error) {
	if err != nil {
		harness.Fatal(err)
	}
}
