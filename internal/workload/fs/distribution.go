package fs

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/iolab/iolab/internal/units"
)

// Distribution is fio's random_distribution: where a random job's
// offsets fall. Uniform (random) by default; zipf:THETA and pareto:H
// make a few blocks hot, normal:DEV% gathers them about a centre, and
// zoned/zoned_abs give shares of the accesses to ranges of the file. As
// fio does, the hot blocks of zipf, pareto and normal are spread over the
// file (their ranks scrambled by a hash) unless a centre is given
// (zipf:1.2:0.25), and a non-uniform distribution has no random map
// (blocks repeat: that is its point).
type Distribution struct {
	Kind   string  // random, zipf, pareto, normal, zoned, zoned_abs
	Value  float64 // zipf's theta, pareto's power, normal's deviation (% of the file)
	Center float64 // where the most probable block lies, 0..1; -1: scrambled (fio's default)
	Zones  []Zone  // zoned: shares of the accesses, in order over the file
	text   string
}

// Zone is a share of the accesses (percent) over the next range of the
// file: a percentage of it (zoned) or a size (zoned_abs).
type Zone struct {
	AccessPct float64
	RangePct  float64
	Bytes     int64
}

// Uniform says offsets are uniform (fio's random, the default).
func (d Distribution) Uniform() bool { return d.Kind == "" || d.Kind == "random" }

func (d Distribution) String() string {
	if d.Uniform() {
		return "random"
	}
	return d.text
}

// ParseDistribution reads fio's random_distribution.
func ParseDistribution(s string) (Distribution, error) {
	kind, rest, _ := strings.Cut(s, ":")
	d := Distribution{Kind: kind, Center: -1, text: s}
	switch kind {
	case "random":
		if rest != "" {
			return d, fmt.Errorf("random takes no value")
		}
		return d, nil
	case "zipf", "pareto", "normal":
		parts := strings.Split(rest, ":")
		if rest == "" || len(parts) > 2 {
			return d, fmt.Errorf("%s takes a value and an optional centre: %s:1.2 or %s:1.2:0.25", kind, kind, kind)
		}
		v, err := strconv.ParseFloat(parts[0], 64)
		switch {
		case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
			return d, fmt.Errorf("%s:%s: want a number", kind, parts[0])
		case kind == "zipf" && (v <= 0 || v == 1):
			return d, fmt.Errorf("zipf:%s: theta must be above 0 and not 1", parts[0])
		case kind == "pareto" && (v <= 0 || v >= 1):
			return d, fmt.Errorf("pareto:%s: the power must lie between 0 and 1", parts[0])
		case kind == "normal" && (v < 0 || v > 100):
			return d, fmt.Errorf("normal:%s: the deviation is a percentage, 0 to 100", parts[0])
		}
		d.Value = v
		if kind == "normal" {
			d.Center = 0.5
		}
		if len(parts) == 2 {
			c, err := strconv.ParseFloat(parts[1], 64)
			if err != nil || !(c >= 0 && c <= 1) {
				return d, fmt.Errorf("%s: centre %s: want a number from 0 to 1", kind, parts[1])
			}
			d.Center = c
		}
		return d, nil
	case "zoned", "zoned_abs":
		return d, d.parseZones(rest)
	}
	return d, fmt.Errorf("%q: want random, zipf:THETA, pareto:H, normal:DEV, zoned:ACCESS%%/RANGE%%:... or zoned_abs:ACCESS%%/SIZE:...", kind)
}

// parseZones reads zoned's ACCESS/RANGE pairs; the accesses add up to
// 100, and zoned's ranges too.
func (d *Distribution) parseZones(rest string) error {
	if strings.Contains(rest, ",") {
		return fmt.Errorf("%s: zones for reads and writes apart are not taken; give one set", d.Kind)
	}
	var access, ranges float64
	zones := strings.Split(rest, ":")
	for i, z := range zones {
		a, r, ok := strings.Cut(z, "/")
		pct, err := strconv.ParseFloat(a, 64)
		if !ok || err != nil || pct < 0 {
			return fmt.Errorf("%s: zone %q: want ACCESS%%/RANGE (60/10)", d.Kind, z)
		}
		zone := Zone{AccessPct: pct}
		switch {
		case r == "" && i == len(zones)-1 && d.Kind == "zoned":
			r = strconv.FormatFloat(100-ranges, 'g', -1, 64) // the last zone without a range: the rest, as fio takes it
		case r == "" && i == len(zones)-1:
			access += pct
			d.Zones = append(d.Zones, zone) // Bytes 0: the rest of the file
			continue
		}
		if d.Kind == "zoned" {
			if zone.RangePct, err = strconv.ParseFloat(r, 64); err != nil || zone.RangePct <= 0 {
				return fmt.Errorf("zoned: zone %q: the range is a percentage of the file above 0", z)
			}
			ranges += zone.RangePct
		} else if zone.Bytes, err = units.ParseFioSize(r); err != nil || zone.Bytes <= 0 {
			return fmt.Errorf("zoned_abs: zone %q: the range is a size (20g)", z)
		}
		access += pct
		d.Zones = append(d.Zones, zone)
	}
	switch {
	case len(d.Zones) == 0 || len(d.Zones) > 256:
		return fmt.Errorf("%s: 1 to 256 zones", d.Kind)
	case math.Abs(access-100) > 1e-9:
		return fmt.Errorf("%s: the zones' accesses add up to %g%%, not 100%%", d.Kind, access)
	case d.Kind == "zoned" && math.Abs(ranges-100) > 1e-9:
		return fmt.Errorf("zoned: the zones' ranges add up to %g%% of the file, not 100%%", ranges)
	}
	return nil
}

// sampler draws blocks of a file of n blocks by the distribution.
type sampler struct {
	d      Distribution
	n      int64
	offset uint64 // added to a scrambled rank
	// zipf (Gray et al.'s method, as fio's): zeta(n), eta, 1/(1-theta)
	zetan, eta, alpha float64
	pow               float64 // pareto: log(h)/log(1-h)
	zones             []zoneRange
}

// zoneRange is a zone in blocks, with the accesses up to its end.
type zoneRange struct {
	upTo       float64 // cumulative share of the accesses, 0..1
	start, end int64   // blocks
}

// zipfTerms is how many terms of zeta(n) are summed at most (fio caps it
// the same: 10M, about a second).
const zipfTerms = 10_000_000

func newSampler(d Distribution, n, blockSize int64, seed uint64) *sampler {
	s := &sampler{d: d, n: max(n, 1), offset: mix(seed)}
	if d.Center >= 0 {
		s.offset = uint64(d.Center * float64(s.n-1))
	}
	switch d.Kind {
	case "zipf":
		for i := range min(s.n, zipfTerms) {
			s.zetan += math.Pow(float64(i+1), -d.Value)
		}
		zeta2 := 1 + math.Pow(2, -d.Value)
		s.alpha = 1 / (1 - d.Value)
		s.eta = (1 - math.Pow(2/float64(s.n), 1-d.Value)) / (1 - zeta2/s.zetan)
	case "pareto":
		s.pow = math.Log(d.Value) / math.Log(1-d.Value)
	case "zoned", "zoned_abs":
		var cum float64
		var at int64
		for _, z := range d.Zones {
			size := int64(z.RangePct / 100 * float64(s.n))
			if d.Kind == "zoned_abs" {
				size = z.Bytes / blockSize
				if z.Bytes == 0 {
					size = s.n - at // the rest
				}
			}
			start := min(at, s.n-1)
			end := max(min(at+size, s.n), start+1)
			cum += z.AccessPct / 100
			s.zones = append(s.zones, zoneRange{upTo: cum, start: start, end: end})
			at = end
		}
		if d.Kind == "zoned" {
			s.zones[len(s.zones)-1].end = s.n // the percentages' rounding
		}
	}
	return s
}

// next is a block, 0 <= block < n.
func (s *sampler) next(rng *rand.Rand) int64 {
	var rank uint64
	switch s.d.Kind {
	case "zipf":
		u := rng.Float64()
		switch uz := u * s.zetan; {
		case uz < 1:
			rank = 0
		case uz < 1+math.Pow(0.5, s.d.Value):
			rank = 1
		default:
			rank = uint64(float64(s.n) * math.Pow(s.eta*u-s.eta+1, s.alpha))
		}
	case "pareto":
		rank = uint64(float64(s.n-1) * math.Pow(rng.Float64(), s.pow))
	case "normal":
		// About the centre, wrapped into the file (never scrambled:
		// fio's centre for normal is 0.5 unless given).
		at := int64(math.Round(rng.NormFloat64()*s.d.Value/100*float64(s.n) + s.d.Center*float64(s.n-1)))
		return (at%s.n + s.n) % s.n
	case "zoned", "zoned_abs":
		u := rng.Float64()
		for _, z := range s.zones {
			if u < z.upTo {
				return z.start + rng.Int64N(z.end-z.start)
			}
		}
		last := s.zones[len(s.zones)-1] // the accesses' sum rounded below 1
		return last.start + rng.Int64N(last.end-last.start)
	default:
		return rng.Int64N(s.n)
	}
	rank %= uint64(s.n)
	if s.d.Center < 0 {
		rank = mix(rank) // the hot ranks spread over the file
	}
	return int64((rank + s.offset) % uint64(s.n))
}

// MarshalJSON writes the distribution as fio writes it (a job's options
// go to its process as JSON).
func (d Distribution) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads what MarshalJSON wrote.
func (d *Distribution) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	parsed, err := ParseDistribution(s)
	*d = parsed
	return err
}
