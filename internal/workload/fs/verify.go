package fs

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"maps"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/units"
)

// Verify is fio's verify: written blocks carry a header and a checksum and
// are read back and checked.
//
// A block is a 32-byte header (magic, checksum kind, header length, block
// length, the block's offset in its file and the seed of its contents), the
// checksum of header and payload, then the payload: pseudo-random bytes
// from the seed and the offset. The same job writes the same bytes to the
// same offset in every run, so a block can be checked without any record of
// the run that wrote it, and a block that fails is regenerated to say which
// byte differs and what it should be.
type Verify struct {
	Kind string // a checksum of checksums, "" for none
	// Backlog reads back and checks every Backlog written blocks as the
	// job goes (fio's verify_backlog), those reads counted as the job's.
	Backlog int
	// Only reads and checks the blocks the job would write, writing
	// nothing (fio's verify_only): a second pass over data written before.
	Only bool
	// Do reads back everything the run wrote once it ends (fio's
	// do_verify, on by default); that pass is not part of the measurement.
	Do bool
}

type checksum struct {
	id  uint16
	new func() hash.Hash
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// checksums are fio's verify kinds iolab writes (xxhash is 64-bit here,
// fio's is 32-bit: blocks are iolab's own format either way).
var checksums = map[string]checksum{
	"md5":    {1, md5.New},
	"crc32c": {2, func() hash.Hash { return crc32.New(crc32c) }},
	"crc32":  {3, func() hash.Hash { return crc32.NewIEEE() }},
	"crc64":  {4, func() hash.Hash { return crc64.New(crc64.MakeTable(crc64.ECMA)) }},
	"xxhash": {5, func() hash.Hash { return xxhash.New() }},
	"sha1":   {6, sha1.New},
	"sha256": {7, sha256.New},
	"sha512": {8, sha512.New},
}

// verifyAliases are fio's other names for the same checksums.
var verifyAliases = map[string]string{"crc32c-intel": "crc32c", "crc32c-arm64": "crc32c"}

const (
	verifyMagic     = 0x10ab7e51
	verifyHeaderLen = 32
)

func (v *Verify) on() bool { return v.Kind != "" }

func (o *Options) validateVerify() error {
	v := &o.Verify
	if a, ok := verifyAliases[v.Kind]; ok {
		v.Kind = a
	}
	if !v.on() {
		if v.Backlog != 0 || v.Only {
			return fmt.Errorf("--verify_backlog/--verify_only need --verify (one of %s)", strings.Join(slices.Sorted(maps.Keys(checksums)), ", "))
		}
		return nil
	}
	c, ok := checksums[v.Kind]
	switch {
	case !ok:
		return fmt.Errorf("--verify %q: want one of %s", v.Kind, strings.Join(slices.Sorted(maps.Keys(checksums)), ", "))
	case o.Engine == EngineNull:
		return fmt.Errorf("--verify with --ioengine null: the null engine moves no data to check")
	case int64(verifyHeaderLen+c.new().Size()) >= o.BlockSize:
		return fmt.Errorf("--verify %s: --bs %s cannot hold its %d-byte header and checksum; use a larger --bs", v.Kind,
			units.FormatSize(o.BlockSize), verifyHeaderLen+c.new().Size())
	case o.Data.CompressPct > 0 || o.Data.DedupPct > 0 || o.Data.Zeros:
		return fmt.Errorf("--verify writes its own checked blocks: drop --buffer_compress_percentage, --dedupe_percentage and --zero_buffers")
	case v.Backlog < 0:
		return fmt.Errorf("--verify_backlog %d: want a count of written blocks >= 0", v.Backlog)
	case v.Only && o.readShare() == 100:
		return fmt.Errorf("--verify_only with --rw %s: a read job checks every block it reads already; verify_only is for the write job that wrote them", o.RW)
	case v.Only && o.RW.random() && o.Engine == EnginePsyncPool && o.IODepth > 1:
		return fmt.Errorf("--verify_only with --rw %s and --ioengine psync-pool: %d issuers share a job's random offsets in no fixed order, "+
			"so the blocks written cannot be replayed; use --ioengine io_uring or psync", o.RW, o.IODepth)
	}
	return nil
}

// maxVerifyBitmap bounds the memory of the record of blocks written.
const maxVerifyBitmap = 1 << 30

// checkBitmapMemory refuses a verified write job whose record of the
// blocks it wrote (a bit per block of every file) would not fit in memory,
// and a random map of drawn sizes (sizedMap) likewise.
func (o *Options) checkBitmapMemory() error {
	bits := o.fileSize() / o.BlockSize * int64(o.NrFiles) * int64(o.NumJobs)
	if o.variableSizes() && o.RW.random() && !o.NoRandomMap && o.Distribution.Uniform() && bits/8 > maxVerifyBitmap {
		return fmt.Errorf("the random map over %d blocks of %s (--bssplit/--bsrange: a bit per block of every file) needs %s, more than %s; give --norandommap, raise --blockalign or lower --size",
			bits, units.FormatSize(o.BlockSize), units.HumanSize(bits/8), units.HumanSize(maxVerifyBitmap))
	}
	if !o.Verify.on() || o.Verify.Only || o.readShare() == 100 {
		return nil
	}
	if bits/8 > maxVerifyBitmap {
		return fmt.Errorf("--verify over %d blocks of %s needs %s to record which were written, more than %s; raise --bs or lower --size",
			bits, units.FormatSize(o.BlockSize), units.HumanSize(bits/8), units.HumanSize(maxVerifyBitmap))
	}
	return nil
}

func (v *Verify) params(p map[string]string) {
	if !v.on() {
		return
	}
	p["verify"] = v.Kind
	if v.Backlog > 0 {
		p["verify_backlog"] = fmt.Sprint(v.Backlog)
	}
	if v.Only {
		p["verify_only"] = "1"
	}
	if !v.Do {
		p["do_verify"] = "0"
	}
}

// verifier writes and checks blocks; each worker has its own (a hash keeps
// state).
type verifier struct {
	kind string
	id   uint16
	h    hash.Hash
	sum  []byte
	want []byte // a regenerated block, to locate a difference
}

func newVerifier(kind string) *verifier {
	c := checksums[kind]
	h := c.new()
	return &verifier{kind: kind, id: c.id, h: h, sum: make([]byte, 0, h.Size())}
}

// hdrLen is the length of header and checksum, where the payload starts.
func (v *verifier) hdrLen() int { return verifyHeaderLen + v.h.Size() }

// fill makes b the block of the file with seed at offset.
func (v *verifier) fill(b []byte, seed uint64, offset int64) {
	binary.LittleEndian.PutUint32(b[0:], verifyMagic)
	binary.LittleEndian.PutUint16(b[4:], v.id)
	binary.LittleEndian.PutUint16(b[6:], uint16(v.hdrLen()))
	binary.LittleEndian.PutUint32(b[8:], uint32(len(b)))
	binary.LittleEndian.PutUint32(b[12:], 0)
	binary.LittleEndian.PutUint64(b[16:], uint64(offset))
	binary.LittleEndian.PutUint64(b[24:], seed)
	payload := b[v.hdrLen():]
	fillPayload(payload, seed^uint64(offset)*0x9e3779b97f4a7c15)
	copy(b[verifyHeaderLen:], v.checksum(b))
}

func (v *verifier) checksum(b []byte) []byte {
	v.h.Reset()
	v.h.Write(b[:verifyHeaderLen])
	v.h.Write(b[v.hdrLen():])
	v.sum = v.h.Sum(v.sum[:0])
	return v.sum
}

// fillPayload fills b from a splitmix64 sequence started at x: cheap, and
// every block's bytes differ.
func fillPayload(b []byte, x uint64) {
	var tail [8]byte
	for len(b) > 0 {
		x += 0x9e3779b97f4a7c15
		z := (x ^ x>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		if len(b) < 8 {
			binary.LittleEndian.PutUint64(tail[:], z)
			copy(b, tail[:])
			return
		}
		binary.LittleEndian.PutUint64(b, z)
		b = b[8:]
	}
}

// VerifyError is a block that did not read back as written.
type VerifyError struct {
	Kind      string // the checksum
	Path      string
	Offset    int64 // the block's offset in the file
	BlockSize int
	Reason    string
	// FirstBad is the file offset of the first byte that differs from what
	// was written, -1 when none does (the block is as written but its
	// header disagrees); Got and Want are that byte; Differ counts the
	// bytes that differ in the block.
	FirstBad  int64
	Got, Want byte
	Differ    int
}

func (e *VerifyError) Error() string {
	msg := fmt.Sprintf("verify %s: %s: block at offset %d (%s): %s", e.Kind, e.Path, e.Offset, units.FormatSize(int64(e.BlockSize)), e.Reason)
	if e.FirstBad >= 0 {
		msg += fmt.Sprintf("; byte %d (block +%d) reads 0x%02x, was written 0x%02x; %d of %d bytes differ",
			e.FirstBad, e.FirstBad-e.Offset, e.Got, e.Want, e.Differ, e.BlockSize)
	}
	return msg
}

// check checks that b is the block of the file with seed at offset.
func (v *verifier) check(b []byte, path string, seed uint64, offset int64) error {
	reason := ""
	switch {
	case binary.LittleEndian.Uint32(b[0:]) != verifyMagic:
		reason = "no verify header (not written by a --verify job, or overwritten since)"
	case binary.LittleEndian.Uint16(b[4:]) != v.id || int(binary.LittleEndian.Uint16(b[6:])) != v.hdrLen():
		reason = "written with another --verify checksum, or its header is damaged"
	case binary.LittleEndian.Uint32(b[8:]) != uint32(len(b)):
		reason = fmt.Sprintf("written as a %s block; check it with that --bs", units.FormatSize(int64(binary.LittleEndian.Uint32(b[8:]))))
	case binary.LittleEndian.Uint64(b[16:]) != uint64(offset):
		reason = fmt.Sprintf("its header says offset %d: the block landed at the wrong offset", binary.LittleEndian.Uint64(b[16:]))
	case string(v.checksum(b)) != string(b[verifyHeaderLen:v.hdrLen()]):
		reason = "checksum mismatch"
	default:
		return nil
	}
	e := &VerifyError{Kind: v.kind, Path: path, Offset: offset, BlockSize: len(b), Reason: reason, FirstBad: -1}
	if cap(v.want) < len(b) {
		v.want = make([]byte, len(b))
	}
	want := v.want[:len(b)]
	v.fill(want, seed, offset)
	for i := range b {
		if b[i] != want[i] {
			if e.FirstBad < 0 {
				e.FirstBad, e.Got, e.Want = offset+int64(i), b[i], want[i]
			}
			e.Differ++
		}
	}
	return e
}

// fileSeed is the seed of a file's blocks: every file of every job has its
// own, the same in every run.
func fileSeed(job, file int) uint64 {
	return (uint64(job)<<32 | uint64(file)) ^ 0x5eed10ab5eed10ab
}

// markWritten records that the block at offset was written.
func (f *jobFile) markWritten(offset, bs int64) {
	if f.written == nil {
		return
	}
	blk := (offset - f.base) / bs
	atomic.OrUint64(&f.written[blk/64], 1<<(blk%64))
}

// verifyResult counts what a verify pass read.
type verifyResult struct {
	blocks, bytes atomic.Int64
}

// verifyWritten reads back every block the run wrote, job by job in
// parallel, from storage: files are synced and their cache dropped first,
// so a buffered job checks the device rather than the page cache.
func (f *FS) verifyWritten(ctx context.Context) (*verifyResult, error) {
	var res verifyResult
	var wg sync.WaitGroup
	errs := make([]error, len(f.jobs))
	for i, j := range f.jobs {
		wg.Go(func() {
			for _, file := range j.files {
				if err := f.verifyFile(ctx, file, &res); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return &res, errors.Join(errs...)
}

// verifyChunk is how much of a file a verify pass reads at once.
const verifyChunk = 1 << 20

func (f *FS) verifyFile(ctx context.Context, file *jobFile, res *verifyResult) error {
	bs := f.opts.BlockSize
	fd, _, err := OpenFile(file.path, unix.O_RDONLY, f.opts.Direct)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if wfd, err := unix.Open(file.path, unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
		_ = unix.Fdatasync(wfd)
		_ = unix.Close(wfd)
	}
	_ = unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
	perChunk := max(verifyChunk/bs, 1)
	buf, free, err := AlignedBuffer(int(perChunk * bs))
	if err != nil {
		return err
	}
	defer free()
	v := newVerifier(f.opts.Verify.Kind)
	for blk := int64(0); blk < file.regionBlk; {
		if err := ctx.Err(); err != nil {
			return err
		}
		// The next run of written blocks, at most a chunk long.
		w := file.written[blk/64] >> (blk % 64)
		if w == 0 {
			blk += 64 - blk%64
			continue
		}
		blk += int64(bits.TrailingZeros64(w))
		n := int64(0)
		for blk+n < file.regionBlk && n < perChunk && file.written[(blk+n)/64]&(1<<((blk+n)%64)) != 0 {
			n++
		}
		chunk := buf[:n*bs]
		at := file.base + blk*bs
		if got, err := unix.Pread(fd, chunk, at); err != nil || got != len(chunk) {
			return fmt.Errorf("verify %s: read %d bytes at offset %d: %d read: %v", file.path, len(chunk), at, got, err)
		}
		for k := range n {
			if err := v.check(chunk[k*bs:(k+1)*bs], file.path, file.seed, at+k*bs); err != nil {
				return err
			}
		}
		res.blocks.Add(n)
		res.bytes.Add(n * bs)
		blk += n
	}
	return nil
}
