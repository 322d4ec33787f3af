package datagen

import (
	"io"
	"math/rand/v2"
	"testing"
)

// The checker agrees with the bodies Content makes, for every pattern,
// object size and range, however the body is cut into writes; it names
// the exact offset of a changed byte, and the end of a body cut short or
// run long.
func TestCheckerFindsTheByteThatDiffers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range []Pattern{{}, {CompressPct: 50}, {CompressPct: 99}, {Zeros: true}} {
		c := ContentOf(p, 42)
		k := c.Checker()
		for trial := 0; trial < 300; trial++ {
			size := []int64{1, 7, 8, 9, 511, 512, 513, 4096, 65535, 65536, 65537, 200_000, 1 << 20}[trial%13]
			seed := rng.Uint64N(1 << 39)
			from := rng.Int64N(size)
			to := from + 1 + rng.Int64N(size-from)
			if trial%3 == 0 {
				from, to = 0, size
			}
			body := c.Body(seed, size)
			if _, err := body.Seek(from, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			want := make([]byte, to-from)
			if _, err := io.ReadFull(body, want); err != nil {
				t.Fatal(err)
			}
			write := func(b []byte) int64 {
				k.Reset(seed, size, from, to)
				for len(b) > 0 {
					n := min(len(b), 1+rng.IntN(70_000))
					k.Write(b[:n])
					b = b[n:]
				}
				return k.Differs()
			}
			if d := write(want); d != -1 {
				t.Fatalf("%+v size %d [%d,%d): the right bytes differ at %d", p, size, from, to, d)
			}
			i := rng.Int64N(int64(len(want)))
			bad := append([]byte(nil), want...)
			bad[i] ^= 1 << rng.IntN(8)
			if d := write(bad); d != from+i {
				t.Fatalf("%+v size %d [%d,%d): byte %d changed, checker says %d", p, size, from, to, from+i, d)
			}
			if d := write(want[:i]); d != from+i {
				t.Fatalf("%+v size %d [%d,%d): cut at %d, checker says %d", p, size, from, to, from+i, d)
			}
			if d := write(append(append([]byte(nil), want...), 0)); d != to {
				t.Fatalf("%+v size %d [%d,%d): one byte too many, checker says %d", p, size, from, to, d)
			}
		}
	}
}

func BenchmarkChecker(b *testing.B) {
	c := ContentOf(Pattern{}, 42)
	body := make([]byte, 1<<20)
	io.ReadFull(c.Body(7, 1<<20), body)
	k := c.Checker()
	b.SetBytes(1 << 20)
	for b.Loop() {
		k.Reset(7, 1<<20, 0, 1<<20)
		for i := 0; i < len(body); i += 32 << 10 {
			k.Write(body[i : i+32<<10])
		}
		if k.Differs() != -1 {
			b.Fatal("differs")
		}
	}
}
