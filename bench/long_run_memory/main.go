// Command long_run_memory shows that a long run's memory stays flat: it runs
// one long fs job with iolab and then with fio (the reference), reads each
// process's resident memory every few seconds from /proc, fits a line to
// the samples after the first minute, and extrapolates it to 24 hours.
//
//	go run ./bench/long_run_memory -duration 10m
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/iolab/iolab/bench/internal/harness"
)

func main() { harness.Main(bench) }

func bench() {
	duration := flag.Duration("duration", 10*time.Minute, "length of each run")
	every := flag.Duration("every", 5*time.Second, "how often RSS is read")
	file := flag.String("file", "/var/tmp/iolab-long-run.dat", "the file the job reads (64 MiB, made if missing)")
	withFio := flag.Bool("fio", true, "also run fio on the same job, for reference")
	gogc := flag.String("gogc", "", "GOGC for iolab (e.g. 10: collect garbage often, so RSS shows what is retained, not what awaits collection)")
	flag.Parse()
	work := harness.WorkDir("", "iolab-long-run-")
	bin := harness.BuildIolab(work)
	job := []string{"--filename=" + *file, "--size=64m", "--rw=randread", "--bs=4k", "--numjobs=2", "--ioengine=psync",
		fmt.Sprintf("--runtime=%ds", int(duration.Seconds()))}
	runs := []struct {
		tool string
		cmd  *exec.Cmd
	}{{"iolab", exec.Command(bin, append([]string{"fs", "--rounds=1", "--warmup=0", "--db", filepath.Join(work, "x.db")}, job...)...)}}
	if *gogc != "" {
		runs[0].tool += " (GOGC=" + *gogc + ")"
		runs[0].cmd.Env = append(os.Environ(), "GOGC="+*gogc)
	}
	if *withFio {
		runs = append(runs, struct {
			tool string
			cmd  *exec.Cmd
		}{"fio", exec.Command("fio", append([]string{"--name=long", "--time_based", "--group_reporting", "--thread"}, job...)...)})
	}
	fmt.Printf("4k random reads from the page cache, psync, 2 jobs, %v per run; RSS every %v, line fitted after the first minute\n\n", *duration, *every)
	fmt.Println("| tool | RSS at 1 min MiB | RSS at end MiB | slope KiB/hour | extrapolated to 24 h MiB |")
	fmt.Println("|---|---|---|---|---|")
	for _, r := range runs {
		xs, ys := sample(r.cmd, *every)
		if len(xs) < 3 {
			harness.Fatalf("%s: only %d samples after the first minute; run longer", r.tool, len(xs))
		}
		intercept, slope := stat.LinearRegression(xs, ys, nil, false) // MiB and MiB per second
		fmt.Printf("| %s | %.1f | %.1f | %.0f | %.1f |\n", r.tool, ys[0], ys[len(ys)-1], slope*3600*1024, intercept+slope*24*3600)
	}
}

// sample runs cmd and reads its RSS (MiB) every `every`, keeping the
// samples after the first minute as (seconds since start, MiB).
func sample(cmd *exec.Cmd, every time.Duration) (xs, ys []float64) {
	cmd.Stdout, cmd.Stderr = nil, os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		harness.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				harness.Fatalf("%s: %v", cmd.Path, err)
			}
			return xs, ys
		case <-tick.C:
			if t := time.Since(start); t >= time.Minute {
				if mib, ok := rssMiB(cmd.Process.Pid); ok {
					xs, ys = append(xs, t.Seconds()), append(ys, mib)
				}
			}
		}
	}
}

func rssMiB(pid int) (float64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kib, _ := strconv.ParseFloat(f[1], 64)
			return kib / 1024, true
		}
	}
	return 0, false
}
