package datagen

import (
	"errors"
	"hash"
	"hash/crc64"
	"io"
	"time"
)

const chunkSize = 64 << 10

var crcTable = crc64.MakeTable(crc64.ECMA)

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

// Checksum is the CRC-64 of the object with this seed and size.
func (c Content) Checksum(seed uint64, size int64) uint64 {
	h := NewChecksum()
	_, _ = io.Copy(h, c.Body(seed, size))
	return h.Sum64()
}

// NewChecksum is the hash Checksum uses, to check what is read back.
func NewChecksum() hash.Hash64 { return crc64.New(crcTable) }

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
