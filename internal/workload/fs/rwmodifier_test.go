package fs

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// A sequential job's blocks with fio's offset modifier are fio's: the
// sequences below are fio 3.33's write_iolog of the same jobs (4k blocks
// in a 32k file, eight operations).
func TestSeqBlockAsFio(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rw   string
		want []int64 // in 4k blocks
	}{
		{"read", []int64{0, 1, 2, 3, 4, 5, 6, 7, 0}},
		{"read:-8k", []int64{0, 6, 5, 4, 3, 2, 1, 0, 6}}, // fio: 0 24 20 16 12 8 4 0
		{"write:4k", []int64{0, 2, 4, 6, 0, 2, 4, 6}},    // fio: 0 8 16 24 0 8 16 24
		{"write:8k", []int64{0, 3, 6, 0, 3, 6}},
		{"read:-4k", []int64{0, 0, 0}},
	} {
		var o Options
		if err := o.parseRW(tc.rw); err != nil {
			t.Fatal(err)
		}
		var got []int64
		for i := range int64(len(tc.want)) {
			got = append(got, seqBlock(i, 8, o.SeqAdd/4096))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: blocks %v, want %v", tc.rw, got, tc.want)
		}
	}
}

// randread:N goes on sequentially N-1 blocks from each random offset, as
// fio's (fio 3.33, randwrite:2 with norandommap: 0 4 20 24 24 28 12 16).
func TestRandomOffsetModifier(t *testing.T) {
	t.Parallel()
	var o Options
	if err := o.parseRW("randwrite:3"); err != nil {
		t.Fatal(err)
	}
	p := picker{rng: rand.New(rand.NewPCG(1, 2)), random: true, blockSize: 4096, randSeq: o.RandSeq}
	file := &jobFile{regionBlk: 1000}
	for range 10 {
		first := p.block(file)
		for k := int64(1); k < 3; k++ {
			if b := p.block(file); b != (first+k)%1000 {
				t.Fatalf("block %d after %d, want the next", b, first+k-1)
			}
		}
	}
	for _, bad := range []string{"randread:0", "randread:x", "read:4q", "wrote:4k"} {
		if err := o.parseRW(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
