// Package bisecttest makes git repositories whose history holds known
// performance changes, for the tests and the bench of bisect.
package bisecttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Repo makes, under dir, a git repository ("repo", branch main) of n
// commits of a program whose cost at commit i is factor(i) (1 at the
// first), as it prints it — "cost: X", X drawn around 100·factor(i) with
// a coefficient of variation cv, so no machine's load can move it — and a
// plan beside it ("plan.yaml") that builds the program as a git variant
// and reads its cost. Commit i does not build where broken(i) (nil: none).
// It returns the repository and the plan.
func Repo(dir string, n int, cv float64, factor func(int) float64, broken func(int) bool) (repo, planPath string, err error) {
	repo = filepath.Join(dir, "repo")
	git := func(args ...string) error {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=bisecttest", "-c", "user.email=bisecttest@localhost", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v: %s", args, err, out)
		}
		return nil
	}
	write := func(files map[string]string) error {
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return "", "", err
	}
	if err := git("init", "-q", "-b", "main"); err != nil {
		return "", "", err
	}
	if err := write(map[string]string{
		// A normal draw by Box-Muller, from two of /dev/urandom.
		"prog.sh": `#!/bin/sh
set -- $(od -An -N8 -tu4 /dev/urandom)
d=$(dirname "$0")
awk -v f="$(cat "$d/factor")" -v cv="$(cat "$d/cv")" -v a="$1" -v b="$2" 'BEGIN {
	u = (a + 1) / 4294967297; v = (b + 1) / 4294967297
	printf "cost: %.4f\n", 100 * f * (1 + cv * sqrt(-2 * log(u)) * cos(6.283185307 * v))
}'
`,
		"build.sh": "#!/bin/sh\nif [ -e BROKEN ]; then echo 'syntax error' >&2; exit 1; fi\ncp prog.sh prog && chmod +x prog\n",
	}); err != nil {
		return "", "", err
	}
	for i := range n {
		files := map[string]string{"factor": fmt.Sprint(factor(i)), "cv": fmt.Sprint(cv), "version": fmt.Sprint(i)}
		if broken != nil && broken(i) {
			files["BROKEN"] = "x"
		} else {
			_ = os.Remove(filepath.Join(repo, "BROKEN"))
		}
		if err := write(files); err != nil {
			return "", "", err
		}
		if err := git("add", "-A"); err != nil {
			return "", "", err
		}
		if err := git("commit", "-q", "-m", fmt.Sprintf("commit %d", i)); err != nil {
			return "", "", err
		}
	}
	planPath = filepath.Join(dir, "plan.yaml")
	return repo, planPath, os.WriteFile(planPath, []byte(`name: cost
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
`), 0o644)
}
