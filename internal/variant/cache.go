package variant

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/iolab/iolab/internal/outtail"
	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/units"
)

// Cache keeps a git variant's build across experiments and bisects: the
// tree its build left (but .git), by what makes two builds the same — the
// repository, the commit, the build command, the workdir, the env the plan
// gives it and the environment it names ($NAME in the build command, and
// PATH). A variant found there is checked out as always, and the cached
// tree copied over its checkout instead of building: the same files, a
// worktree of its own (nothing a run writes reaches the cache). A build
// that failed is not kept. Its size is bounded: the entries used longest
// ago go first. Processes that build the same thing at once (segments)
// wait for the first.
type Cache struct {
	Dir string
	Max int64 // bytes
}

// Cache's environment: IOLAB_BUILD_CACHE is its directory ("off": none;
// default the user's cache directory's iolab/builds, without one the
// temporary directory's iolab-builds-UID), IOLAB_BUILD_CACHE_SIZE its
// bound (default DefaultCacheSize).
const (
	CacheEnv         = "IOLAB_BUILD_CACHE"
	CacheSizeEnv     = "IOLAB_BUILD_CACHE_SIZE"
	DefaultCacheSize = 4 << 30
)

// DefaultCache is the cache the environment asks for; nil when it is off.
func DefaultCache() (*Cache, error) {
	dir := os.Getenv(CacheEnv)
	if dir == "off" {
		return nil, nil
	}
	if dir == "" {
		// No home (a bare CI runner): the temporary directory's, per user.
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("iolab-builds-%d", os.Getuid()))
		if base, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(base, "iolab", "builds")
		}
	}
	c := &Cache{Dir: dir, Max: DefaultCacheSize}
	if s := os.Getenv(CacheSizeEnv); s != "" {
		n, err := units.ParseSize(s)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s=%q: want a size such as 4g", CacheSizeEnv, s)
		}
		c.Max = n
	}
	return c, nil
}

// Entry is one cached build, as `iolab builds` lists it.
type Entry struct {
	Key     string    `json:"key"`
	Repo    string    `json:"repo"`
	Commit  string    `json:"commit"`
	Build   string    `json:"build"` // as written, its registered secrets masked
	Built   time.Time `json:"built"`
	Used    time.Time `json:"used"`
	Bytes   int64     `json:"bytes"`
	Variant string    `json:"variant"` // the first that built it
}

// envName is $NAME or ${NAME} in a build command.
var envName = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)

// cacheKey is buildKey with the environment the build command names.
func cacheKey(repo, commit string, v *Variant) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00PATH=%s", buildKey(repo, commit, v.spec), os.Getenv("PATH"))
	names := map[string]bool{}
	for _, m := range envName.FindAllStringSubmatch(v.spec.Build, -1) {
		names[m[1]] = true
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		if _, inPlan := v.spec.Env[n]; !inPlan {
			fmt.Fprintf(h, "\x00%s=%s", n, os.Getenv(n))
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:20]
}

// prepare builds v, checked out at its worktree, or copies its cached
// build over it; it says which through line.
func (c *Cache) prepare(ctx context.Context, v *Variant, line func(string)) error {
	repo := v.abs(v.planDir, v.spec.Git.Repo)
	key := cacheKey(repo, v.Commit, v)
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("the build cache %s: %w; set %s to another directory, or to off", c.Dir, err, CacheEnv)
	}
	unlock, err := lockFile(ctx, filepath.Join(c.Dir, key+".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	entry := filepath.Join(c.Dir, key)
	if e, err := readEntry(entry); err == nil {
		line(fmt.Sprintf("from the build cache (%s, built %s)", entry, e.Built.Format(time.DateTime)))
		if err := copyTree(ctx, filepath.Join(entry, "tree"), v.root); err != nil {
			return fmt.Errorf("variant %s: the cached build %s: %w", v.Name, entry, err)
		}
		e.Used, v.FromCache = time.Now(), entry
		return writeEntry(entry, e)
	}
	if err := v.build(ctx, line); err != nil {
		return err
	}
	// Kept for the next experiment; a cache that cannot keep it costs a
	// build next time, never this experiment.
	if err := c.keep(ctx, entry, Entry{Key: key, Repo: repo, Commit: v.Commit, Build: redact.String(v.spec.Build), Built: time.Now(), Used: time.Now(), Variant: v.Name}, v.root); err != nil {
		line("not kept in the build cache: " + err.Error())
	}
	return nil
}

// keep copies the built tree into the cache, whole or not at all, and
// bounds the cache.
func (c *Cache) keep(ctx context.Context, entry string, e Entry, root string) error {
	tmp := entry + ".new"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if err := copyTree(ctx, root, filepath.Join(tmp, "tree")); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	_ = os.RemoveAll(filepath.Join(tmp, "tree", ".git")) // the worktree's link to its repository
	e.Bytes = treeBytes(tmp)
	if err := writeEntry(tmp, e); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	_ = os.RemoveAll(entry)
	if err := os.Rename(tmp, entry); err != nil {
		return err
	}
	return c.evict(e.Key)
}

// evict removes the entries used longest ago until the cache is within
// its bound, never keep (the one just made).
func (c *Cache) evict(keep string) error {
	entries, err := c.List()
	if err != nil {
		return err
	}
	total := int64(0)
	for _, e := range entries {
		total += e.Bytes
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Used.Before(entries[j].Used) })
	for _, e := range entries {
		if total <= c.Max {
			break
		}
		if e.Key == keep {
			continue
		}
		if err := c.remove(e.Key); err != nil {
			return err
		}
		total -= e.Bytes
	}
	return nil
}

// remove removes one entry, under its lock.
func (c *Cache) remove(key string) error {
	unlock, err := lockFile(context.Background(), filepath.Join(c.Dir, key+".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	return os.RemoveAll(filepath.Join(c.Dir, key))
}

// List is every entry, the most recently used first.
func (c *Cache) List() ([]Entry, error) {
	dirs, err := os.ReadDir(c.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, d := range dirs {
		if !d.IsDir() || strings.HasSuffix(d.Name(), ".new") {
			continue
		}
		if e, err := readEntry(filepath.Join(c.Dir, d.Name())); err == nil {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Used.After(out[j].Used) })
	return out, nil
}

// Clear removes every entry; it returns how many.
func (c *Cache) Clear() (int, error) {
	entries, err := c.List()
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		if err := c.remove(e.Key); err != nil {
			return 0, err
		}
	}
	return len(entries), nil
}

const entryFile = "entry.json"

func readEntry(dir string) (Entry, error) {
	var e Entry
	b, err := os.ReadFile(filepath.Join(dir, entryFile))
	if err == nil {
		err = json.Unmarshal(b, &e)
	}
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "tree"))
	}
	return e, err
}

func writeEntry(dir string, e Entry) error {
	b, _ := json.MarshalIndent(e, "", "  ")
	return os.WriteFile(filepath.Join(dir, entryFile), b, 0o644)
}

// copyTree copies src's files over dst (made if missing) as they are:
// modes, times and links (cp -a; a copy on write where the file system
// has one).
func copyTree(ctx context.Context, src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "cp", "-a", "-f", "--reflink=auto", src+"/.", dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cp -a %s %s: %v: %s", src, dst, err, outtail.OneLine(out))
	}
	return nil
}

func treeBytes(dir string) int64 {
	n := int64(0)
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// lockFile takes an exclusive lock on path (made if missing), waiting for
// another process that holds it until ctx ends; it returns what lets go.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("the build cache: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("the build cache: lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
