package fs

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/iolab/iolab/internal/units"
)

// Block sizes drawn per operation, as fio's bssplit and bsrange: a job's
// reads and writes each have a mix; offsets are aligned to the smallest
// size, or to blockalign.

// SizeMix is the sizes one direction draws from: bssplit's sizes with
// their percentages, or bsrange's Min..Max (in steps of Min, as fio's).
type SizeMix struct {
	Sizes    []int64 `json:"sizes,omitempty"`
	Weights  []int   `json:"weights,omitempty"` // percentages, summing to 100
	Min, Max int64   `json:",omitempty"`
}

func (m SizeMix) on() bool { return len(m.Sizes) > 0 || m.Max > 0 }

func (m SizeMix) smallest() int64 {
	if len(m.Sizes) > 0 {
		return slices.Min(m.Sizes)
	}
	return m.Min
}

func (m SizeMix) largest() int64 {
	if len(m.Sizes) > 0 {
		return slices.Max(m.Sizes)
	}
	return m.Max
}

// draw picks an operation's size.
func (m SizeMix) draw(rng *rand.Rand) int64 {
	if len(m.Sizes) == 0 {
		return m.Min + rng.Int64N((m.Max-m.Min)/m.Min+1)*m.Min
	}
	pct := rng.IntN(100)
	for i, w := range m.Weights {
		if pct < w {
			return m.Sizes[i]
		}
		pct -= w
	}
	return m.Sizes[len(m.Sizes)-1]
}

func (m SizeMix) String() string {
	if len(m.Sizes) == 0 {
		return units.FormatSize(m.Min) + "-" + units.FormatSize(m.Max)
	}
	parts := make([]string, len(m.Sizes))
	for i, s := range m.Sizes {
		parts[i] = units.FormatSize(s) + "/" + strconv.Itoa(m.Weights[i])
	}
	return strings.Join(parts, ":")
}

// blockSizesValue is the --bssplit or --bsrange flag: one mix for reads
// and writes, or READ,WRITE.
type blockSizesValue struct {
	p     *[2]SizeMix
	parse func(string) (SizeMix, error)
	text  *string
}

func (v blockSizesValue) String() string {
	if v.text == nil {
		return ""
	}
	return *v.text
}
func (v blockSizesValue) Type() string { return "sizes" }
func (v blockSizesValue) Set(s string) error {
	r, w, pair := strings.Cut(s, ",")
	if !pair {
		w = r
	}
	var out [2]SizeMix
	for d, part := range []string{r, w} {
		m, err := v.parse(strings.TrimSpace(part))
		if err != nil {
			return err
		}
		out[d] = m
	}
	*v.p, *v.text = out, s
	return nil
}

// parseBSSplit reads fio's bssplit for one direction: SIZE/PCT:SIZE/PCT...;
// sizes without a percentage share what the others leave, as in fio.
func parseBSSplit(s string) (SizeMix, error) {
	var m SizeMix
	var open []int // sizes with no percentage given
	sum := 0
	for _, part := range strings.Split(s, ":") {
		size, pct, hasPct := strings.Cut(part, "/")
		n, err := units.ParseFioSize(size)
		if err != nil || n <= 0 {
			return m, fmt.Errorf("%q: want SIZE/PERCENT pairs joined by ':' (4k/60:64k/40): %q is not a size", s, size)
		}
		w := 0
		if hasPct && pct != "" {
			if w, err = strconv.Atoi(pct); err != nil || w < 0 || w > 100 {
				return m, fmt.Errorf("%q: %q is not a percentage 0..100", s, pct)
			}
		} else {
			open = append(open, len(m.Sizes))
		}
		m.Sizes, m.Weights, sum = append(m.Sizes, n), append(m.Weights, w), sum+w
	}
	if len(open) > 0 && sum < 100 {
		for k, i := range open {
			m.Weights[i] = (100 - sum) / len(open)
			if k < (100-sum)%len(open) {
				m.Weights[i]++
			}
		}
		sum = 100
	}
	if sum != 100 {
		return m, fmt.Errorf("%q: the percentages add up to %d, want 100", s, sum)
	}
	return m, nil
}

// parseBSRange reads fio's bsrange for one direction: MIN-MAX.
func parseBSRange(s string) (SizeMix, error) {
	lo, hi, ok := strings.Cut(s, "-")
	a, err1 := units.ParseFioSize(lo)
	b, err2 := units.ParseFioSize(hi)
	if !ok || err1 != nil || err2 != nil || a <= 0 || b < a {
		return SizeMix{}, fmt.Errorf("%q: want MIN-MAX sizes (4k-64k)", s)
	}
	return SizeMix{Min: a, Max: b}, nil
}

// variableSizes says operations draw their sizes.
func (o *Options) variableSizes() bool { return o.BlockSizes[0].on() }

// maxBlock is the largest operation: the buffers' size.
func (o *Options) maxBlock() int64 {
	if !o.variableSizes() {
		return o.BlockSize
	}
	return max(o.BlockSizes[0].largest(), o.BlockSizes[1].largest())
}

// resolveBlockSizes makes BlockSize, with sizes drawn, the unit offsets
// are aligned to: blockalign, else the smallest size (fio's default).
func (o *Options) resolveBlockSizes() {
	if !o.variableSizes() {
		return
	}
	o.BlockSize = cmp.Or(o.BlockAlign, min(o.BlockSizes[0].smallest(), o.BlockSizes[1].smallest()))
}

// validateBlockSizes refuses what iolab does not do with sizes drawn.
func (o *Options) validateBlockSizes() error {
	if !o.variableSizes() {
		if o.BlockAlign > 0 && o.BlockAlign != o.BlockSize {
			return fmt.Errorf("--blockalign %s: iolab aligns offsets to --bs with one block size; give it with --bssplit or --bsrange", units.FormatSize(o.BlockAlign))
		}
		return nil
	}
	what := "--bssplit/--bsrange"
	for d := range 2 {
		for _, n := range append(slices.Clone(o.BlockSizes[d].Sizes), o.BlockSizes[d].Min, o.BlockSizes[d].Max) {
			if o.Direct && n%512 != 0 {
				return fmt.Errorf("%s %s with --direct: want sizes in multiples of 512", what, o.BlockSizes[d])
			}
		}
	}
	switch {
	case o.Verify.on():
		return fmt.Errorf("%s with --verify: iolab verifies blocks of one size; give --bs", what)
	case o.Rate != [2]int64{}:
		return fmt.Errorf("%s with --rate: iolab paces operations of one size in bytes/s; give --rate_iops", what)
	case o.SeqAdd != 0 || o.RandSeq != 0:
		return fmt.Errorf("%s with --rw %s: iolab takes fio's rw modifiers with one block size", what, o.rwName())
	case o.maxBlock() > 1<<30:
		return fmt.Errorf("%s: sizes up to 1g", what)
	}
	return nil
}

// blockSizesParams puts the mix in a cell's parameters, as fio names it.
func (o *Options) blockSizesParams(p map[string]string) {
	if !o.variableSizes() {
		return
	}
	name := "bsrange"
	if len(o.BlockSizes[0].Sizes) > 0 {
		name = "bssplit"
	}
	v := o.BlockSizes[0].String()
	if w := o.BlockSizes[1].String(); w != v {
		v += "," + w
	}
	p[name] = v
	p["blockalign"] = units.FormatSize(o.BlockSize)
}

// fioBlockSizes is the mix on fio's command line.
func (o *Options) fioBlockSizes() []string {
	p := map[string]string{}
	o.blockSizesParams(p)
	var args []string
	for _, k := range []string{"bssplit", "bsrange", "blockalign"} {
		if v, ok := p[k]; ok {
			args = append(args, "--"+k+"="+v)
		}
	}
	return args
}
