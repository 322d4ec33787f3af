package cli

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docs/internals.md draws the house as it is: every package has its line
// in the layout, and every package named there exists.
func TestInternalsNamesEveryPackage(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/internals.md")
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(doc), "## Layout")
	if !ok {
		t.Fatal("docs/internals.md has no ## Layout")
	}
	layout, _, _ = strings.Cut(strings.TrimPrefix(strings.TrimSpace(layout), "```\n"), "```")
	var named []string
	for _, m := range regexp.MustCompile(`(?m)^((?:cmd|internal)/[a-z0-9/]+)\s`).FindAllStringSubmatch(layout, -1) {
		named = append(named, m[1])
	}
	out, err := exec.Command("go", "list", "github.com/iolab/iolab/cmd/...", "github.com/iolab/iolab/internal/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		pkgs = append(pkgs, strings.TrimPrefix(p, "github.com/iolab/iolab/"))
	}
	for _, p := range pkgs {
		if !slices.Contains(named, p) {
			t.Errorf("package %s has no line in docs/internals.md's layout", p)
		}
	}
	for _, n := range named {
		if !slices.Contains(pkgs, n) {
			t.Errorf("docs/internals.md names %s, which is no package", n)
		}
	}
}
