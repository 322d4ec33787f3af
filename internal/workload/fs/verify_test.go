package fs

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/iolab/iolab/internal/metrics"
)

// run prepares and runs o once.
func run(t *testing.T, o Options) (*metrics.Result, error) {
	t.Helper()
	w := prepared(t, o)
	defer w.Close() // closed when the run ends, as before: a test counts the descriptors left
	return w.Run(context.Background(), nil)
}

// prepared is the workload of o, prepared, closed when the test ends (if
// not before: Close may be said twice).
func prepared(t *testing.T, o Options) *FS {
	t.Helper()
	w, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func noteCodes(res *metrics.Result) []string {
	var codes []string
	for _, n := range res.Notes {
		codes = append(codes, n.Code)
	}
	return codes
}

// flip inverts one byte of the file at off and returns what it was.
func flip(t *testing.T, path string, off int64) byte {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{^b[0]}, off); err != nil {
		t.Fatal(err)
	}
	return b[0]
}

// A 1 GiB file written with --verify, one byte flipped on disk: the read
// pass and the verify_only pass each stop at that block and name the byte's
// offset, what it reads and what was written.
func TestVerifyLocatesAFlippedByteIn1GiB(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.Directory, o.Size, o.BlockSize, o.RW, o.Verify.Kind = t.TempDir(), 1<<30, 1<<20, Write, "crc32c"
	res, err := run(t, o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(noteCodes(res), "verified") || res.ByOp[metrics.Write].Bytes != 1<<30 {
		t.Fatalf("write pass: %d bytes, notes %v", res.ByOp[metrics.Write].Bytes, res.Notes)
	}
	const bad = 777_777_777
	was := flip(t, filepath.Join(o.Directory, "iolab.0.0"), bad)

	for _, pass := range []struct {
		name string
		edit func(*Options)
	}{
		{"read", func(o *Options) { o.RW = Read }},
		{"verify_only", func(o *Options) { o.Verify.Only, o.Engine, o.IODepth = true, EngineIOUring, 4 }},
	} {
		o := o
		pass.edit(&o)
		_, err := run(t, o)
		var ve *VerifyError
		if !errors.As(err, &ve) {
			t.Fatalf("%s: %v, want a verify error", pass.name, err)
		}
		if ve.FirstBad != bad || ve.Offset != bad/(1<<20)*(1<<20) || ve.Want != was || ve.Got != ^was || ve.Differ != 1 ||
			ve.Reason != "checksum mismatch" {
			t.Errorf("%s: %+v, want byte %d (written 0x%02x) in the block at %d", pass.name, ve, bad, was, bad/(1<<20)*(1<<20))
		}
		if !strings.Contains(err.Error(), "byte 777777777") {
			t.Errorf("%s: error %q does not name the byte", pass.name, err)
		}
	}
}

// Random writes on io_uring and synchronous issuers, offsets drawn afresh
// (norandommap): the pass after the run reads back exactly the distinct
// blocks written; a verify_only run
// replays them and finds a block damaged since.
func TestVerifyRandomWrites(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{EngineIOUring, EnginePsync} {
		o := DefaultOptions()
		o.Directory, o.Size, o.RW, o.Engine, o.IODepth, o.Verify.Kind = t.TempDir(), 4<<20, RandWrite, engine, 8, "md5"
		o.NoRandomMap = true // blocks written twice and blocks left out (the random map writes each once)
		res, err := run(t, o)
		if err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		// Which blocks the run wrote: the ones that carry a header.
		path := filepath.Join(o.Directory, "iolab.0.0")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var written []int64
		for off := int64(0); off < int64(len(data)); off += o.BlockSize {
			if binary.LittleEndian.Uint32(data[off:]) == verifyMagic {
				written = append(written, off)
			}
		}
		if len(written) < 500 || len(written) == 1024 {
			t.Fatalf("%s: %d of 1024 blocks written by 1024 random writes", engine, len(written))
		}
		if !slices.ContainsFunc(res.Notes, func(n metrics.Note) bool {
			return n.Code == "verified" && strings.Contains(n.Message, " all "+strconv.Itoa(len(written))+" blocks")
		}) {
			t.Errorf("%s: notes %v, want all %d blocks written read back", engine, res.Notes, len(written))
		}
		o.Verify.Only = true
		if res, err := run(t, o); err != nil || res.ByOp[metrics.Write].Ops != 0 || res.ByOp[metrics.Read].Ops != 1024 {
			t.Fatalf("%s: verify_only of intact data: %v (%+v)", engine, err, res.ByOp[:2])
		}
		bad := written[len(written)/2] + 100
		flip(t, path, bad)
		_, err = run(t, o)
		var ve *VerifyError
		if !errors.As(err, &ve) || ve.FirstBad != bad {
			t.Errorf("%s: verify_only after a flip at %d: %v", engine, bad, err)
		}
	}
}

// verify_backlog reads written blocks back as the job goes, counted as its
// reads; a block overwritten with other data behind the job's back is
// caught by the read job that checks it.
func TestVerifyBacklogAndWhatIsNotAVerifyBlock(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.Directory, o.Size, o.RW, o.Verify.Kind, o.Verify.Backlog = t.TempDir(), 1<<20, Write, "xxhash", 16
	res, err := run(t, o)
	if err != nil {
		t.Fatal(err)
	}
	if r, w := res.ByOp[metrics.Read].Ops, res.ByOp[metrics.Write].Ops; w != 256 || r != 256 {
		t.Errorf("%d writes and %d backlog reads, want 256 of each", w, r)
	}
	// A file laid out by a job without --verify carries no headers.
	o2 := DefaultOptions()
	o2.Directory, o2.Size, o2.RW, o2.Verify.Kind = t.TempDir(), 1<<20, Read, "xxhash"
	_, err = run(t, o2)
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.Offset != 0 || !strings.Contains(ve.Reason, "no verify header") {
		t.Errorf("read of unverified data: %v", err)
	}
}

// A verified write over more blocks than a bounded record of them can hold
// is refused before anything is laid out.
func TestVerifyRecordIsBounded(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.Filename, o.Size, o.BlockSize, o.RW, o.Verify.Kind = filepath.Join(t.TempDir(), "big"), 64<<40, 4096, RandWrite, "crc32c"
	w, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Prepare(context.Background()); err == nil || !strings.Contains(err.Error(), "raise --bs or lower --size") {
		t.Fatalf("a 64 TiB verified write: %v", err)
	}
	if _, err := os.Stat(o.Filename); err == nil {
		t.Error("the file was laid out before the refusal")
	}
}
