package lab

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// loadPrint is what every segment of one load runs alike: the schedule
// and each cell's workload with the parameters of the whole load (a
// segment's workload reports the load's, not its share). Two segments
// whose prints differ are not one load, and their runs must not merge.
type loadPrint struct {
	Segments      int         `json:"segments"`
	Rounds        int         `json:"rounds"`
	MinRounds     int         `json:"min_rounds"`
	Warmup        int         `json:"warmup"`
	VariantWarmup int         `json:"warmup_per_variant"`
	Order         string      `json:"order"`
	Seed          uint64      `json:"seed"`
	Cells         []cellPrint `json:"cells"`
}

type cellPrint struct {
	Name    string            `json:"name"`
	Variant string            `json:"variant"`
	Kind    string            `json:"kind"`
	Params  map[string]string `json:"params"`
}

// hostLocal are parameters that name a place on the segment's own host
// (where an fs load writes): two hosts may mount the target at different
// paths and still run one load.
var hostLocal = []string{"directory", "filename"}

// fingerprint is the load's print, as JSON (map keys sorted).
func fingerprint(plan Plan, cells []Cell) string {
	p := loadPrint{Segments: plan.Segment.N, Rounds: plan.Rounds, MinRounds: plan.MinRounds, Warmup: plan.Warmup,
		VariantWarmup: plan.VariantWarmup, Order: plan.Order, Seed: plan.Seed}
	for _, c := range cells {
		params := c.Workload.Params()
		maps.Copy(params, c.Params)
		for _, k := range hostLocal {
			delete(params, k)
		}
		p.Cells = append(p.Cells, cellPrint{Name: c.Name, Variant: c.Variant, Kind: c.Workload.Kind(), Params: params})
	}
	b, _ := json.Marshal(p) // plain fields: cannot fail
	return string(b)
}

// fingerprintDiff names the first difference between the print a group
// holds and a segment's, as "what: X in the group, Y here"; "" when they
// are the same. A print that does not decode is a difference too.
func fingerprintDiff(held, mine string) string {
	if held == mine {
		return ""
	}
	var a, b loadPrint
	if json.Unmarshal([]byte(held), &a) != nil || json.Unmarshal([]byte(mine), &b) != nil {
		return "its stored description is unreadable"
	}
	differ := func(what string, x, y any) string {
		return fmt.Sprintf("%s: %v in the group, %v here", what, x, y)
	}
	for _, f := range []struct {
		what string
		x, y any
	}{{"rounds", a.Rounds, b.Rounds}, {"min rounds", a.MinRounds, b.MinRounds}, {"warm-up rounds", a.Warmup, b.Warmup},
		{"warm-up runs per variant", a.VariantWarmup, b.VariantWarmup}, {"order", a.Order, b.Order}, {"seed", a.Seed, b.Seed},
		{"cells", len(a.Cells), len(b.Cells)}} {
		if f.x != f.y {
			return differ(f.what, f.x, f.y)
		}
	}
	for i := range a.Cells {
		x, y := a.Cells[i], b.Cells[i]
		at := fmt.Sprintf("cell %d", i+1)
		switch {
		case x.Kind != y.Kind:
			return differ(at+" workload", x.Kind, y.Kind)
		case x.Variant != y.Variant:
			return differ(at+" variant", x.Variant, y.Variant)
		}
		both := map[string]string{} // the keys of either
		maps.Copy(both, x.Params)
		maps.Copy(both, y.Params)
		for _, k := range slices.Sorted(maps.Keys(both)) {
			if vx, vy := or(x.Params, k), or(y.Params, k); vx != vy {
				return differ(fmt.Sprintf("%s (%s) %s", at, x.Name, k), vx, vy)
			}
		}
		if x.Name != y.Name {
			return differ(at, x.Name, y.Name)
		}
	}
	return "" // the same load, printed otherwise (an older iolab's field order)
}

// or is m[k], or "(none)" when it is not there.
func or(m map[string]string, k string) string {
	if v, ok := m[k]; ok {
		return v
	}
	return "(none)"
}
