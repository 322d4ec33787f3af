// Command check_reads measures what --check-reads costs the s3 workload's
// fast path: GETs of one size against the same local S3 server with the
// check off and on, in alternating pairs, printing the median ratio of
// their throughputs (on/off) and of their client CPU per operation, and
// the CPU the check adds per MiB read.
//
//	go run ./bench/check_reads [-server versitygw|minio] [-sizes 4k,64k,1m] [-pairs 6] [-runtime 5s] [-concurrency 8]
//
// It needs versitygw or minio (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/iolab/iolab/bench/internal/harness"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/units"
)

const (
	accessKey = "benchkey"
	secretKey = "benchsecret12345"
	bucket    = "checkreads"
)

// run is what one iolab run measured.
type run struct {
	opsPerS, cpuPerOpUs float64
}

func main() { harness.Main(bench) }

func bench() {
	server := flag.String("server", "versitygw", "versitygw or minio")
	sizes := flag.String("sizes", "4k,64k,1m", "object sizes, each measured apart")
	pairs := flag.Int("pairs", 6, "alternating pairs of runs (off, on) per size")
	runtime := flag.String("runtime", "5s", "runtime of each run")
	concurrency := flag.Int("concurrency", 8, "GETs in flight")
	port := flag.Int("port", 0, "the S3 server's loopback port (0: a free one)")
	flag.Parse()
	work := harness.WorkDir("", "checkreads-")
	bin := harness.BuildIolab(work)
	endpoint, _, stop := harness.StartS3(work, *server, *port, accessKey, secretKey)
	defer stop()
	harness.MakeBucket(endpoint, accessKey, secretKey, bucket)
	fmt.Printf("s3 GET on %s, %d in flight, %s runs, %d alternating pairs (check off, on)\n", *server, *concurrency, *runtime, *pairs)
	fmt.Printf("%-6s %12s %12s %16s %16s %14s\n", "size", "off ops/s", "on ops/s", "ratio ops/s", "ratio CPU/op", "CPU µs/MiB")
	for _, sz := range strings.Split(*sizes, ",") {
		size, err := units.ParseSize(sz)
		if err != nil {
			stop()
			harness.Fatalf("-sizes %s: %v", sz, err)
		}
		var thr, cpu, added, offOps, onOps []float64
		for p := 0; p < *pairs; p++ {
			var off, on run
			if p%2 == 0 { // the other order every other pair
				off = measure(bin, work, endpoint, sz, *runtime, *concurrency, false)
				on = measure(bin, work, endpoint, sz, *runtime, *concurrency, true)
			} else {
				on = measure(bin, work, endpoint, sz, *runtime, *concurrency, true)
				off = measure(bin, work, endpoint, sz, *runtime, *concurrency, false)
			}
			thr = append(thr, on.opsPerS/off.opsPerS)
			cpu = append(cpu, on.cpuPerOpUs/off.cpuPerOpUs)
			added = append(added, (on.cpuPerOpUs-off.cpuPerOpUs)/(float64(size)/(1<<20)))
			offOps, onOps = append(offOps, off.opsPerS), append(onOps, on.opsPerS)
		}
		fmt.Printf("%-6s %12.0f %12.0f %16s %16s %14.1f\n", sz, stats.Summarize(offOps).Median, stats.Summarize(onOps).Median,
			harness.MedianRatio(thr), harness.MedianRatio(cpu), stats.Summarize(added).Median)
	}
}

// measure runs iolab's GETs once and reads its JSON.
func measure(bin, work, endpoint, size, runtime string, concurrency int, check bool) run {
	cmd := exec.Command(bin, "s3", "--endpoint", endpoint, "--bucket", bucket, "--mix", "get", "--size", size,
		"--concurrency", fmt.Sprint(concurrency), "--runtime", runtime, "--rounds", "1", "--warmup", "0",
		fmt.Sprintf("--check-reads=%v", check), "--db", work+"/bench.db", "--json")
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+accessKey, "AWS_SECRET_ACCESS_KEY="+secretKey)
	cmd.Stderr = os.Stderr
	out, err := harness.Output(cmd)
	if err != nil {
		harness.Fatalf("iolab s3: %v", err)
	}
	var r struct {
		Runs []struct {
			Status    string  `json:"status"`
			DurationS float64 `json:"duration_s"`
			CPUS      float64 `json:"cpu_s"`
			OpsPerS   float64 `json:"ops_per_s"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Runs) != 1 || r.Runs[0].Status != "ok" {
		harness.Fatalf("iolab s3: %v\n%s", err, out)
	}
	x := r.Runs[0]
	return run{opsPerS: x.OpsPerS, cpuPerOpUs: 1e6 * x.CPUS / (x.OpsPerS * x.DurationS)}
}
