// Command cmd_vs_hyperfine compares two commands with `iolab cmd 'A' 'B'`
// and with hyperfine, on the same commands and the same number of runs, in
// alternating pairs (who goes first alternates), and prints, per case: the
// wall-clock time each tool takes per run of a command (its whole process,
// start-up included, over every run it made, warm-ups too), the CPU per run
// on the same basis (the tool and the commands it ran), the ratio
// iolab/hyperfine with its 95% interval over the pairs, and whether the two
// agree on the answer: hyperfine's ratio of means B/A beside iolab's
// paired ratio and its interval.
//
//	go run ./bench/cmd_vs_hyperfine [-pairs 6] [-runs 10] [-N] [-stress N] [-cases 'sleep 0.05|sleep 0.06;true|sh -c true']
//
// hyperfine comes from Debian's package (apt-get install hyperfine); without
// it the bench says so and measures nothing.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/iolab/iolab/bench/internal/harness"
)

func main() { harness.Main(bench) }

func bench() {
	pairs := flag.Int("pairs", 6, "alternating pairs per case (6 or more give a 95% CI of the median ratio)")
	runs := flag.Int("runs", 10, "measured runs of each command, per tool (iolab --rounds, hyperfine --runs); one warm-up run each besides")
	cases := flag.String("cases", "sleep 0.05|sleep 0.06;true|sh -c true;dd if=/dev/zero of=/dev/null bs=1M count=64|dd if=/dev/zero of=/dev/null bs=64k count=1024",
		"cases, ';'-separated, each two commands A|B")
	noShell := flag.Bool("N", false, "both tools run the commands with no shell (hyperfine -N, iolab cmd -N): what hyperfine advises for commands this short")
	flag.Parse()
	if _, err := exec.LookPath("hyperfine"); err != nil {
		fmt.Println("hyperfine is not installed (apt-get install hyperfine): nothing to compare iolab cmd with")
		return
	}
	work := harness.WorkDir("", "cmdbench-")
	bin := harness.BuildIolab(work)
	perTool := 2 * (*runs + 1) // two commands, warm-up included
	shell := "in a shell"
	if *noShell {
		shell = "with no shell (-N)"
	}
	fmt.Printf("%d alternating pairs x %d runs of each command (+1 warm-up) per tool, %s; whole processes, start-up included\n\n", *pairs, *runs, shell)
	fmt.Println("| A | B | wall ms/run hyperfine | wall ms/run iolab | ratio iolab/hyperfine [95% CI] | CPU ms/run hyperfine | CPU ms/run iolab | B/A hyperfine (means) | B/A iolab [95% CI] |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, c := range strings.Split(*cases, ";") {
		a, b, ok := strings.Cut(c, "|")
		if !ok {
			harness.Fatalf("-cases: %q is not A|B", c)
		}
		var wallH, wallI, cpuH, cpuI float64
		var ratios []float64
		var hRatio float64
		var iRatio string
		for p := range *pairs {
			var ph, pi float64
			for _, hyperfineFirst := range [][]bool{{true, false}, {false, true}}[p%2] {
				if hyperfineFirst {
					wall, cpu, r := runHyperfine(work, *runs, *noShell, a, b)
					ph, wallH, cpuH, hRatio = wall, wallH+wall, cpuH+cpu, r
				} else {
					wall, cpu, r := runIolab(bin, work, *runs, *noShell, a, b)
					pi, wallI, cpuI, iRatio = wall, wallI+wall, cpuI+cpu, r
				}
			}
			ratios = append(ratios, pi/ph)
		}
		n := float64(*pairs * perTool)
		fmt.Printf("| `%s` | `%s` | %.1f | %.1f | %s | %.2f | %.2f | %.3f | %s |\n", a, b, 1e3*wallH/n, 1e3*wallI/n, harness.MedianRatio(ratios),
			1e3*cpuH/n, 1e3*cpuI/n, hRatio, iRatio)
	}
}

// runHyperfine times hyperfine on A and B; it returns its wall and CPU
// seconds (with the commands' own) and its ratio of means B/A (of the
// last pair).
func runHyperfine(work string, runs int, noShell bool, a, b string) (wall, cpu, ratio float64) {
	out := filepath.Join(work, "hyperfine.json")
	cmd := exec.Command("hyperfine", "--style", "none", "--warmup", "1", "--runs", fmt.Sprint(runs), "--export-json", out, a, b)
	if noShell {
		cmd.Args = slices.Insert(cmd.Args, 1, "-N")
	}
	start := time.Now()
	if o, err := harness.CombinedOutput(cmd); err != nil {
		harness.Fatalf("hyperfine: %v\n%s", err, o)
	}
	wall = time.Since(start).Seconds()
	var r struct{ Results []struct{ Mean float64 } }
	raw, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(raw, &r)
	}
	if err != nil || len(r.Results) != 2 {
		harness.Fatalf("hyperfine's JSON: %v", err)
	}
	return wall, harness.CPUSeconds(cmd), r.Results[1].Mean / r.Results[0].Mean
}

// runIolab times iolab cmd on A and B in a store of its own; it returns
// its wall and CPU seconds and its ratio B/A with the interval.
func runIolab(bin, work string, runs int, noShell bool, a, b string) (wall, cpu float64, ratio string) {
	db := filepath.Join(work, "cmd.db")
	_ = os.Remove(db)
	cmd := exec.Command(bin, "cmd", "--rounds", fmt.Sprint(runs), "--warmup", "1", "--db", db, "--json", "--quiet", "-n", "A", "-n", "B", a, b)
	if noShell {
		cmd.Args = slices.Insert(cmd.Args, 2, "-N")
	}
	start := time.Now()
	out, err := harness.Output(cmd)
	if err != nil {
		harness.Fatalf("iolab cmd: %v\n%s", err, out)
	}
	wall = time.Since(start).Seconds()
	var r struct {
		Comparisons []struct {
			Metric, Verdict string
			Ratio           float64
			CI95            [2]float64 `json:"ci95"`
		}
	}
	if err := json.Unmarshal(out, &r); err != nil {
		harness.Fatalf("iolab's JSON: %v", err)
	}
	for _, c := range r.Comparisons {
		if c.Metric == "wall_s" {
			ratio = fmt.Sprintf("%.3f [%.3f, %.3f] %s", c.Ratio, c.CI95[0], c.CI95[1], c.Verdict)
		}
	}
	return wall, harness.CPUSeconds(cmd), ratio
}
