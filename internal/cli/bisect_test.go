package cli

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/bisect/bisecttest"
)

// bisectRepo makes a repository of n commits of a program whose cost at
// commit i is factor(i), drawn with a coefficient of variation cv, and
// its plan (bisecttest.Repo).
func bisectRepo(t *testing.T, n int, cv float64, factor func(int) float64, broken func(int) bool) (repo, planPath string) {
	t.Helper()
	repo, planPath, err := bisecttest.Repo(t.TempDir(), n, cv, factor, broken)
	if err != nil {
		t.Fatal(err)
	}
	return repo, planPath
}

// The culprit of a +15% step at commit 41 of 64 (runs of a 10% CV), found through steps
// each decided by the statistics, with its step against its parent.
func TestBisectFindsTheCulprit(t *testing.T) {
	slow(t)
	t.Parallel()
	factor := func(i int) float64 {
		if i >= 41 {
			return 1.15
		}
		return 1
	}
	repo, planPath := bisectRepo(t, 64, 0.1, factor, func(int) bool { return false })
	db := filepath.Join(filepath.Dir(planPath), "x.db")
	v, out, stderr := runBisectJSON(t, planPath, db)
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
	if err != nil || !strings.Contains(text, "cost bisect") || !strings.Contains(text, `found; culprit `+want[:12]+` "commit 41", 100% of the change`) {
		t.Errorf("the last step as an experiment, with the answer in its notes (%v):\n%s", err, text)
	}
	// The step's answer is of the metric bisected, not of its kind's.
	if at := strings.Index(text, "the answer ("); at < 0 || !strings.Contains(strings.SplitN(text[at:], "\n\n", 2)[0], " cost ") ||
		strings.Contains(strings.SplitN(text[at:], "\n\n", 2)[0], "wall") {
		t.Errorf("the step's answer is not of cost:\n%s", text)
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

type bisectJSON struct {
	Verdict  string
	Differ   bool
	Culprits []struct {
		Hash, Subject string
		Share         float64
		Confirmed     bool
		Step          *struct {
			Ratio float64
			CI95  [2]float64
		}
	}
	Ambiguous []struct {
		Why     string
		Commits []struct{ Subject string }
	}
	Skipped     []struct{ Subject string }
	Steps       []struct{ Verdict string }
	Experiments []string
}

// runBisectJSON bisects the plan's whole range (main~63..main) on its
// cost, and returns the answer, as JSON and decoded, and what it said.
func runBisectJSON(t *testing.T, planPath, db string, more ...string) (bisectJSON, string, string) {
	t.Helper()
	args := append([]string{"bisect", planPath, "--good", "main~63", "--bad", "main", "--metric", "cost", "--max-rounds", "150", "-q", "--db", db, "--json"}, more...)
	out, stderr, err := iolab(t, context.Background(), args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var v bisectJSON
	decodeInto(t, out, &v)
	return v, out, stderr
}

// Two +10% changes, at commits 20 and 45 of 64 (runs of a 5% CV): the step between them is
// in between, both halves are searched, and both commits are found, each
// with about half of the change.
func TestBisectFindsAChangeSpreadOverTwoCommits(t *testing.T) {
	slow(t)
	t.Parallel()
	factor := func(i int) float64 {
		f := 1.0
		if i >= 20 {
			f *= 1.10
		}
		if i >= 45 {
			f *= 1.10
		}
		return f
	}
	_, planPath := bisectRepo(t, 64, 0.05, factor, func(int) bool { return false })
	v, out, stderr := runBisectJSON(t, planPath, filepath.Join(filepath.Dir(planPath), "x.db"))
	if v.Verdict != "spread over several commits" || len(v.Culprits) != 2 || v.Culprits[0].Subject != "commit 20" || v.Culprits[1].Subject != "commit 45" {
		t.Fatalf("the bisect: %s\n%s", out, stderr)
	}
	for _, c := range v.Culprits {
		if c.Share < 0.3 || c.Share > 0.7 || !c.Confirmed {
			t.Errorf("%s: %.0f%% of the change (confirmed %v), want about half", c.Subject, 100*c.Share, c.Confirmed)
		}
	}
}

// Commits inside the range that do not build are skipped and named, and
// the culprit found all the same; when the culprit's parent does not
// build either, the answer is the commits the change could be any of.
func TestBisectSkipsACommitThatDoesNotBuild(t *testing.T) {
	slow(t)
	t.Parallel()
	factor := func(i int) float64 {
		if i >= 33 {
			return 1.15
		}
		return 1
	}
	_, planPath := bisectRepo(t, 64, 0.05, factor, func(i int) bool { return i == 31 || i == 48 })
	v, out, stderr := runBisectJSON(t, planPath, filepath.Join(filepath.Dir(planPath), "x.db"))
	if v.Verdict != "found" || len(v.Culprits) != 1 || v.Culprits[0].Subject != "commit 33" || len(v.Skipped) == 0 || v.Skipped[0].Subject != "commit 31" {
		t.Fatalf("the bisect: %s\n%s", out, stderr)
	}
	if !strings.Contains(stderr, "does not build, skipped") {
		t.Errorf("a skipped commit is not said:\n%s", stderr)
	}
	_, planPath = bisectRepo(t, 64, 0.05, factor, func(i int) bool { return i == 31 || i == 32 })
	v, out, stderr = runBisectJSON(t, planPath, filepath.Join(filepath.Dir(planPath), "x.db"))
	if v.Verdict != "ambiguous" || len(v.Culprits) != 0 || len(v.Ambiguous) != 1 || len(v.Ambiguous[0].Commits) != 3 ||
		v.Ambiguous[0].Commits[2].Subject != "commit 33" || !strings.Contains(v.Ambiguous[0].Why, "only commits that do not build lie between") {
		t.Fatalf("a culprit whose parent does not build: %s\n%s", out, stderr)
	}
}

// A bisect cut by Ctrl-C while it builds a commit is interrupted (exit
// 130, resumable), and that commit is not recorded as one that does not
// build (an audit's interrupted build was, and the answer went wrong).
func TestBisectInterruptedInABuild(t *testing.T) {
	slow(t)
	t.Parallel()
	factor := func(i int) float64 {
		if i >= 33 {
			return 1.3
		}
		return 1
	}
	_, planPath := bisectRepo(t, 64, 0.02, factor, func(i int) bool { return i > 8 && i < 56 })
	mark := filepath.Join(t.TempDir(), "building")
	text, err := os.ReadFile(planPath)
	if err != nil {
		t.Fatal(err)
	}
	slowBuild := strings.Replace(string(text), "build: sh build.sh", `build: "if [ -e BROKEN ]; then touch `+mark+`; sleep 60; fi; sh build.sh"`, 1)
	if err := os.WriteFile(planPath, []byte(slowBuild), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(mark); err == nil {
				break
			}
		}
		cancel()
	}()
	db := filepath.Join(filepath.Dir(planPath), "x.db")
	_, stderr, err := iolab(t, ctx, "bisect", planPath, "--good", "main~63", "--bad", "main", "--metric", "cost", "--max-rounds", "150", "-q", "--db", db, "--json")
	if _, statErr := os.Stat(mark); statErr != nil {
		t.Fatalf("no build of a middle commit began (%v): %v\n%s", statErr, err, stderr)
	}
	if ExitCode(err) != 130 || strings.Contains(stderr, "does not build") || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("cut in a build: %v (exit %d)\n%s", err, ExitCode(err), stderr)
	}
}

// Ends that do not differ: said, and nothing is bisected; resumed, the
// answer is read back and nothing runs. The cost is constant (CV 0): with
// any noise, ends that are the same are told apart in up to 5% of
// searches by design (the sequence's error rate, checked in stats), and
// a CI run once saw it (-8.9% [-16.3%, -0.8%] at 8 rounds).
func TestBisectOfEndsThatDoNotDiffer(t *testing.T) {
	t.Parallel()
	_, planPath := bisectRepo(t, 64, 0, func(int) float64 { return 1 }, func(int) bool { return false })
	db := filepath.Join(filepath.Dir(planPath), "x.db")
	v, out, stderr := runBisectJSON(t, planPath, db, "--threshold", "10%")
	if v.Differ || len(v.Steps) != 1 || len(v.Culprits) != 0 || !strings.HasPrefix(v.Verdict, "the ends do not differ on cost") {
		t.Fatalf("the bisect: %s\n%s", out, stderr)
	}
	runs := countRows(t, db, `SELECT count(*) FROM runs`)
	text, _, err := iolab(t, context.Background(), "bisect", planPath, "--good", "main~63", "--bad", "main", "--metric", "cost", "--max-rounds", "150", "--threshold", "10%", "-q", "--db", db, "--resume")
	if err != nil || !strings.Contains(text, "the ends do not differ on cost: their difference lies within ±10%; nothing to bisect") {
		t.Errorf("the text (%v):\n%s", err, text)
	}
	if again := countRows(t, db, `SELECT count(*) FROM runs`); again != runs {
		t.Errorf("resuming a finished bisect ran %d runs more", again-runs)
	}
}

// A bisect killed (kill -9) in the middle of a step goes on with --resume:
// the steps it finished are read back, the cut one continues as the same
// experiment, and the answer is the culprit; resumed again, it runs
// nothing and draws its path (Chromium). Not parallel: Chromium takes
// every CPU for seconds, which would skew the tests that measure.
func TestBisectResumesAfterAKill(t *testing.T) {
	slow(t)
	factor := func(i int) float64 {
		if i >= 41 {
			return 1.15
		}
		return 1
	}
	_, planPath := bisectRepo(t, 64, 0.05, factor, func(int) bool { return false })
	bin, db := buildIolab(t), filepath.Join(filepath.Dir(planPath), "x.db")
	args := []string{"bisect", planPath, "--good", "main~63", "--bad", "main", "--metric", "cost", "--max-rounds", "150", "-q", "--db", db, "--json"}
	victim := startVictim(t, bin, args)
	// Killed once its third step (step 2) has stored a measured run.
	q := `SELECT count(*) FROM runs r JOIN experiments e ON e.id = r.experiment_id WHERE e.name LIKE '% step 2' AND r.status = 'ok'`
	for deadline := time.Now().Add(2 * time.Minute); countQuiet(db, q) < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the bisect never reached its third step; it said:\n%v", victim.Stdout)
		}
	}
	_ = victim.Process.Signal(syscall.SIGKILL)
	_ = victim.Wait()
	// The answer so far is kept after every step: show reads it by the
	// bisect's ID.
	id := bisectID(t, db)
	out, _, err := iolab(t, context.Background(), "show", id, "--db", db, "--json")
	var sofar bisectJSON
	decodeInto(t, out, &sofar)
	if err != nil || sofar.Verdict != "not finished" || len(sofar.Steps) < 2 {
		t.Errorf("show %s after the kill (%v): %s", id, err, out)
	}
	before := countQuiet(db, `SELECT count(*) FROM experiments`)
	v, out, stderr := runBisectJSON(t, planPath, db, "--resume")
	if v.Verdict != "found" || len(v.Culprits) != 1 || v.Culprits[0].Subject != "commit 41" {
		t.Fatalf("the resumed bisect: %s\n%s", out, stderr)
	}
	if !strings.Contains(stderr, "bisect step 1 (stored)") {
		t.Errorf("the finished steps were not read back:\n%s", stderr)
	}
	after := countQuiet(db, `SELECT count(*) FROM experiments`)
	if steps := countQuiet(db, `SELECT count(DISTINCT name) FROM experiments`); after != steps || after-before != len(v.Experiments)-3 {
		t.Errorf("%d experiments before the resume, %d after, %d steps: the cut step was not continued as itself", before, after, len(v.Experiments))
	}
	// The answer again, from the store alone, and its page as Chromium
	// draws it.
	html := filepath.Join(filepath.Dir(planPath), "bisect.html")
	again, _, stderr := runBisectJSON(t, planPath, db, "--resume", "--html", html)
	if len(again.Experiments) != len(v.Experiments) || countQuiet(db, `SELECT count(*) FROM experiments`) != after || !strings.Contains(stderr, fmt.Sprintf("step %d (stored)", len(v.Experiments)-1)) {
		t.Errorf("a resume of a finished bisect ran more: %d experiments\n%s", countQuiet(db, `SELECT count(*) FROM experiments`), stderr)
	}
	// report draws the bisect by its ID, the page bisect --html wrote;
	// show prints its answer.
	reported := filepath.Join(filepath.Dir(planPath), "report.html")
	if _, _, err := iolab(t, context.Background(), "report", id, "--db", db, "-o", reported); err != nil {
		t.Fatal(err)
	}
	if a, b := readBytes(t, html), readBytes(t, reported); string(a) != string(b) {
		t.Errorf("report %s wrote another page than bisect --html did", id)
	}
	page := loadInChromium(t, reported)
	if page.Plots["bisect-path"] != 1 || len(page.Problems) > 0 || !strings.Contains(page.Text, "culprit") || !strings.Contains(page.Text, "commit 41") {
		t.Errorf("Chromium drew %v (problems %v):\n%s", page.Plots, page.Problems, page.Text)
	}
	if text, _, err := iolab(t, context.Background(), "show", id, "--db", db); err != nil || !strings.Contains(text, "found") || !strings.Contains(text, `"commit 41"`) {
		t.Errorf("show %s (%v):\n%s", id, err, text)
	}
	_, _, err = iolab(t, context.Background(), "bisect", planPath, "--good", "main~63", "--bad", "main", "--metric", "cost", "--max-rounds", "99", "--db", db, "--resume")
	if err == nil || !strings.Contains(err.Error(), "--resume: bisect ") || !strings.Contains(err.Error(), "ran with --min-rounds 6 --max-rounds 150") {
		t.Errorf("a resume with other rounds: %v", err)
	}
}

// bisectID is the one bisect db keeps.
func bisectID(t *testing.T, db string) string {
	t.Helper()
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var id string
	if err := conn.QueryRow(`SELECT id FROM bisects`).Scan(&id); err != nil {
		t.Fatalf("no bisect kept in %s: %v", db, err)
	}
	return id
}

// What bisect cannot run is refused before anything is built or stored,
// naming the flag or the plan: a missing end, ends the wrong way round,
// a metric the workload does not measure, a plan without a git variant,
// one of more than one cell.
func TestBisectRefusesWhatItCannotRun(t *testing.T) {
	t.Parallel()
	_, planPath := bisectRepo(t, 4, 0.05, func(int) float64 { return 1 }, nil)
	dir := filepath.Dir(planPath)
	db := filepath.Join(dir, "x.db")
	writeFiles(t, dir, map[string]string{
		"nogit.yaml":  "name: n\nvariants:\n  - name: a\n    env: {X: '1'}\nworkloads:\n  - cmd: {run: 'true'}\n",
		"matrix.yaml": "name: m\nvariants:\n  - name: a\n    git: {repo: repo, ref: main}\nworkloads:\n  - cmd: {run: 'echo {{n}}'}\n    matrix: {n: [1, 2]}\n",
	})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{planPath, "--bad", "main"}, "--good and --bad are required"},
		{[]string{planPath, "--good", "main", "--bad", "main~3"}, "--good main is not an ancestor of --bad main~3"},
		{[]string{planPath, "--good", "nosuchref", "--bad", "main"}, `--good "nosuchref": not a commit of`},
		{[]string{planPath, "--good", "main~3", "--bad", "main", "--metric", "no_such_metric"}, `--metric "no_such_metric": not a metric this plan's cmd workload measures`},
		{[]string{filepath.Join(dir, "nogit.yaml"), "--good", "main~3", "--bad", "main"}, "no variant with git: {repo, ref}"},
		{[]string{filepath.Join(dir, "matrix.yaml"), "--good", "main~3", "--bad", "main"}, "bisect judges one cell, and the plan has 2 a variant"},
		{[]string{planPath, "--good", "main~3", "--bad", "main", "--resume"}, "--resume: no bisect of variant prog"},
		{[]string{planPath, "--good", "main~3", "--bad", "main", "--ports", "9-1"}, `--ports "9-1": want a range of ports`},
	} {
		_, _, err := iolab(t, context.Background(), append([]string{"bisect", "--db", db}, c.args...)...)
		if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v (exit %d), want %q", c.args, err, ExitCode(err), c.want)
		}
	}
	if n := countQuiet(db, `SELECT count(*) FROM experiments`); n != 0 {
		t.Errorf("%d experiments stored by refused bisects", n)
	}
	// A metric of the catalogue the workload's runs do not measure ends
	// the first step at its first look, saying so (not at --max-rounds).
	_, _, err := iolab(t, context.Background(), "bisect", planPath, "--good", "main~3", "--bad", "main", "--metric", "ops_per_s", "-q", "--db", db, "--json")
	if err == nil || !strings.Contains(err.Error(), "--metric ops_per_s: the runs of the ends measured no such figure") ||
		countQuiet(db, `SELECT count(*) FROM runs WHERE NOT warmup`) != 2*6 {
		t.Errorf("a metric no run measured: %v, %d runs", err, countQuiet(db, `SELECT count(*) FROM runs WHERE NOT warmup`))
	}
}

// The example of the docs: a real program (it writes a file and hashes
// it) timed by its wall time, whose commit "save: check the index twice"
// doubles its hashing — found: interleaved rounds keep a busy machine's
// noise off a change of +80%.
func TestBisectExample(t *testing.T) {
	slow(t)
	t.Parallel()
	dir := t.TempDir()
	if out, err := exec.Command("sh", "../../examples/bisect/history.sh", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, stderr, err := iolab(t, context.Background(), "bisect", filepath.Join(dir, "plan.yaml"), "--good", "main~23", "--bad", "main", "-q", "--db", filepath.Join(dir, "x.db"))
	if err != nil || !strings.Contains(out, "  found\n") || !strings.Contains(out, `"save: check the index twice, to be safe"`) {
		t.Fatalf("the example's bisect (%v):\n%s\n%s", err, out, stderr)
	}
}

func readBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A bisect is one thing to import and to delete: import copies its answer
// beside its steps (show reads it from the new store; a second import is
// refused), and rm of its ID or of any step deletes the answer and every
// step — never an experiment of no bisect.
func TestBisectImportedAndDeletedWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, planPath := bisectRepo(t, 64, 0.05, func(int) float64 { return 1 }, func(int) bool { return false })
	dir := filepath.Dir(planPath)
	db, merged := filepath.Join(dir, "x.db"), filepath.Join(dir, "merged.db")
	v, _, _ := runBisectJSON(t, planPath, db, "--threshold", "10%")
	id := bisectID(t, db)
	if len(v.Experiments) == 0 {
		t.Fatalf("bisect %s stored no step", id)
	}
	if _, stderr, err := iolab(t, ctx, "cmd", "true", "--rounds", "1", "--warmup", "0", "-q", "--db", db); err != nil {
		t.Fatalf("an experiment of no bisect: %v\n%s", err, stderr)
	}
	before, _, err := iolab(t, ctx, "show", id, "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, err := iolab(t, ctx, "import", db, "--db", merged)
	if err != nil || !strings.Contains(out, "imported bisect "+id) {
		t.Fatalf("import (%v): %s\n%s", err, out, stderr)
	}
	after, _, err := iolab(t, ctx, "show", id, "--db", merged)
	if err != nil || after != before {
		t.Errorf("the bisect's answer in the store it was imported into (%v):\n%s\nwant\n%s", err, after, before)
	}
	if _, stderr, err := iolab(t, ctx, "import", db, "--db", merged); err == nil {
		t.Errorf("a second import was not refused: %s", stderr)
	}

	// By a step's ID in one store, by the bisect's in the other.
	for _, c := range []struct{ db, arg string }{{merged, v.Experiments[0]}, {db, id}} {
		out, stderr, err := iolab(t, ctx, "rm", c.arg, "--yes", "--db", c.db)
		if err != nil || !strings.Contains(out, "deleted bisect "+id) {
			t.Fatalf("rm %s (%v): %s\n%s", c.arg, err, out, stderr)
		}
		if _, _, err := iolab(t, ctx, "show", id, "--db", c.db); err == nil || !strings.Contains(err.Error(), "no such") {
			t.Errorf("rm %s: the bisect is still shown (%v)", c.arg, err)
		}
		for _, step := range v.Experiments {
			if _, _, err := iolab(t, ctx, "show", step, "--db", c.db); err == nil {
				t.Errorf("rm %s: step %s is still stored", c.arg, step)
			}
		}
		if ls, _, err := iolab(t, ctx, "ls", "--db", c.db); err != nil || !strings.Contains(ls, "cmd") {
			t.Errorf("rm %s took the experiment of no bisect with it (%v):\n%s", c.arg, err, ls)
		}
	}
}
