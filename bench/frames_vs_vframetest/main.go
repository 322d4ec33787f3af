// Command frames_vs_vframetest writes video frames with iolab frames and
// with vframetest, the tool it follows, on the same directory in
// alternating pairs (who goes first alternates), and prints per case the
// frames per second of each with the median ratio iolab/vframetest and its
// 95% interval, and the CPU per frame of both on two bases, each the same
// for both: their run windows (read from /proc every 5 ms: iolab's run by
// the start and duration its JSON gives, vframetest's the last time_ns of
// its life), and their whole processes (getrusage at exit, start-up — a
// frame buffer per thread, iolab's store — included).
//
// Beside them it prints the bound: the same frames written by the bench
// itself as a writer that does nothing else (iolab's calls — open, pieces
// of iolab's size from a buffer in huge pages, close — with no content made
// and no call timed), once per pair after both tools, in frames and GB per
// second with its CPU per frame, and iolab's fps as a share of it.
//
// A case is PROFILE FRAMESxTHREADS (vframetest's -w, -n and -t); each runs
// in every directory of -dirs (default tmpfs, then the disk), with O_DIRECT
// as vframetest always opens its frames (iolab --direct=1). Frame files are
// removed by the bench after every run, for both (iolab --keep: vframetest
// leaves its files, so removing them is not charged to iolab alone).
//
//	go run ./bench/frames_vs_vframetest [-vframetest PATH | -vframetest-src DIR] [-iolab PATH] [-pairs 6]
//	    [-dirs /dev/shm,/var/tmp] [-cases "8K-24bit 16x16,2K-24bit 20x4,8K-24bit 100x16"]
//
// vframetest is looked up as -vframetest, else built from a checkout of its
// source (-vframetest-src: git clone https://github.com/tuxera/vframetest,
// or a fork such as ssotoa70/vframetest; it builds with make and a C
// compiler), else on PATH. Without it the bench measures iolab alone and
// says how to get it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iolab/iolab/bench/internal/harness"
	"github.com/iolab/iolab/internal/stats"
)

const defaultCases = "8K-24bit 16x16,2K-24bit 20x4,8K-24bit 100x16"

// benchCase is one job: frames of a profile written by threads.
type benchCase struct {
	profile         string
	frames, threads int
}

func (c benchCase) String() string { return fmt.Sprintf("%s %dx%d", c.profile, c.frames, c.threads) }

// parseCases reads -cases: comma-separated "PROFILE FRAMESxTHREADS".
func parseCases(text string) ([]benchCase, error) {
	var cs []benchCase
	for _, f := range strings.Split(text, ",") {
		w := strings.Fields(f)
		var c benchCase
		if len(w) == 2 {
			c.profile = w[0]
			if n, err := fmt.Sscanf(w[1], "%dx%d", &c.frames, &c.threads); err != nil || n != 2 || c.frames < 1 || c.threads < 1 {
				w = nil
			}
		}
		if len(w) != 2 {
			return nil, fmt.Errorf("-cases: %q is not PROFILE FRAMESxTHREADS (e.g. \"8K-24bit 16x16\")", strings.TrimSpace(f))
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// sample is one run: frames per second over its run, and the CPU seconds
// of its run window and of its whole process.
type sample struct{ fps, cpu, whole float64 }

// cpuInterval is how often a tool's CPU is read while it runs.
const cpuInterval = 5 * time.Millisecond

func main() { harness.Main(bench) }

func bench() {
	pairs := flag.Int("pairs", 6, "alternating pairs per case and directory (6 or more give a 95% CI of the median ratio)")
	dirs := flag.String("dirs", "/dev/shm,/var/tmp", "directories to write in, comma-separated (tmpfs, a disk)")
	caseList := flag.String("cases", defaultCases, "the cases, comma-separated: PROFILE FRAMESxTHREADS")
	vftPath := flag.String("vframetest", "", "the vframetest binary")
	vftSrc := flag.String("vframetest-src", "", "a checkout of vframetest's source, built with make when -vframetest is not given")
	iolabBin := flag.String("iolab", "", "iolab binary (default: build ./cmd/iolab)")
	flag.Parse()
	cases, err := parseCases(*caseList)
	if err != nil {
		harness.Fatal(err)
	}
	work := harness.WorkDir("", "framesbench-")
	bin := *iolabBin
	if bin == "" {
		bin = harness.BuildIolab(work)
	}
	vft := findVframetest(*vftPath, *vftSrc, work)
	if vft == "" {
		fmt.Println("vframetest not found: measuring iolab alone. To compare, build it from its source:")
		fmt.Println("  git clone https://github.com/tuxera/vframetest && go run ./bench/frames_vs_vframetest -vframetest-src vframetest")
		fmt.Println()
	}
	fmt.Printf("%d pairs per case and directory; O_DIRECT on both; CPU ms per frame in each run's window (whole process in brackets)\n\n", *pairs)
	fmt.Println("| directory | case | frame MiB | vframetest fps | iolab fps | fps iolab/vframetest: median [95% CI] | CPU ms/frame vframetest | CPU ms/frame iolab | CPU/frame iolab/vframetest, window [whole] | plain writer fps [GB/s; CPU ms/frame] | iolab/plain fps |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, dir := range strings.Split(*dirs, ",") {
		for _, c := range cases {
			var v, i []sample
			var ratios, plain, plainCPU []float64
			var frameBytes float64
			for p := range *pairs {
				tools := []string{"vframetest", "iolab"}
				if p%2 == 1 {
					slices.Reverse(tools)
				}
				var pv, pi sample
				for _, tool := range tools {
					run := harness.WorkDir(dir, "frames-")
					switch {
					case tool == "iolab":
						pi, frameBytes = runIolab(bin, run, c, work)
						i = append(i, pi)
					case vft != "":
						pv = runVframetest(vft, run, c)
						v = append(v, pv)
					}
					os.RemoveAll(run)
				}
				if vft != "" {
					ratios = append(ratios, pi.fps/pv.fps)
				}
				run := harness.WorkDir(dir, "plain-")
				fps, cpu := runPlain(run, c, int64(frameBytes))
				plain, plainCPU = append(plain, fps), append(plainCPU, cpu/float64(c.frames))
				os.RemoveAll(run)
			}
			mib := frameBytes / (1 << 20)
			plainFPS := stats.Summarize(plain).Median
			bound := fmt.Sprintf("%.1f [%.2f; %.2f] | %.3f", plainFPS, plainFPS*frameBytes/1e9, 1e3*stats.Summarize(plainCPU).Median, median(i, fps)/plainFPS)
			win, whole := cpuPerFrame(c, false), cpuPerFrame(c, true)
			if vft == "" {
				fmt.Printf("| %s | %s | %.1f | — | %.1f | — | — | %.2f [%.2f] | — | %s |\n", dir, c, mib, median(i, fps), 1e3*median(i, win), 1e3*median(i, whole), bound)
				continue
			}
			fmt.Printf("| %s | %s | %.1f | %.1f | %.1f | %s | %.2f [%.2f] | %.2f [%.2f] | %.3f [%.3f] | %s |\n", dir, c, mib, median(v, fps), median(i, fps), harness.MedianRatio(ratios),
				1e3*median(v, win), 1e3*median(v, whole), 1e3*median(i, win), 1e3*median(i, whole), median(i, win)/median(v, win), median(i, whole)/median(v, whole), bound)
		}
	}
}

func fps(s sample) float64 { return s.fps }

// cpuPerFrame reads a sample's CPU per frame: of its whole process, or of
// its run window.
func cpuPerFrame(c benchCase, whole bool) func(sample) float64 {
	if whole {
		return func(s sample) float64 { return s.whole / float64(c.frames) }
	}
	return func(s sample) float64 { return s.cpu / float64(c.frames) }
}

func median(xs []sample, f func(sample) float64) float64 {
	var v []float64
	for _, x := range xs {
		v = append(v, f(x))
	}
	return stats.Summarize(v).Median
}

// findVframetest is the vframetest to run: the one given, one built from
// src into work, or one on PATH; "" when none.
func findVframetest(path, src, work string) string {
	if path != "" {
		return path
	}
	if src != "" {
		build := filepath.Join(work, "vframetest-build")
		cmd := exec.Command("make", "-C", src, "BUILD_FOLDER="+build)
		if out, err := harness.CombinedOutput(cmd); err != nil {
			harness.Fatalf("-vframetest-src %s: make: %v\n%s", src, err, out)
		}
		return filepath.Join(build, "vframetest")
	}
	if p, err := exec.LookPath("vframetest"); err == nil {
		return p
	}
	return ""
}

var (
	vftFPS  = regexp.MustCompile(`"fps":\s*([0-9.]+)`)
	vftTime = regexp.MustCompile(`"time_ns":\s*([0-9]+)`)
)

// runVframetest writes the case's frames into dir with vframetest. Its JSON
// is not always well-formed (a missing comma in some versions): the fps is
// read by pattern.
func runVframetest(bin, dir string, c benchCase) sample {
	cmd := exec.Command(bin, "-w", c.profile, "-t", strconv.Itoa(c.threads), "-n", strconv.Itoa(c.frames), "--json", dir)
	out, cpu, err := harness.Measured(cmd, cpuInterval)
	end := time.Now()
	if err != nil {
		harness.Fatalf("vframetest: %v\n%s", err, out)
	}
	m, t := vftFPS.FindSubmatch(out), vftTime.FindSubmatch(out)
	if m == nil || t == nil {
		harness.Fatalf("vframetest printed no fps and time:\n%s", out)
	}
	if !strings.Contains(string(out), `"frames_failed": 0`) {
		harness.Fatalf("vframetest failed frames:\n%s", out)
	}
	f, _ := strconv.ParseFloat(string(m[1]), 64)
	ns, _ := strconv.ParseInt(string(t[1]), 10, 64)
	return sample{f, cpu.Between(end.Add(-time.Duration(ns)), end), harness.CPUSeconds(cmd)}
}

// runIolab writes the case's frames into dir with iolab frames; it
// returns the run and the frame's bytes.
func runIolab(bin, dir string, c benchCase, work string) (sample, float64) {
	cmd := exec.Command(bin, "frames", "--directory", dir, "--profile", c.profile, "--threads", strconv.Itoa(c.threads),
		"--frames", strconv.Itoa(c.frames), "--direct=1", "--keep", "--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(work, "b.db"))
	out, cpu, err := harness.Measured(cmd, cpuInterval)
	if err != nil {
		harness.Fatalf("iolab frames: %v\n%s", err, out)
	}
	var r struct {
		Runs []struct {
			Start     time.Time `json:"start"`
			DurationS float64   `json:"duration_s"`
			Errors    int64     `json:"errors"`
			Write     struct {
				Ops   int64 `json:"ops"`
				Bytes int64 `json:"bytes"`
			} `json:"write"`
			Frames struct {
				FPS float64 `json:"fps"`
			} `json:"frames"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Runs) != 1 {
		harness.Fatalf("iolab's JSON: %v", err)
	}
	run := r.Runs[0]
	if run.Errors > 0 || run.Write.Ops != int64(c.frames) {
		harness.Fatalf("iolab frames: %d errors, %d of %d frames", run.Errors, run.Write.Ops, c.frames)
	}
	end := run.Start.Add(time.Duration(run.DurationS * float64(time.Second)))
	return sample{run.Frames.FPS, cpu.Between(run.Start, end), harness.CPUSeconds(cmd)}, float64(run.Write.Bytes) / float64(run.Write.Ops)
}
