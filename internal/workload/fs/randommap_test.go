package fs

import (
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
