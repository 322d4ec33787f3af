package bisectrun

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/iolab/iolab/internal/badinput"
)

// The range a bisect searches: with --first-parent a merged branch's own
// commits are left out (the merge stands for them); without, a range that
// holds merges is refused — its commits are no single line to halve.
func TestBisectRangeFirstParent(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	git("commit", "-q", "--allow-empty", "-m", "base")
	git("checkout", "-q", "-b", "topic")
	git("commit", "-q", "--allow-empty", "-m", "topic 1")
	git("commit", "-q", "--allow-empty", "-m", "topic 2")
	git("checkout", "-q", "main")
	git("commit", "-q", "--allow-empty", "-m", "main 1")
	git("merge", "-q", "--no-ff", "-m", "merge topic", "topic")
	git("commit", "-q", "--allow-empty", "-m", "main 2")
	cs, err := gitRange(context.Background(), repo, "main~3", "main", true)
	var got []string
	for _, c := range cs {
		got = append(got, c.Subject)
	}
	if err != nil || strings.Join(got, ", ") != "base, main 1, merge topic, main 2" {
		t.Errorf("--first-parent: %v %v", got, err)
	}
	_, err = gitRange(context.Background(), repo, "main~3", "main", false)
	if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "holds 1 merge(s), so its commits are no single line to halve; give --first-parent") {
		t.Errorf("a range with a merge: %v", err)
	}
}
