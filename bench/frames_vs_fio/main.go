// Command frames_vs_fio writes video frames with iolab frames and the
// equivalent fio job (one file per frame: --nrfiles frames of --filesize
// each, written whole, 2 jobs), in alternation on the same directory, and
// prints the MiB/s ratio iolab/fio for an HD-24bit and a 4K-24bit profile.
//
//	go run ./bench/frames_vs_fio [-dir /var/tmp] [-frames 60] [-pairs 6]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/iolab/iolab/bench/internal/harness"
	"github.com/iolab/iolab/internal/workload/frames"
)

func main() { harness.Main(bench) }

func bench() {
	dir := flag.String("dir", "/var/tmp", "directory on the storage under test")
	n := flag.Int("frames", 60, "frames per run")
	pairs := flag.Int("pairs", 6, "alternating pairs per profile (6 or more give a 95% CI of the median ratio)")
	direct := flag.Bool("direct", true, "O_DIRECT on both sides")
	flag.Parse()
	work := harness.WorkDir(*dir, "framesbench-")
	bin := harness.BuildIolab(work)
	d := "0"
	if *direct {
		d = "1"
	}
	fmt.Printf("%d frames per run, 2 threads/jobs, direct=%s, %d pairs, in %s\n\n", *n, d, *pairs, work)
	fmt.Println("| profile | frame bytes | fio MiB/s | iolab MiB/s | ratio iolab/fio: median [95% CI] |")
	fmt.Println("|---|---|---|---|---|")
	for _, name := range []string{"FULLHD-24bit", "4K-DCI-24bit"} {
		p, _ := frames.LookupProfile(name)
		var f, i float64
		var ratios []float64 // of each pair
		for k := 0; k < *pairs; k++ {
			var pf, pi float64
			for _, fioFirst := range [][]bool{{true, false}, {false, true}}[k%2] {
				target := filepath.Join(work, "frames")
				_ = os.RemoveAll(target)
				_ = os.MkdirAll(target, 0o755)
				if fioFirst {
					pf = runFio(target, p, *n, d)
				} else {
					pi = runIolab(bin, target, name, *n, d, work)
				}
			}
			f, i = f+pf, i+pi
			ratios = append(ratios, pi/pf)
		}
		fmt.Printf("| %s | %d | %.0f | %.0f | %s |\n", name, p.FrameBytes(frames.DefaultHeader), f/float64(*pairs)/(1<<20), i/float64(*pairs)/(1<<20),
			harness.MedianRatio(ratios))
	}
}

func runFio(dir string, p frames.Profile, n int, direct string) float64 {
	// iolab writes a frame in pieces of frames.PieceBytes; fio the same, and a
	// smaller frame in one piece (fio writes only whole blocks of a file).
	bs := min(p.FrameBytes(frames.DefaultHeader), frames.PieceBytes(dir, direct == "1"))
	out, err := harness.Output(exec.Command("fio", "--name=frames", "--directory="+dir, "--rw=write", "--bs="+strconv.FormatInt(bs, 10), "--bs_unaligned",
		"--nrfiles="+strconv.Itoa(n/2), "--filesize="+strconv.FormatInt(p.FrameBytes(frames.DefaultHeader), 10), "--numjobs=2",
		"--openfiles=1", "--file_service_type=sequential", "--create_on_open=1", "--direct="+direct,
		"--ioengine=psync", "--group_reporting", "--output-format=json"))
	if err != nil {
		harness.Fatalf("fio: %v", err)
	}
	var r struct {
		Jobs []struct {
			Write struct {
				BwBytes float64 `json:"bw_bytes"`
			} `json:"write"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Jobs) != 1 {
		harness.Fatalf("fio output: %v", err)
	}
	return r.Jobs[0].Write.BwBytes
}

func runIolab(bin, dir, profile string, n int, direct, work string) float64 {
	out, err := harness.Output(exec.Command(bin, "frames", "--directory", dir, "--profile", profile, "--frames", strconv.Itoa(n),
		"--threads", "2", "--direct="+direct, "--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(work, "b.db")))
	if err != nil {
		harness.Fatalf("iolab: %v", err)
	}
	var r struct {
		Runs []struct {
			Write struct {
				BytesPerS float64 `json:"bytes_per_s"`
			} `json:"write"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Runs) != 1 {
		harness.Fatalf("iolab output: %v", err)
	}
	return r.Runs[0].Write.BytesPerS
}
