package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// bisectRepo makes a git repository of n commits of a program whose cost
// at commit i is factor(i) (1 at the first), as it prints it — "cost: X",
// X drawn with a 10% coefficient of variation, so the machine's load
// cannot move it; commit i does not build where broken says. It returns
// the repository and the plan that measures the program.
func bisectRepo(t *testing.T, n int, factor func(int) float64, broken func(int) bool) (repo, planPath string) {
	t.Helper()
	dir := t.TempDir()
	repo = filepath.Join(dir, "repo")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	writeFiles(t, repo, map[string]string{
		// Box-Muller from two draws of /dev/urandom.
		"prog.sh": `#!/bin/sh
set -- $(od -An -N8 -tu4 /dev/urandom)
awk -v f="$(cat "$(dirname "$0")/factor")" -v a="$1" -v b="$2" 'BEGIN {
	u = (a + 1) / 4294967297; v = (b + 1) / 4294967297
	printf "cost: %.4f\n", 100 * f * (1 + 0.1 * sqrt(-2 * log(u)) * cos(6.283185307 * v))
}'
`,
		"build.sh": "#!/bin/sh\nif [ -e BROKEN ]; then echo 'syntax error' >&2; exit 1; fi\ncp prog.sh prog && chmod +x prog\n",
	})
	for i := range n {
		files := map[string]string{"factor": fmt.Sprint(factor(i)), "version": fmt.Sprint(i)}
		if broken(i) {
			files["BROKEN"] = "x"
		} else {
			os.Remove(filepath.Join(repo, "BROKEN"))
		}
		writeFiles(t, repo, files)
		git("add", "-A")
		git("commit", "-q", "-m", fmt.Sprintf("commit %d", i))
	}
	planPath = filepath.Join(dir, "plan.yaml")
	writeFiles(t, dir, map[string]string{"plan.yaml": `name: cost
warmup: 0
variants:
  - name: prog
    git: {repo: repo, ref: main}
    build: sh build.sh
workloads:
  - name: run
    cmd:
      run: ./prog
      metrics: [{name: cost, regex: 'cost: ([0-9.]+)', better: lower}]
`})
	return repo, planPath
}

// The culprit of a +15% step at commit 41 of 64, found through steps
// each decided by the statistics, with its step against its parent.
func TestBisectFindsTheCulprit(t *testing.T) {
	t.Parallel()
	factor := func(i int) float64 {
		if i >= 41 {
			return 1.15
		}
		return 1
	}
	repo, planPath := bisectRepo(t, 64, factor, func(int) bool { return false })
	db := filepath.Join(filepath.Dir(planPath), "x.db")
	out, stderr, err := iolab(t, context.Background(), "bisect", planPath, "--good", "main~63", "--bad", "main", "--metric", "cost", "--max-rounds", "150", "-q", "--db", db, "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var v struct {
		Verdict  string
		Differ   bool
		Culprits []struct {
			Hash, Subject string
			Share         float64
			Step          *struct {
				Ratio float64
				CI95  [2]float64
			}
		}
		Steps       []struct{ Verdict string }
		Experiments []string
	}
	decodeInto(t, out, &v)
	want := strings.TrimSpace(gitOut(t, repo, "rev-parse", "main~22"))
	if !v.Differ || v.Verdict != "found" || len(v.Culprits) != 1 || v.Culprits[0].Hash != want || v.Culprits[0].Subject != "commit 41" {
		t.Fatalf("the bisect: %s\n%s", out, stderr)
	}
	c := v.Culprits[0]
	if c.Step == nil || c.Step.CI95[0] > 1.15 || c.Step.CI95[1] < 1.15 || c.Step.CI95[0] < 1.02 {
		t.Errorf("the culprit's step %+v, want an interval about +15%%", c.Step)
	}
	if len(v.Steps) > 10 || len(v.Experiments) != len(v.Steps) {
		t.Errorf("%d steps, %d experiments, want about log2(64)+1 of each", len(v.Steps), len(v.Experiments))
	}
	text, _, err := iolab(t, context.Background(), "show", v.Experiments[len(v.Experiments)-1], "--db", db)
	if err != nil || !strings.Contains(text, "cost bisect") {
		t.Errorf("the last step as an experiment (%v):\n%s", err, text)
	}
}

func gitOut(t *testing.T, repo string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
