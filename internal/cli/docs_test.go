package cli

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the repository this package's tests run in.
const repoRoot = "../.."

// The README's quick start works as a newcomer follows it: in a fresh
// copy of the repository, iolab is built as the README's install says,
// then every command the quick start shows runs, in order, in an empty
// directory — and says what the README says it says.
func TestReadmeQuickStart(t *testing.T) {
	slow(t)
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)<!-- quickstart -->\n```sh\n(.*?)```").FindAllSubmatch(readme, -1)
	if len(blocks) != 3 {
		t.Fatalf("%d quick-start blocks in README.md, want 3 (measure, compare, read)", len(blocks))
	}
	clone := freshCopy(t)
	install := regexp.MustCompile("go build -o iolab ./cmd/iolab").Find(readme)
	if install == nil {
		t.Fatal("README.md no longer says how to build iolab from a clone")
	}
	if out, err := shell(clone, clone, string(install)); err != nil {
		t.Fatalf("%s: %v\n%s", install, err, out)
	}
	work := t.TempDir()
	var outs []string
	for _, b := range blocks {
		out, err := shell(work, clone, string(b[1]))
		if err != nil {
			t.Fatalf("%s: %v\n%s", b[1], err, out)
		}
		outs = append(outs, out)
	}
	if !strings.Contains(outs[0], "randread") || !strings.Contains(outs[0], "IOPS") {
		t.Errorf("measure: %s", outs[0])
	}
	// The README shows the answer as it reads on a quiet machine; on a
	// loaded one bs1m can take less than half the time, which the answer
	// gives as a ratio.
	if !regexp.MustCompile(`the answer \(wall time, lower is better; each variant against bs4k\):\n  bs1m: (\d+(\.\d)?% less wall time than bs4k|0\.\d+x the wall time of bs4k) \[.*\], faster\n`).MatchString(outs[1]) {
		t.Errorf("compare: not the answer the README shows:\n%s", outs[1])
	}
	page, err := os.ReadFile(filepath.Join(work, "report.html"))
	if err != nil || !strings.Contains(string(page), `<ul class="answers">`) {
		t.Errorf("read: report.html without its answers (%v)", err)
	}
}

// shell runs script in dir with the clone's iolab first on PATH.
func shell(dir, clone, script string) (string, error) {
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+clone+string(os.PathListSeparator)+os.Getenv("PATH"), "IOLAB_DB=", "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// freshCopy is the repository as a clone of it would hold it: the files git
// tracks and those it would (not yet added); outside a git checkout, every
// file but stores and test binaries.
func freshCopy(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	var files []string
	if out, err := exec.Command("git", "-C", repoRoot, "ls-files", "--cached", "--others", "--exclude-standard").Output(); err == nil && len(out) > 0 {
		files = strings.Fields(string(out))
	} else {
		_ = filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && d.Name() == ".git":
				return filepath.SkipDir
			case d.IsDir(), strings.HasSuffix(p, ".db"), strings.HasSuffix(p, ".test"):
				return nil
			}
			rel, _ := filepath.Rel(repoRoot, p)
			files = append(files, rel)
			return nil
		})
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			continue // deleted in the work tree, not yet in git's index
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// Every link in the README and docs/ stays in the repository and leads
// somewhere: a file that exists, and a heading of it for an anchor.
func TestDocsLinksStayInTheRepository(t *testing.T) {
	t.Parallel()
	pages, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	pages = append(pages, filepath.Join(repoRoot, "README.md"))
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target, frag, _ := strings.Cut(m[1], "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				t.Errorf("%s: %s leaves the repository", page, m[1])
				continue
			}
			file := page
			if target != "" {
				file = filepath.Join(filepath.Dir(page), target)
			}
			abs, _ := filepath.Abs(file)
			root, _ := filepath.Abs(repoRoot)
			if !strings.HasPrefix(abs, root+string(filepath.Separator)) {
				t.Errorf("%s: %s leads out of the repository", page, m[1])
				continue
			}
			body, err := os.ReadFile(file)
			if err != nil {
				t.Errorf("%s: %s: %v", page, m[1], err)
				continue
			}
			if frag != "" && !slugs(string(body))[frag] {
				t.Errorf("%s: %s: no heading makes the anchor #%s", page, m[1], frag)
			}
		}
	}
}

// slugs are the anchors GitHub makes of a Markdown page's headings.
func slugs(md string) map[string]bool {
	out := map[string]bool{}
	fence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		h = regexp.MustCompile(`[^\p{L}\p{N} _-]`).ReplaceAllString(h, "")
		out[strings.ReplaceAll(h, " ", "-")] = true
	}
	return out
}
