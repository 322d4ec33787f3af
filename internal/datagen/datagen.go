// Package datagen produces the bytes that workloads write: random by default,
// so that compression and deduplication in the storage under test cannot
// flatter it, or with a chosen share of compressible and duplicate content.
//
// A Generator fills a buffer from a pool of random bytes generated once, and
// stamps every 512-byte sector with its block's serial number, the way fio
// scrambles its buffers: each block is unique and incompressible at a cost of
// one copy, far below the cost of generating fresh random bytes per write.
package datagen

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
)

const (
	poolSize   = 1 << 20
	sectorSize = 512
)

// Pattern says what a Generator writes.
type Pattern struct {
	// Zeros writes zero bytes only (maximally compressible).
	Zeros bool
	// CompressPct is the share of each sector that is zeros, 0..100 (fio's
	// buffer_compress_percentage).
	CompressPct int
	// DedupPct is the share of blocks that repeat the content of an earlier
	// block, 0..100 (fio's dedupe_percentage).
	DedupPct int
	// Repeat, when set, is what every block holds, over and over (fio's
	// buffer_pattern).
	Repeat []byte `json:",omitempty"`
}

// Validate reports a pattern with percentages out of range.
func (p Pattern) Validate() error {
	if p.CompressPct < 0 || p.CompressPct > 100 {
		return fmt.Errorf("compress percentage %d: want 0..100", p.CompressPct)
	}
	if p.DedupPct < 0 || p.DedupPct > 100 {
		return fmt.Errorf("dedupe percentage %d: want 0..100", p.DedupPct)
	}
	if len(p.Repeat) > 0 && (p.Zeros || p.CompressPct > 0 || p.DedupPct > 0) {
		return fmt.Errorf("a repeated pattern with zeros, compression or dedupe: give one")
	}
	return nil
}

// Generator fills blocks. It is not safe for concurrent use; give each
// worker its own, seeded differently.
type Generator struct {
	pattern Pattern
	pool    []byte
	rng     *rand.Rand
	serial  uint64 // unique blocks generated so far
	seed    uint64
}

// New returns a generator for pattern p; seed makes its output reproducible
// and distinct from other generators'.
func New(p Pattern, seed uint64) *Generator {
	g := &Generator{pattern: p, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	if !p.Zeros {
		g.pool = make([]byte, poolSize+sectorSize)
		src := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24), 1})
		_, _ = src.Read(g.pool)
	}
	return g
}

// Fill writes the next block into buf, whose length is the block size.
func (g *Generator) Fill(buf []byte) {
	if r := g.pattern.Repeat; len(r) > 0 {
		for i := 0; i < len(buf); i += copy(buf[i:], r) {
		}
		return
	}
	if g.pattern.Zeros || g.pattern.CompressPct == 100 {
		clear(buf)
		return
	}
	if g.pattern.DedupPct > 0 && g.serial > 0 && g.rng.IntN(100) < g.pattern.DedupPct {
		g.fillSerial(buf, g.rng.Uint64N(g.serial)) // repeat an earlier unique block exactly
		return
	}
	g.fillSerial(buf, g.serial)
	g.serial++
}

// Refill turns buf, which holds a block this generator wrote before, into a
// new unique block. For plain random data it only re-stamps each sector
// (8 bytes in 512) instead of copying the whole block, as fio's
// scramble_buffers does; patterns whose blocks must repeat or compress
// exactly are filled in full.
func (g *Generator) Refill(buf []byte) { g.RefillEvery(buf, sectorSize) }

// RefillEvery is Refill re-stamping one sector in every `every` bytes (a
// multiple of 512): each piece of that size stays unique, at 512/every of
// the stamps. A large buffer (a video frame's) lies far outside the CPU's
// caches, where every stamp is a cache miss: at every sector they took 9%
// of a frame writer's CPU on tmpfs.
func (g *Generator) RefillEvery(buf []byte, every int) {
	if every < sectorSize || every%sectorSize != 0 {
		panic(fmt.Sprintf("datagen: re-stamping every %d bytes, not a multiple of %d", every, sectorSize))
	}
	if g.pattern.Zeros || g.pattern.CompressPct != 0 || g.pattern.DedupPct != 0 || len(g.pattern.Repeat) > 0 {
		g.Fill(buf)
		return
	}
	for s := 0; s+8 <= len(buf); s += every {
		binary.LittleEndian.PutUint64(buf[s:], stamp(g.serial, s))
	}
	g.serial++
}

// stamp is unique per (block, sector) and looks random: splitmix64's
// finalizer is a bijection, so distinct blocks never share a stamp.
func stamp(serial uint64, offset int) uint64 {
	x := serial ^ uint64(offset/sectorSize)<<48
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Block writes block number serial into buf: the same number always gives
// the same bytes, so a stream of blocks can be regenerated from any block on
// (to seek in an upload body, or to check what was read back). It ignores
// DedupPct, which is about the order of blocks, not their content.
func (g *Generator) Block(buf []byte, serial uint64) {
	if g.pattern.Zeros || g.pattern.CompressPct == 100 {
		clear(buf)
		return
	}
	g.fillSerial(buf, serial)
}

// fillSerial writes block number serial: the same serial always gives the
// same bytes for the same generator and block size.
func (g *Generator) fillSerial(buf []byte, serial uint64) {
	h := (serial + g.seed) * 0x9e3779b97f4a7c15
	off := int(h>>40) % (poolSize / sectorSize) * sectorSize
	randomPerSector := sectorSize - sectorSize*g.pattern.CompressPct/100
	for s := 0; s < len(buf); s += sectorSize {
		sec := buf[s:min(s+sectorSize, len(buf))]
		src := g.pool[off : off+len(sec)]
		n := min(randomPerSector, len(sec))
		copy(sec[:n], src[:n])
		clear(sec[n:])
		if n >= 8 {
			binary.LittleEndian.PutUint64(sec, stamp(serial, s))
		}
		off += sectorSize
		if off+sectorSize > poolSize {
			off = 0
		}
	}
}

// compare compares p with the bytes of block serial (generated blockLen
// bytes long) from byte at on, and returns the index in p of the first
// that differs, or -1. It reads the pool where fillSerial copies from,
// so checking a read costs one pass over it, not a copy and a pass.
func (g *Generator) compare(p []byte, serial uint64, at, blockLen int) int {
	if g.pattern.Zeros || g.pattern.CompressPct == 100 {
		return nonZero(p)
	}
	h := (serial + g.seed) * 0x9e3779b97f4a7c15
	first := int(h>>40) % (poolSize / sectorSize)
	random := sectorSize - sectorSize*g.pattern.CompressPct/100 // bytes of each sector from the pool
	for i := 0; i < len(p); {
		pos := at + i
		s := pos / sectorSize * sectorSize // the sector's start in the block
		in := pos - s
		piece := p[i:min(len(p), i+sectorSize-in)]
		n := min(random, blockLen-s, sectorSize) // as fillSerial: n of the sector from the pool, then zeros
		src := g.pool[(first+s/sectorSize)%(poolSize/sectorSize)*sectorSize:]
		for j := 0; j < len(piece); {
			b := in + j // byte of the sector
			switch {
			case b < 8 && n >= 8: // the stamp
				var st [8]byte
				binary.LittleEndian.PutUint64(st[:], stamp(serial, s))
				k := min(8-b, len(piece)-j)
				if d := mismatch(piece[j:j+k], st[b:b+k]); d >= 0 {
					return i + j + d
				}
				j += k
			case b < n: // from the pool
				k := min(n-b, len(piece)-j)
				if d := mismatch(piece[j:j+k], src[b:b+k]); d >= 0 {
					return i + j + d
				}
				j += k
			default: // zeros
				if d := nonZero(piece[j:]); d >= 0 {
					return i + j + d
				}
				j = len(piece)
			}
		}
		i += len(piece)
	}
	return -1
}

// mismatch is the index of the first byte where a and b (of one length)
// differ, or -1.
func mismatch(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// nonZero is the index of the first byte of p that is not zero, or -1.
func nonZero(p []byte) int {
	for i, b := range p {
		if b != 0 {
			return i
		}
	}
	return -1
}
