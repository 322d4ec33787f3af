// Command bisect_vs_git bisects the same synthetic histories with `iolab
// bisect` and with `git bisect run` driven by the script teams write by
// hand — build, run the program a fixed number of times, call the commit
// bad when the mean passes a threshold halfway between the ends' levels —
// the two in alternation on each history (who goes first alternates), and
// prints per tool how often it named the culprit, the median number of
// builds, of runs and of seconds a bisect took.
//
// Each history (bisecttest.Repo) is -commits commits of a program whose
// cost, as it prints it, steps up by -step at a commit drawn at random, each
// run drawn with a coefficient of variation -cv: the numbers are the
// program's own, so the machine's load moves neither tool.
//
//	go run ./bench/bisect_vs_git [-trials 20] [-commits 64] [-step 0.15] [-cv 0.10] [-reps 5,20] [-max-rounds 300]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/iolab/iolab/bench/internal/harness"
	"github.com/iolab/iolab/internal/bisect/bisecttest"
)

type outcome struct {
	found        bool
	builds, runs int
	wall         float64
	said         string
}

func main() { harness.Main(bench) }

func bench() {
	trials := flag.Int("trials", 20, "histories, each bisected by both tools")
	commits := flag.Int("commits", 64, "commits in each history")
	step := flag.Float64("step", 0.15, "the change at the culprit: +15% is 0.15")
	cv := flag.Float64("cv", 0.10, "the coefficient of variation of a run's cost")
	repsList := flag.String("reps", "5,20", "runs per commit of the git bisect run script, one script per count (comma-separated)")
	seed := flag.Uint64("seed", 1, "seed of the culprits' places")
	maxRounds := flag.Int("max-rounds", 300, "iolab bisect's --max-rounds: the most rounds a step runs before it calls its interval ambiguous")
	flag.Parse()
	var reps []int
	for _, f := range strings.Split(*repsList, ",") {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n < 1 {
			harness.Fatalf("-reps %q: want counts of runs such as 5,20", *repsList)
		}
		reps = append(reps, n)
	}
	work := harness.WorkDir("", "bisectbench-")
	bin := harness.BuildIolab(work)
	rng := rand.New(rand.NewPCG(*seed, 0))
	fmt.Printf("%d histories of %d commits, a %+.0f%% step at a random commit, runs of CV %.0f%%; git bisect run's script: %v runs a commit, threshold halfway between the ends' levels (told it: the best case)\n\n",
		*trials, *commits, 100**step, 100**cv, reps)
	var iolab []outcome
	git := make([][]outcome, len(reps))
	for trial := range *trials {
		k := 1 + rng.IntN(*commits-1)
		dir := filepath.Join(work, fmt.Sprint(trial))
		factor := func(i int) float64 {
			if i >= k {
				return 1 + *step
			}
			return 1
		}
		repo, planPath, err := bisecttest.Repo(dir, *commits, *cv, factor, nil)
		if err != nil {
			harness.Fatal(err)
		}
		want := fmt.Sprintf("commit %d", k)
		runI := func() { iolab = append(iolab, bisectIolab(bin, planPath, *commits, *maxRounds, want)) }
		runG := func() {
			for i, r := range reps {
				git[i] = append(git[i], bisectGit(repo, *commits, r, 100*(1+*step/2), want))
			}
		}
		if trial%2 == 0 {
			runI()
			runG()
		} else {
			runG()
			runI()
		}
		said := []string{"iolab " + iolab[len(iolab)-1].said}
		for i, r := range reps {
			said = append(said, fmt.Sprintf("git bisect run x%d %s", r, git[i][len(git[i])-1].said))
		}
		fmt.Fprintf(os.Stderr, "trial %d (culprit commit %d): %s\n", trial, k, strings.Join(said, "; "))
	}
	tools := []toolOutcomes{{"iolab bisect", iolab}}
	for i, r := range reps {
		tools = append(tools, toolOutcomes{fmt.Sprintf("git bisect run, %d runs a commit", r), git[i]})
	}
	printOutcomes(tools)
}

// toolOutcomes are one tool's bisections.
type toolOutcomes struct {
	name string
	o    []outcome
}

// printOutcomes prints each tool's culprits found and wrong, and the
// median builds, runs and seconds a bisection took.
func printOutcomes(tools []toolOutcomes) {
	fmt.Println("| tool | culprit found | a wrong commit named | median builds | median runs | median seconds |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, t := range tools {
		found, wrong := 0, 0
		var builds, runs, wall []float64
		for _, o := range t.o {
			if o.found {
				found++
			} else if strings.HasPrefix(o.said, "commit ") || strings.HasPrefix(o.said, "found: commit ") {
				wrong++
			}
			builds, runs, wall = append(builds, float64(o.builds)), append(runs, float64(o.runs)), append(wall, o.wall)
		}
		fmt.Printf("| %s | %d of %d (%.0f%%) | %d | %.0f | %.0f | %.1f |\n", t.name, found, len(t.o), 100*float64(found)/float64(len(t.o)), wrong, median(builds), median(runs), median(wall))
	}
}

// bisectIolab runs iolab bisect over the whole history.
func bisectIolab(bin, planPath string, commits, maxRounds int, want string) outcome {
	start := time.Now()
	out, err := harness.Output(exec.Command(bin, "bisect", planPath, "--good", fmt.Sprintf("main~%d", commits-1), "--bad", "main", "--metric", "cost",
		"--max-rounds", fmt.Sprint(maxRounds), "-q", "--db", filepath.Join(filepath.Dir(planPath), "x.db"), "--json"))
	o := outcome{wall: time.Since(start).Seconds()}
	if err != nil {
		o.said = fmt.Sprintf("failed: %v", err)
		return o
	}
	var v struct {
		Verdict  string
		Culprits []struct{ Subject string }
		Steps    []struct {
			Low, Mid, High string
			Rounds         int
			Verdict        string
		}
	}
	if err := json.Unmarshal(out, &v); err != nil {
		harness.Fatalf("iolab bisect: %v", err)
	}
	built := map[string]bool{}
	for _, s := range v.Steps {
		built[s.Low], built[s.High] = true, true
		variants := 2
		if s.Mid != "" {
			built[s.Mid] = true
			variants = 3
		}
		o.runs += s.Rounds * variants
	}
	o.builds = len(built)
	o.found = v.Verdict == "found" && len(v.Culprits) == 1 && v.Culprits[0].Subject == want
	o.said = v.Verdict
	if len(v.Culprits) > 0 {
		o.said += ": " + v.Culprits[0].Subject
	}
	return o
}

// bisectGit runs git bisect run with a script of fixed repetitions and a
// threshold, in the repository itself.
func bisectGit(repo string, commits, reps int, threshold float64, want string) outcome {
	script := filepath.Join(filepath.Dir(repo), "check.sh")
	count := filepath.Join(filepath.Dir(repo), "builds")
	_ = os.WriteFile(count, nil, 0o644)
	text := fmt.Sprintf(`#!/bin/sh
echo >> %s
sh build.sh >/dev/null 2>&1 || exit 125
i=0; sum=0
while [ $i -lt %d ]; do
	x=$(./prog | sed 's/cost: //')
	sum=$(awk -v s="$sum" -v x="$x" 'BEGIN { print s + x }')
	i=$((i + 1))
done
awk -v s="$sum" -v n=%d -v t=%g 'BEGIN { exit (s / n < t) ? 0 : 1 }'
`, count, reps, reps, threshold)
	if err := os.WriteFile(script, []byte(text), 0o755); err != nil {
		harness.Fatal(err)
	}
	git := func(args ...string) (string, error) {
		out, err := harness.CombinedOutput(exec.Command("git", append([]string{"-C", repo}, args...)...))
		return string(out), err
	}
	start := time.Now()
	if out, err := git("bisect", "start", "main", fmt.Sprintf("main~%d", commits-1)); err != nil {
		harness.Fatalf("git bisect start: %v: %s", err, out)
	}
	out, err := git("bisect", "run", script)
	o := outcome{wall: time.Since(start).Seconds()}
	_, _ = git("bisect", "reset")
	if b, rerr := os.ReadFile(count); rerr == nil {
		o.builds = strings.Count(string(b), "\n")
		o.runs = o.builds * reps
	}
	if err != nil {
		o.said = "failed: " + strings.TrimSpace(lastLine(out))
		return o
	}
	m := regexp.MustCompile(`(?m)^([0-9a-f]{40}) is the first bad commit`).FindStringSubmatch(out)
	if m == nil {
		o.said = "no culprit: " + lastLine(out)
		return o
	}
	subject, _ := git("log", "-1", "--format=%s", m[1])
	o.said = strings.TrimSpace(subject)
	o.found = o.said == want
	return o
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
