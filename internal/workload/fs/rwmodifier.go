package fs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/iolab/iolab/internal/units"
)

// fio's rw takes a modifier after a colon: an offset added between
// sequential operations (write:112k leaves holes, read:-8k reads
// backwards) or the number of sequential operations per random offset
// (randread:8).

// parseRW reads an rw value with its modifier into o.
func (o *Options) parseRW(s string) error {
	name, mod, hasMod := strings.Cut(s, ":")
	pattern, err := ParsePattern(name)
	if err != nil {
		return err
	}
	o.RW, o.SeqAdd, o.RandSeq = pattern, 0, 0
	switch {
	case !hasMod:
	case pattern.random():
		n, err := strconv.Atoi(mod)
		if err != nil || n < 1 {
			return fmt.Errorf("%q: %s's modifier is how many operations go on sequentially from each random offset, a whole number >= 1 (randread:8)", s, name)
		}
		o.RandSeq = n
	default:
		neg := strings.HasPrefix(mod, "-")
		n, err := units.ParseFioSize(strings.TrimPrefix(mod, "-"))
		if err != nil {
			return fmt.Errorf("%q: %s's modifier is an offset added after each operation, a size such as 112k or -8k: %w", s, name, err)
		}
		if neg {
			n = -n
		}
		o.SeqAdd = n
	}
	return nil
}

// rwName is the rw value as fio writes it, the modifier included.
func (o *Options) rwName() string {
	switch {
	case o.RandSeq > 0:
		return fmt.Sprintf("%s:%d", o.RW, o.RandSeq)
	case o.SeqAdd < 0:
		return fmt.Sprintf("%s:-%s", o.RW, units.FormatSize(-o.SeqAdd))
	case o.SeqAdd > 0:
		return fmt.Sprintf("%s:%s", o.RW, units.FormatSize(o.SeqAdd))
	}
	return string(o.RW)
}

// validateRW checks a modifier against the block size: iolab's blocks
// are whole blocks of the region apart (what its verify and random map
// count in).
func (o *Options) validateRW() error {
	if o.SeqAdd%o.BlockSize != 0 {
		return fmt.Errorf("--rw %s: iolab takes an offset modifier in whole blocks of --bs %s (fio takes any)", o.rwName(), units.FormatSize(o.BlockSize))
	}
	return nil
}

// seqBlock is the block of a sequential job's i-th operation (counted
// from 0 in the run) in a region of n blocks, with the modifier's stride:
// after the first block, +1+add blocks each time, wrapping to the region's
// start past its end, or, going backwards, to its end less the step back
// (fio's: read:-8k of 4k blocks in 32k reads 0, 24k, 20k, ..., 4k, 0).
func seqBlock(i, n, add int64) int64 {
	stride := 1 + add
	switch {
	case stride > 0:
		per := (n-1)/stride + 1 // blocks a pass visits
		return i % per * stride
	case i == 0 || stride == 0:
		return 0
	}
	start := n + add // the first block after wrapping back
	if start < 0 {
		return 0
	}
	per := start/(-stride) + 1
	return start - (i-1)%per*(-stride)
}
