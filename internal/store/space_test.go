package store

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/badinput"
)

// A store on a disk with no space left is bad input (exit 2), said as
// such: a write when the disk fills under an open store, opening a new
// file there, and an existing one (whose log cannot grow: SQLite's I/O
// error) when it opens or first writes. Needs root, for a tmpfs of 512 KiB.
func TestFullDiskIsSaidAsSuch(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=512k"); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(dir, "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	fill := func(name string) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for chunk := make([]byte, 4096); err == nil; {
			_, err = f.Write(chunk)
		}
	}
	fill("fill")
	want := func(what string, err error) {
		t.Helper()
		var bad *badinput.Error
		if !errors.As(err, &bad) || !strings.Contains(err.Error(), "no space left on its disk: free some, or point --db at another disk") {
			t.Errorf("%s on a full disk: %v (bad input: %v)", what, err, bad != nil)
		}
	}
	var werr error
	for i := 0; werr == nil && i < 1000; i++ {
		e := &Experiment{ID: "e" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + time.Now().Format("150405.000000000"), Name: strings.Repeat("n", 4000),
			Command: "c", Plan: json.RawMessage(`{}`), CreatedAt: time.Now(), Status: StatusOK}
		werr = s.CreateExperiment(ctx, e, nil)
	}
	want("a write", werr)
	s.Close() // its log folded back, and the room it took freed
	fill("fill2")
	_, err = Open(ctx, filepath.Join(dir, "new.db"))
	want("opening a new file", err)
	// Opened again, it says so when it opens, or when it first writes.
	again, err := Open(ctx, filepath.Join(dir, "x.db"))
	if err == nil {
		err = again.CreateExperiment(ctx, &Experiment{ID: "late", Name: "x", Command: "c", Plan: json.RawMessage(`{}`), CreatedAt: time.Now(), Status: StatusOK}, nil)
		again.Close()
	}
	want("the file opened again", err)
}
