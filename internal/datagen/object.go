package datagen

import (
	"bytes"
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

// Verifier returns a writer that compares what is written to it, byte for
// byte, with the object of this seed and size: a read-back check that
// regenerates the content as it goes (at the generator's speed, several
// times that of a CRC) and cannot be fooled by a collision.
func (c Content) Verifier(seed uint64, size int64) *Verifier {
	return &Verifier{want: c.Body(seed, size), size: size}
}

// Verifier is what Content.Verifier returns; it never fails a Write, so a
// copy into it reads the whole body.
type Verifier struct {
	want    io.Reader
	buf     []byte
	size, n int64
	differs bool
}

func (v *Verifier) Write(p []byte) (int, error) {
	n := len(p)
	v.n += int64(n)
	for len(p) > 0 && !v.differs {
		if v.buf == nil {
			v.buf = make([]byte, chunkSize)
		}
		k := min(len(p), len(v.buf))
		got, _ := io.ReadFull(v.want, v.buf[:k])
		if got < k || !bytes.Equal(p[:k], v.buf[:k]) {
			v.differs = true // longer than the object, or other bytes
		}
		p = p[k:]
	}
	return n, nil
}

// Matches says whether exactly the object was written.
func (v *Verifier) Matches() bool { return !v.differs && v.n == v.size }

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
