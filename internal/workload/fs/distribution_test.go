package fs

import (
	"math"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// hitShares draws as many offsets as a 1 GiB file has 4 KiB blocks, as
// fio-genzipf does, and returns the share of the hits (percent) that the
// most-hit blocks took, the top pct of the blocks hit, for each pct.
func hitShares(t *testing.T, spec string, pcts []float64) []float64 {
	t.Helper()
	d, err := ParseDistribution(spec)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(1 << 18)
	s := newSampler(d, n, 4096, 7)
	hits := make([]int, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for range n {
		hits[s.next(rng)]++
	}
	slices.Sort(hits)
	slices.Reverse(hits)
	hit := slices.IndexFunc(hits, func(h int) bool { return h == 0 })
	if hit < 0 {
		hit = len(hits)
	}
	var out []float64
	for _, pct := range pcts {
		sum := 0
		for _, h := range hits[:int(pct/100*float64(hit))] {
			sum += h
		}
		out = append(out, 100*float64(sum)/float64(n))
	}
	return out
}

// zipf, pareto and normal skew the offsets as fio's do: the share of the
// hits the top 5%, 10% and 50% of the blocks take is fio-genzipf's (fio's
// own tool for its distributions) within a point, a point and a half and
// five points (the tail's ties depend on how ranks are spread).
func TestDistributionsSkewAsFios(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("fio-genzipf"); err != nil {
		t.Skip("fio-genzipf (Debian's fio) not installed")
	}
	row := regexp.MustCompile(`(?m)^(?:Top|\|->)\s+([0-9.]+)%\s+[0-9.]+%\s+([0-9.]+)%`)
	for _, c := range []struct{ kind, value string }{{"zipf", "1.2"}, {"zipf", "0.8"}, {"pareto", "0.3"}, {"normal", "10"}} {
		out, err := exec.Command("fio-genzipf", "-t", c.kind, "-i", c.value, "-g", "1", "-b", "4096").Output()
		if err != nil {
			t.Fatal(err)
		}
		fio := map[float64]float64{}
		for _, m := range row.FindAllStringSubmatch(string(out), -1) {
			pct, _ := strconv.ParseFloat(m[1], 64)
			sum, _ := strconv.ParseFloat(m[2], 64)
			fio[pct] = sum
		}
		got := hitShares(t, c.kind+":"+c.value, []float64{5, 10, 50})
		for i, tol := range map[int]float64{0: 1, 1: 1.5, 2: 5} {
			pct := []float64{5, 10, 50}[i]
			if want, ok := fio[pct]; !ok || math.Abs(got[i]-want) > tol {
				t.Errorf("%s:%s: the top %g%% of blocks took %.2f%% of the hits; fio-genzipf says %.2f%% (found: %v)", c.kind, c.value, pct, got[i], want, ok)
			}
		}
	}
}

// zoned and zoned_abs give each range of the file its share of the
// accesses, uniform within it.
func TestZonedDistribution(t *testing.T) {
	t.Parallel()
	const n = 1000
	for _, spec := range []string{"zoned:60/10:30/20:8/30:2/40", "zoned_abs:60/400k:30/800k:8/1200k:2/1600k",
		"zoned:60/10:30/20:8/30:2/", "zoned_abs:60/400k:30/800k:8/1200k:2/"} { // the last zone the rest, as fio takes it
		d, err := ParseDistribution(spec)
		if err != nil {
			t.Fatal(err)
		}
		s := newSampler(d, n, 4096, 1)
		rng := rand.New(rand.NewPCG(3, 4))
		var zones [4]int
		const draws = 200_000
		for range draws {
			b := s.next(rng)
			switch {
			case b < 100:
				zones[0]++
			case b < 300:
				zones[1]++
			case b < 600:
				zones[2]++
			default:
				zones[3]++
			}
		}
		for i, want := range []float64{60, 30, 8, 2} {
			if got := 100 * float64(zones[i]) / draws; math.Abs(got-want) > 0.5 {
				t.Errorf("%s: zone %d took %.2f%% of the accesses, want %g%%", spec, i+1, got, want)
			}
		}
	}
	for _, bad := range []string{"zoned:60/10:30/20", "zoned:50/50:50/60", "zipf:1", "pareto:1.5", "normal:200", "zipf", "gauss:3", "zoned:60/10,40/90"} {
		if _, err := ParseDistribution(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
