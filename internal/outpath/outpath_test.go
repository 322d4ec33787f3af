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
