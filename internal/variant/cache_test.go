package variant

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iolab/iolab/internal/plan"
)

// gitRepo makes a repository of one commit.
func gitRepo(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "one"}} {
		if args[0] == "add" {
			if err := os.WriteFile(filepath.Join(repo, "src.txt"), []byte("source\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

// A git variant's build is made once and copied into the next checkout of
// the same commit and build: a worktree of its own, with what the build
// left and nothing a run wrote since; another build command builds again;
// a build that fails is not kept; the cache keeps to its bound, the entry
// used longest ago going first.
func TestBuildCache(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := gitRepo(t)
	count := filepath.Join(t.TempDir(), "builds")
	c := &Cache{Dir: t.TempDir(), Max: 1 << 30}
	spec := plan.Variant{Name: "a", Git: &plan.GitRef{Repo: repo, Ref: "HEAD"}, Env: map[string]string{"IOLAB_TEST_COUNT": count}, Build: "echo >> $IOLAB_TEST_COUNT; echo made > built.txt"}
	builds := func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "\n")
	}
	prepare := func(spec plan.Variant) (*Variant, error) {
		t.Helper()
		v, err := PrepareFrom(context.Background(), nil, c, spec, repo, t.TempDir(), plan.PortRange{}, nil)
		if err == nil {
			t.Cleanup(func() { v.Close() })
		}
		return v, err
	}
	first, err := prepare(spec)
	if err != nil || builds() != 1 || first.FromCache != "" {
		t.Fatalf("first: %v, %d builds, from %q", err, builds(), first.FromCache)
	}
	if err := os.WriteFile(filepath.Join(first.Workdir, "written-by-a-run"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := prepare(spec)
	if err != nil || builds() != 1 || second.FromCache == "" || second.Workdir == first.Workdir {
		t.Fatalf("second: %v, %d builds, from %q, in %s", err, builds(), second.FromCache, second.Workdir)
	}
	if b, err := os.ReadFile(filepath.Join(second.Workdir, "built.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("the cached build's file: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(second.Workdir, "written-by-a-run")); err == nil {
		t.Errorf("what a run wrote in a checkout reached the next")
	}
	if head, err := Git(context.Background(), second.Workdir, "rev-parse", "HEAD"); err != nil || strings.TrimSpace(head) != second.Commit || second.Commit == "" {
		t.Errorf("the copy is no worktree of the commit: %q %v (commit %s)", head, err, second.Commit)
	}

	other := spec
	other.Build += "; echo other > other.txt"
	if v, err := prepare(other); err != nil || builds() != 2 || v.FromCache != "" {
		t.Errorf("another build command: %v, %d builds", err, builds())
	}
	failing := spec
	failing.Build = "echo >> $IOLAB_TEST_COUNT; exit 3"
	for i := range 2 {
		if _, err := prepare(failing); err == nil || builds() != 3+i {
			t.Errorf("a failing build, try %d: %v, %d builds (a failure is not kept)", i+1, err, builds())
		}
	}
	entries, err := c.List()
	if err != nil || len(entries) != 2 || entries[0].Build != other.Build {
		t.Fatalf("the cache lists %+v, %v; want the two builds that ended well, the last used first", entries, err)
	}
	c.Max = 1 // room for the newest alone
	third := spec
	third.Build += "; true"
	if _, err := prepare(third); err != nil {
		t.Fatal(err)
	}
	if entries, _ := c.List(); len(entries) != 1 || entries[0].Build != third.Build {
		t.Errorf("past its bound the cache keeps %+v, want the newest alone", entries)
	}
	if n, err := c.Clear(); n != 1 || err != nil {
		t.Errorf("clear: %d, %v", n, err)
	}
}
