package fs

import (
	"context"
	"slices"
	"testing"
)

// The random map is a permutation of the blocks for any count — each
// block once a pass — and another order in the next pass.
func TestRandomMapCoversEveryBlockOncePerPass(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{1, 2, 3, 7, 64, 100, 1000, 4097} {
		file := &jobFile{regionBlk: n, seed: 42, perm: newPermutation(n)}
		var passes [2][]int64
		for p := range passes {
			seen := make([]bool, n)
			for range n {
				b := file.nextRandom()
				if b < 0 || b >= n || seen[b] {
					t.Fatalf("n=%d pass %d: block %d out of range or twice", n, p, b)
				}
				seen[b] = true
				passes[p] = append(passes[p], b)
			}
		}
		if n >= 64 && slices.Equal(passes[0], passes[1]) {
			t.Errorf("n=%d: the second pass repeats the first's order", n)
		}
		if n >= 64 && slices.IsSorted(passes[0]) {
			t.Errorf("n=%d: the pass is in order, not random", n)
		}
	}
}

// fio's randseed and randrepeat: a run's random offsets are the same every
// run by default, others under another seed, and others each run with
// randrepeat=0 — with the random map and without.
func TestRandSeedAndRepeat(t *testing.T) {
	t.Parallel()
	offsets := func(o Options) func() []int64 {
		w := prepared(t, o)
		return func() []int64 {
			w.reset(context.Background(), false)
			p, file := w.newPicker(0), w.jobs[0].files[0]
			var out []int64
			for range 32 {
				_, off, _ := p.next(file)
				out = append(out, off)
			}
			return out
		}
	}
	for _, noMap := range []bool{false, true} {
		o := DefaultOptions()
		o.Engine, o.Size, o.RW, o.NoRandomMap = EngineNull, 1<<20, RandRead, noMap
		def := offsets(o)
		first := def()
		if !slices.Equal(first, def()) {
			t.Errorf("norandommap=%v: two runs drew other offsets by default", noMap)
		}
		o.RandSeed = 7
		if slices.Equal(first, offsets(o)()) {
			t.Errorf("norandommap=%v: randseed=7 drew the default seed's offsets", noMap)
		}
		o.RandSeed, o.NoRandRepeat = 0, true
		again := offsets(o)
		if slices.Equal(again(), again()) {
			t.Errorf("norandommap=%v: randrepeat=0 drew the same offsets in two runs", noMap)
		}
	}
}
