package datagen

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"fmt"
	"io"
	"strings"
	"testing"
)

func compressedRatio(t *testing.T, b []byte) float64 {
	t.Helper()
	var out bytes.Buffer
	w, _ := flate.NewWriter(&out, flate.BestSpeed)
	_, _ = w.Write(b)
	_ = w.Close()
	return float64(out.Len()) / float64(len(b))
}

func TestRandomIsIncompressibleAndUnique(t *testing.T) {
	t.Parallel()
	g := New(Pattern{}, 1)
	seen := map[[32]byte]bool{}
	var all []byte
	for i := 0; i < 2000; i++ {
		b := make([]byte, 4096)
		g.Fill(b)
		sum := sha256.Sum256(b)
		if seen[sum] {
			t.Fatalf("block %d repeats an earlier block with dedupe 0", i)
		}
		seen[sum] = true
		all = append(all, b...)
	}
	if r := compressedRatio(t, all); r < 0.95 {
		t.Fatalf("random data compresses to %.2f of its size", r)
	}
}

func TestCompressPercentage(t *testing.T) {
	t.Parallel()
	for _, pct := range []int{25, 50, 90} {
		g := New(Pattern{CompressPct: pct}, 2)
		b := make([]byte, 1<<20)
		g.Fill(b)
		r := compressedRatio(t, b)
		want := 1 - float64(pct)/100
		if r < want-0.06 || r > want+0.06 {
			t.Errorf("compress %d%%: ratio %.2f, want about %.2f", pct, r, want)
		}
	}
}

func TestDedupPercentage(t *testing.T) {
	t.Parallel()
	g := New(Pattern{DedupPct: 40}, 3)
	seen := map[[32]byte]bool{}
	dups := 0
	const n = 5000
	for i := 0; i < n; i++ {
		b := make([]byte, 4096)
		g.Fill(b)
		sum := sha256.Sum256(b)
		if seen[sum] {
			dups++
		}
		seen[sum] = true
	}
	if share := float64(dups) / n; share < 0.35 || share > 0.45 {
		t.Fatalf("duplicate share %.3f, want about 0.40", share)
	}
}

func TestZeros(t *testing.T) {
	t.Parallel()
	b := bytes.Repeat([]byte{7}, 4096)
	New(Pattern{Zeros: true}, 0).Fill(b)
	if !bytes.Equal(b, make([]byte, 4096)) {
		t.Fatal("zeros pattern wrote non-zero bytes")
	}
}

func BenchmarkFill4k(b *testing.B) {
	g := New(Pattern{}, 1)
	buf := make([]byte, 4096)
	b.SetBytes(4096)
	for b.Loop() {
		g.Fill(buf)
	}
}

func TestRefillKeepsBlocksUniqueAndRandom(t *testing.T) {
	t.Parallel()
	g := New(Pattern{}, 4)
	b := make([]byte, 4096)
	g.Fill(b)
	seen := map[[32]byte]bool{sha256.Sum256(b): true}
	var all []byte
	for i := 0; i < 2000; i++ {
		g.Refill(b)
		sum := sha256.Sum256(b)
		if seen[sum] {
			t.Fatalf("refill %d repeats a block", i)
		}
		seen[sum] = true
		all = append(all, b...)
	}
	if r := compressedRatio(t, b); r < 0.95 {
		t.Fatalf("refilled block compresses to %.2f", r)
	}
	// A dedup pattern still repeats blocks exactly after Refill.
	d := New(Pattern{DedupPct: 50}, 5)
	dups := 0
	seen = map[[32]byte]bool{}
	for i := 0; i < 1000; i++ {
		d.Refill(b)
		sum := sha256.Sum256(b)
		if seen[sum] {
			dups++
		}
		seen[sum] = true
	}
	if dups < 400 || dups > 600 {
		t.Fatalf("%d duplicates of 1000 with dedupe 50%%", dups)
	}
}

// Re-stamped once per 4 KiB, every 4 KiB piece of every refill is still
// unique and incompressible, and only its first 8 bytes change.
func TestRefillEveryPageKeepsPagesUnique(t *testing.T) {
	t.Parallel()
	g := New(Pattern{}, 6)
	b := make([]byte, 64<<10)
	g.Fill(b)
	seen := map[[32]byte]bool{}
	prev := bytes.Clone(b)
	for i := 0; i < 200; i++ {
		g.RefillEvery(b, 4096)
		for p := 0; p < len(b); p += 4096 {
			page := b[p : p+4096]
			sum := sha256.Sum256(page)
			if seen[sum] {
				t.Fatalf("refill %d: page %d repeats a page", i, p/4096)
			}
			seen[sum] = true
			if !bytes.Equal(page[8:], prev[p+8:p+4096]) {
				t.Fatalf("refill %d: page %d changed past its stamp", i, p/4096)
			}
		}
		copy(prev, b)
	}
	if r := compressedRatio(t, b); r < 0.95 {
		t.Fatalf("refilled buffer compresses to %.2f", r)
	}
}

// A re-stamping interval that is no multiple of a sector is refused
// with its value, not looped on forever (0) or stamped off the sectors.
func TestRefillEveryRefusesAnIntervalOfNoSectors(t *testing.T) {
	t.Parallel()
	for _, every := range []int{0, -512, 100, 1000} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), fmt.Sprint(every)) {
					t.Errorf("every %d: %v", every, r)
				}
			}()
			New(Pattern{}, 1).RefillEvery(make([]byte, 4096), every)
		}()
	}
}

func BenchmarkRefill4k(b *testing.B) {
	g := New(Pattern{}, 1)
	buf := make([]byte, 4096)
	g.Fill(buf)
	b.SetBytes(4096)
	for b.Loop() {
		g.Refill(buf)
	}
}

// An object body reads the same bytes whatever the caller's buffer size, and
// seeks anywhere.
func TestContentBodyIsStable(t *testing.T) {
	t.Parallel()
	c := ContentOf(Pattern{}, 9)
	const size = 300<<10 + 123
	var want []byte
	r := c.Body(5, size)
	buf := make([]byte, 1000)
	for {
		n, err := r.Read(buf)
		want = append(want, buf[:n]...)
		if err != nil {
			break
		}
	}
	for _, bs := range []int{64 << 10, 200 << 10, 1 << 20, 7} {
		got, _ := readAll(c.Body(5, size), bs)
		if !bytes.Equal(got, want) {
			t.Fatalf("reading with a %d-byte buffer gives other bytes", bs)
		}
	}
	other, _ := readAll(c.Body(6, size), 64<<10)
	if len(want) != size || bytes.Equal(want, other) {
		t.Fatal("size or uniqueness of bodies")
	}
	b := c.Body(5, size)
	b.Seek(100000, 0)
	tail, _ := readAll(b, 64<<10)
	if !bytes.Equal(tail, want[100000:]) {
		t.Fatal("seek then read differs")
	}
}

func readAll(r interface{ Read([]byte) (int, error) }, bs int) ([]byte, error) {
	var out []byte
	buf := make([]byte, bs)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return out, nil
		}
	}
}

// An object body as the s3 and http workloads send it, read in their 32 KiB
// pieces, per pattern; and the checksum --verify computes over a download.
func BenchmarkBody(b *testing.B) {
	for _, tc := range []struct {
		name string
		p    Pattern
	}{{"random", Pattern{}}, {"compressible50", Pattern{CompressPct: 50}}, {"zeros", Pattern{Zeros: true}}} {
		b.Run(tc.name, func(b *testing.B) {
			c := ContentOf(tc.p, 1)
			buf := make([]byte, 32<<10)
			const size = 64 << 20
			b.SetBytes(size)
			for b.Loop() {
				r := c.Body(7, size)
				for {
					if _, err := r.Read(buf); err != nil {
						break
					}
				}
			}
		})
	}
	b.Run("verify", func(b *testing.B) {
		c := ContentOf(Pattern{}, 1)
		const size = 64 << 20
		body, _ := readAll(c.Body(7, size), 1<<20)
		b.SetBytes(size)
		for b.Loop() {
			v := c.Checker()
			v.Reset(7, size, 0, size)
			for off := 0; off < size; off += 32 << 10 {
				v.Write(body[off : off+32<<10])
			}
			if v.Differs() >= 0 {
				b.Fatal("the object's own bytes do not match")
			}
		}
	})
}

// The checker accepts exactly the object: not a flipped byte, not one
// byte short or long, whatever the pieces it is written in.
func TestCheckerAcceptsExactlyTheObject(t *testing.T) {
	t.Parallel()
	c := ContentOf(Pattern{CompressPct: 30}, 9)
	const size = 200<<10 + 13
	want, _ := readAll(c.Body(3, size), 64<<10)
	flipped := append([]byte(nil), want...)
	flipped[size-1] ^= 1
	for _, tc := range []struct {
		name  string
		data  []byte
		match bool
	}{
		{"the object", want, true},
		{"last byte flipped", flipped, false},
		{"one byte short", want[:size-1], false},
		{"one byte long", append(append([]byte(nil), want...), 0), false},
		{"another object", func() []byte { b, _ := readAll(c.Body(4, size), 64<<10); return b }(), false},
	} {
		for _, piece := range []int{1 << 20, 32 << 10, 7} {
			v := c.Checker()
			v.Reset(3, size, 0, size)
			for off := 0; off < len(tc.data); off += piece {
				if n, err := v.Write(tc.data[off:min(off+piece, len(tc.data))]); err != nil || n != min(piece, len(tc.data)-off) {
					t.Fatalf("%s: write: %d, %v", tc.name, n, err)
				}
			}
			if (v.Differs() < 0) != tc.match {
				t.Errorf("%s in %d-byte pieces: differs at %d, want a match %v", tc.name, piece, v.Differs(), tc.match)
			}
		}
	}
}

// A reader reused for one object after another (Again) reads each as a
// fresh Body does, larger and smaller than the last.
func TestAgainReadsAsBody(t *testing.T) {
	c := ContentOf(Pattern{}, 11)
	var r io.ReadSeeker
	for i, size := range []int64{1000, 5000, 70000, 10, 64 << 10, 200000, 3} {
		seed := uint64(i + 1)
		r = c.Again(r, seed, size)
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := io.ReadAll(c.Body(seed, size))
		if !bytes.Equal(got, want) || int64(len(got)) != size {
			t.Fatalf("object %d of %d bytes: %d bytes read again, not the %d Body reads", i, size, len(got), len(want))
		}
	}
}
