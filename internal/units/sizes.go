package units

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
)

// Sizes are object or body sizes: one fixed size, a list (each object picks one),
// or a range drawn log-uniformly, as warp does.
type Sizes struct {
	Fixed    []int64
	Min, Max int64 // a range when Max > 0
}

// ParseSizes reads "4k", "1k,4k,64k" or "1k-10m".
func ParseSizes(s string) (Sizes, error) {
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		a, err := ParseSize(lo)
		if err != nil {
			return Sizes{}, fmt.Errorf("%q, the range's low end: %w", lo, err)
		}
		b, err := ParseSize(hi)
		if err != nil {
			return Sizes{}, fmt.Errorf("%q, the range's high end: %w", hi, err)
		}
		if a < 1 || b <= a {
			return Sizes{}, fmt.Errorf("want a range such as 1k-10m with the first smaller and above 0")
		}
		return Sizes{Min: a, Max: b}, nil
	}
	var out Sizes
	for _, part := range strings.Split(s, ",") {
		n, err := ParseSize(strings.TrimSpace(part))
		if err != nil {
			return Sizes{}, fmt.Errorf("%q: %w", part, err)
		}
		out.Fixed = append(out.Fixed, n)
	}
	sort.Slice(out.Fixed, func(i, j int) bool { return out.Fixed[i] < out.Fixed[j] })
	return out, nil
}

// Pick draws one size.
func (s Sizes) Pick(rng *rand.Rand) int64 {
	if s.Max > 0 {
		l := math.Log(float64(s.Min)) + rng.Float64()*(math.Log(float64(s.Max))-math.Log(float64(s.Min)))
		return int64(math.Exp(l))
	}
	return s.Fixed[rng.IntN(len(s.Fixed))]
}

// String is the form ParseSizes reads.
// Empty says no size was given.
func (s Sizes) Empty() bool { return s.Max == 0 && len(s.Fixed) == 0 }

func (s Sizes) String() string {
	if s.Max > 0 {
		return FormatSize(s.Min) + "-" + FormatSize(s.Max)
	}
	parts := make([]string, len(s.Fixed))
	for i, n := range s.Fixed {
		parts[i] = FormatSize(n)
	}
	return strings.Join(parts, ",")
}
