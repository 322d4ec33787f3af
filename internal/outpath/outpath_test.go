package outpath

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/iolab/iolab/internal/badinput"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	ours := func(head []byte) bool { return bytes.HasPrefix(head, []byte("iolab-log\n")) }
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	passwd := write("passwd", "root:x:0:0:root:/root:/bin/bash\n")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(passwd, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, refused string
	}{
		{filepath.Join(dir, "new.csv"), ""},
		{write("empty", ""), ""},
		{write("ours", "iolab-log\n1,2\n"), ""},
		{os.DevNull, ""},
		{"/dev/full", ""},
		{fifo, ""},
		{passwd, "a file iolab did not write"},
		{link, "a file iolab did not write"}, // a link is judged by what it points at
		{dir, "a directory"},
		{"/dev/zero", "not a regular file"},
	} {
		err := Check("--lat-log", c.path, ours)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", c.path, err)
		case c.refused != "" && (err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), c.refused) || !strings.HasPrefix(err.Error(), "--lat-log "+c.path+": ")):
			t.Errorf("%s: %v, want a usage error naming the flag and the path, saying %q", c.path, err, c.refused)
		}
	}
	if b, _ := os.ReadFile(passwd); string(b) != "root:x:0:0:root:/root:/bin/bash\n" {
		t.Errorf("the checked file changed: %q", b)
	}
}

// A whole output replaces only what Check allows, all at once, and every
// refusal or failure names the flag and the path asked for — never the
// temporary file it goes through; a directory that is not there is bad
// input.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	ours := func(head []byte) bool { return bytes.HasPrefix(head, []byte("<page>")) }
	page := filepath.Join(dir, "r.html")
	for _, text := range []string{"<page>one", "<page>two"} {
		if err := Write("-o", page, []byte(text), ours); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(page); string(b) != text {
			t.Fatalf("wrote %q, want %q", b, text)
		}
	}
	foreign := filepath.Join(dir, "notes.txt")
	os.WriteFile(foreign, []byte("mine"), 0o644)
	missing := filepath.Join(dir, "nowhere", "r.html")
	for path, want := range map[string]string{foreign: "a file iolab did not write", missing: "no directory " + filepath.Dir(missing)} {
		err := Write("-o", path, []byte("<page>"), ours)
		if err == nil || !badinput.Is(err) || !strings.HasPrefix(err.Error(), "-o "+path+": ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a usage error naming -o and the path, saying %q", path, err, want)
		}
	}
	if b, _ := os.ReadFile(foreign); string(b) != "mine" {
		t.Errorf("a foreign file changed: %q", b)
	}
	// A directory no file can be made in (/proc: not even by root).
	unwritable := "/proc/r.html"
	if err := Write("-o", unwritable, []byte("<page>"), ours); err == nil || strings.Contains(err.Error(), ".iolab-") || !strings.HasPrefix(err.Error(), "-o "+unwritable+": ") {
		t.Errorf("a directory it may not write in: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".iolab-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
