package datagen

import (
	"errors"
	"io"
	"time"
)

const chunkSize = 64 << 10

// Content makes object bodies for workloads that write whole objects (S3,
// HTTP uploads). Block k of the object with seed s is block
// number s<<24|k of one shared generator, whose Block is a pure function:
// bodies are generated as they are read (flat memory at any size), can seek
// (for retries), repeat exactly for the same seed (dedup), and let a
// verification regenerate what an object should hold.
type Content struct {
	gen  *Generator
	Seed uint64 // of the generator, to rebuild it later
}

// NewContent seeds the generator anew for every process, so a store that
// deduplicates cannot match objects against those of an earlier invocation.
func NewContent(p Pattern) Content {
	return ContentOf(p, uint64(time.Now().UnixNano()))
}

// ContentOf is the content generator of a given seed (to verify objects a
// past run wrote).
func ContentOf(p Pattern, seed uint64) Content {
	p.DedupPct = 0 // dedup is per object here: a repeated seed
	return Content{gen: New(p, seed), Seed: seed}
}

// Body returns a fresh reader of one object. Each request gets its own: the
// HTTP transport may still read a body after the response has arrived.
func (c Content) Body(seed uint64, size int64) io.ReadSeeker {
	return &body{gen: c.gen, seed: seed, size: size, chunk: make([]byte, min(chunkSize, max(size, 1))), loaded: -1}
}

// Again is Body for a caller that reads one object after another: it
// reuses r, a reader Body or Again returned that is no longer read (nil:
// none yet), and its buffer.
func (c Content) Again(r io.ReadSeeker, seed uint64, size int64) io.ReadSeeker {
	n := min(chunkSize, max(size, 1))
	b, ok := r.(*body)
	if !ok || int64(cap(b.chunk)) < n {
		return c.Body(seed, size)
	}
	*b = body{gen: c.gen, seed: seed, size: size, chunk: b.chunk[:n], loaded: -1}
	return b
}

type body struct {
	gen    *Generator
	seed   uint64
	size   int64
	off    int64
	chunk  []byte
	loaded int64 // block in chunk, -1 for none
}

func (b *body) Read(p []byte) (int, error) {
	if b.off >= b.size {
		return 0, io.EOF
	}
	cs := int64(len(b.chunk))
	if b.off%cs == 0 && int64(len(p)) >= cs && b.size-b.off >= cs {
		// Whole blocks straight into the caller's buffer: one copy fewer
		// for large bodies.
		n := min(int64(len(p)), b.size-b.off) / cs * cs
		for i := int64(0); i < n; i += cs {
			b.gen.Block(p[i:i+cs], b.seed<<24|uint64((b.off+i)/cs))
		}
		b.off += n
		return int(n), nil
	}
	k := b.off / cs
	if k != b.loaded {
		b.gen.Block(b.chunk, b.seed<<24|uint64(k))
		b.loaded = k
	}
	start := b.off % cs
	n := copy(p, b.chunk[start:min(cs, start+b.size-b.off)])
	b.off += int64(n)
	return n, nil
}

func (b *body) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += b.off
	case io.SeekEnd:
		offset += b.size
	}
	if offset < 0 {
		return 0, errors.New("seek before start")
	}
	b.off = offset
	return offset, nil
}

// Checker compares a body with what it should hold as the body streams
// in — a whole object or a range of it — without generating the content
// first: each byte is compared with the generator's pool where it comes
// from. One Checker serves one reader after another (Reset), with no
// allocation per read.
type Checker struct {
	c          Content
	seed       uint64
	size       int64 // the object's
	off, end   int64 // the next byte expected, and the end of the range
	bad        int64 // offset in the object of the first byte that differs; -1 if none
	blockBytes int   // the size of the blocks the object was generated in
}

// Checker returns a checker of this content's objects.
func (c Content) Checker() *Checker { return &Checker{c: c, bad: -1} }

// Reset starts checking bytes [from, to) of the object of this seed and
// size.
func (k *Checker) Reset(seed uint64, size, from, to int64) {
	k.seed, k.size, k.off, k.end, k.bad = seed, size, from, to, -1
	k.blockBytes = int(min(chunkSize, max(size, 1))) // as Body generates it
}

// Write compares p with the next bytes expected; it never fails, so a
// copy into it reads the whole body. Bytes past the range differ.
func (k *Checker) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && k.bad < 0 {
		if k.off >= k.end {
			k.bad = k.off
			break
		}
		bs := int64(k.blockBytes)
		at := int(k.off % bs)
		m := min(int64(len(p)), bs-int64(at), k.end-k.off)
		if i := k.c.gen.compare(p[:m], k.seed<<24|uint64(k.off/bs), at, k.blockBytes); i >= 0 {
			k.bad = k.off + int64(i)
			break
		}
		k.off += m
		p = p[m:]
	}
	return n, nil
}

// Differs returns the offset in the object of the first byte that is not
// what it should be (a body cut short differs at its end), or -1 when the
// whole range came as it should.
func (k *Checker) Differs() int64 {
	if k.bad < 0 && k.off < k.end {
		return k.off
	}
	return k.bad
}
