package fs

import "math/bits"

// fio's random map: by default a random job touches every block of its
// file once per pass before any block again (fio keeps a bitmap of the
// blocks done; norandommap draws each offset afresh, blocks repeating and
// others left out: 37% of them in a pass's worth of operations). iolab
// walks a keyed permutation of the blocks instead of keeping a map: the
// i-th operation of a file takes block permute(i mod n), the key changing
// with each pass — the same coverage in constant memory, shared by the
// job's workers through the file's cursor.

// permutation is a bijection of [0, n): a balanced Feistel network over
// the smallest even power of two that holds n, walked again from values
// past n (cycle-walking: under four steps on average).
type permutation struct {
	n    int64
	half uint // bits in each half
	mask uint64
}

func newPermutation(n int64) permutation {
	b := uint(bits.Len64(uint64(max(n-1, 1))))
	half := (b + 1) / 2
	return permutation{n: n, half: half, mask: 1<<half - 1}
}

// at is the block at place i (0 <= i < n) under key.
func (p permutation) at(i int64, key uint64) int64 {
	x := uint64(i)
	for {
		l, r := x>>p.half, x&p.mask
		for round := range uint64(4) {
			l, r = r, l^(mix(r^key^round<<56)&p.mask)
		}
		x = l<<p.half | r
		if int64(x) < p.n {
			return int64(x)
		}
	}
}

// mix is a 64-bit finaliser (SplitMix64's).
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// nextRandom is the file's next block under the random map: every block
// once in each pass of regionBlk operations.
func (file *jobFile) nextRandom() int64 {
	i := file.cursor.Add(1) - 1
	pass := uint64(i / file.regionBlk)
	return file.perm.at(i%file.regionBlk, file.seed^mix(pass)^file.runSeed)
}
