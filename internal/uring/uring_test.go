package uring

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestWriteFsyncRead(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := New(8)
	if err != nil {
		t.Skipf("io_uring unavailable here: %v", err)
	}
	defer r.Close()
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())

	blocks := [][]byte{bytes.Repeat([]byte("a"), 4096), bytes.Repeat([]byte("b"), 4096)}
	for i, b := range blocks {
		if !r.Queue(OpWrite, fd, b, int64(i*4096), uint64(i)) {
			t.Fatal("queue full")
		}
	}
	got := map[uint64]int32{}
	for len(got) < 2 {
		if err := r.SubmitAndWait(1); err != nil {
			t.Fatal(err)
		}
		r.Reap(func(c CQE) { got[c.UserData] = c.Res })
	}
	if got[0] != 4096 || got[1] != 4096 {
		t.Fatalf("write results %v", got)
	}
	r.QueueFsync(fd, false, 7)
	if err := r.SubmitAndWait(1); err != nil {
		t.Fatal(err)
	}
	r.Reap(func(c CQE) {
		if c.UserData != 7 || c.Res != 0 {
			t.Fatalf("fsync completion %+v", c)
		}
	})
	buf := make([]byte, 4096)
	r.Queue(OpRead, fd, buf, 4096, 9)
	if err := r.SubmitAndWait(1); err != nil {
		t.Fatal(err)
	}
	if n := r.Reap(func(c CQE) {
		if c.Res != 4096 {
			t.Fatalf("read completion %+v", c)
		}
	}); n != 1 {
		t.Fatalf("reaped %d completions, want 1", n)
	}
	if !bytes.Equal(buf, blocks[1]) {
		t.Fatal("read back different bytes")
	}
	// A full queue reports false rather than overwriting.
	for i := 0; i < 8; i++ {
		if !r.Queue(OpRead, fd, buf, 0, 100) {
			t.Fatalf("queue full after %d", i)
		}
	}
	if r.Queue(OpRead, fd, buf, 0, 100) {
		t.Fatal("queued a ninth request in an 8-entry ring")
	}
}

func TestFixedBuffers(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := New(4)
	if err != nil {
		t.Skipf("io_uring unavailable here: %v", err)
	}
	defer r.Close()
	mem := make([]byte, 8192)
	if err := r.RegisterBuffer(mem); err != nil {
		t.Skipf("cannot register buffers here: %v", err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	copy(mem[:4096], bytes.Repeat([]byte("z"), 4096))
	r.Queue(OpWriteFixed, int(f.Fd()), mem[:4096], 0, 1)
	if err := r.SubmitAndWait(1); err != nil {
		t.Fatal(err)
	}
	r.Reap(func(c CQE) {
		if c.Res != 4096 {
			t.Fatalf("fixed write: %+v", c)
		}
	})
	r.Queue(OpReadFixed, int(f.Fd()), mem[4096:], 0, 2)
	if err := r.SubmitAndWait(1); err != nil {
		t.Fatal(err)
	}
	r.Reap(func(c CQE) {
		if c.Res != 4096 {
			t.Fatalf("fixed read: %+v", c)
		}
	})
	if !bytes.Equal(mem[4096:], mem[:4096]) {
		t.Fatal("fixed read returned other bytes")
	}
}
