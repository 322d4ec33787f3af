package variant

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/iolab/iolab/internal/outtail"
	"github.com/iolab/iolab/internal/plan"
)

// Builds keeps git variants checked out and built, by repository, commit
// and build, for as long as it lives: a bisect measures the ends of its
// interval in every step, and builds each commit once. A build that failed
// fails again at once. Close removes every worktree it made.
type Builds struct {
	dir   string
	cache *Cache // builds kept across bisects (nil: none)
	mu    sync.Mutex
	done  map[string]*build
}

type build struct {
	dir, commit, repo string
	err               error
}

// NewBuilds keeps its worktrees under dir, building through cache (nil:
// none).
func NewBuilds(dir string, cache *Cache) *Builds {
	return &Builds{dir: dir, cache: cache, done: map[string]*build{}}
}

// key is what makes two builds the same: the repository, the commit the
// ref names, and how the variant builds (its command, workdir and env as
// written).
func buildKey(repo, commit string, spec plan.Variant) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s", repo, commit, spec.Build, spec.Workdir)
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		fmt.Fprintf(h, "\x00%s=%s", k, spec.Env[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// prepare checks v out and builds it, or finds it built.
func (b *Builds) prepare(ctx context.Context, v *Variant, line func(string)) error {
	repo := v.abs(v.planDir, v.spec.Git.Repo)
	out, err := runGit(ctx, repo, "rev-parse", "--verify", "--end-of-options", v.spec.Git.Ref+"^{commit}")
	if err != nil {
		return fmt.Errorf("variant %s: git rev-parse %q in %s failed: %s", v.Name, v.spec.Git.Ref, repo, outtail.OneLine(out))
	}
	commit := strings.TrimSpace(string(out))
	key := buildKey(repo, commit, v.spec)
	b.mu.Lock()
	defer b.mu.Unlock()
	if got := b.done[key]; got != nil {
		if got.err != nil {
			return got.err
		}
		v.Workdir, v.Commit = got.dir, got.commit
		if v.spec.Workdir != "" {
			v.Workdir = v.abs(v.Workdir, v.spec.Workdir)
		}
		return nil
	}
	dir := filepath.Join(b.dir, key)
	if err := v.checkout(ctx, dir); err != nil {
		return err // a checkout that failed (Ctrl-C, a lock) is tried again
	}
	// The worktree is the cache's, not the variant's: it outlives it.
	v.cleanup = v.cleanup[:len(v.cleanup)-1]
	got := &build{dir: dir, commit: v.Commit, repo: repo}
	if v.spec.Workdir != "" {
		v.Workdir = v.abs(v.Workdir, v.spec.Workdir)
	}
	if err := v.buildVia(ctx, b.cache, line); err != nil {
		if ctx.Err() != nil {
			b.remove(got)
			return err // cut short, not a build that fails
		}
		got.err = err
	}
	b.done[key] = got
	return got.err
}

// Close removes the worktrees.
func (b *Builds) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, got := range b.done {
		b.remove(got)
		delete(b.done, k)
	}
	return os.RemoveAll(b.dir)
}

func (b *Builds) remove(got *build) {
	_, _ = runGit(context.Background(), got.repo, "worktree", "remove", "--force", got.dir)
}
