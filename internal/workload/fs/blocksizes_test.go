package fs

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// fio's bssplit: sizes with their shares, those without one sharing what
// the rest leave; the shares drawn are the ones given.
func TestBSSplit(t *testing.T) {
	t.Parallel()
	m, err := parseBSSplit("4k/60:16k:64k")
	if err != nil || len(m.Sizes) != 3 || m.Weights[0] != 60 || m.Weights[1] != 20 || m.Weights[2] != 20 {
		t.Fatalf("%+v, %v", m, err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	count := map[int64]int{}
	for range 100_000 {
		count[m.draw(rng)]++
	}
	for i, s := range m.Sizes {
		if got := float64(count[s]) / 1000; got < float64(m.Weights[i])-1 || got > float64(m.Weights[i])+1 {
			t.Errorf("%d: %.1f%% of the draws, want %d%%", s, got, m.Weights[i])
		}
	}
	r, _ := parseBSRange("4k-16k")
	for range 1000 {
		if n := r.draw(rng); n < 4096 || n > 16384 || n%4096 != 0 {
			t.Fatalf("bsrange 4k-16k drew %d", n)
		}
	}
	for _, bad := range []string{"4k/60:16k/60", "4k/50", "x/50:4k/50", "4k/101", "16k-4k", "4k"} {
		_, err1 := parseBSSplit(bad)
		_, err2 := parseBSRange(bad)
		if err1 == nil && err2 == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := parseBSSplit("4k/60:16k/60"); err == nil || !strings.Contains(err.Error(), "add up to 120") {
		t.Errorf("shares over 100: %v", err)
	}
}

// With sizes drawn, the random map covers every block of the region once
// a pass: no operation covers a block another did, and a pass ends when
// all are covered.
func TestSizedMapCoversEachBlockOnce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int64{1, 7, 64, 65, 1000} {
		var m sizedMap
		seen := make([]bool, n)
		var covered int64
		for covered < n {
			blk, blocks := m.take(n, n, 1+rng.Int64N(20), rng)
			if blocks < 1 || blk < 0 || blk+blocks > n {
				t.Fatalf("n=%d: blocks %d..%d", n, blk, blk+blocks)
			}
			for b := blk; b < blk+blocks; b++ {
				if seen[b] {
					t.Fatalf("n=%d: block %d twice in a pass", n, b)
				}
				seen[b] = true
			}
			covered += blocks
		}
		if blk, blocks := m.take(n, n, 1, rng); blocks != 1 || blk >= n {
			t.Errorf("n=%d: the next pass starts with %d blocks at %d", n, blocks, blk)
		}
	}
}
