package analysis

import (
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
)

// Between is two stored experiments compared cell by cell: the same cell
// (workload and parameters) of the same variant in each, B against A.
type Between struct {
	A, B        string           `json:"-"`
	Threshold   float64          `json:"threshold"`
	Comparisons []ComparisonView `json:"comparisons"`
	// Medians are each comparison's medians in A and in B.
	Medians [][2]float64 `json:"-"`
	// OnlyA and OnlyB are the cells one experiment has and the other
	// not.
	OnlyA []string `json:"only_a,omitempty"`
	OnlyB []string `json:"only_b,omitempty"`
}

// CompareExperiments compares b's runs with a's, cell by cell and metric
// by metric, unpaired (stats.CompareUnpaired): the two ran at different
// times, so no round pairs them and nothing cancels what changed between
// them. Holm's correction runs over the primary metrics.
func CompareExperiments(a, b *store.Data, threshold float64) *Between {
	if threshold <= 0 {
		threshold = DefaultThreshold
	}
	out := &Between{A: a.Experiment.ID, B: b.Experiment.ID, Threshold: threshold, Comparisons: []ComparisonView{}}
	runsOf := func(d *store.Data) map[string][]store.Run {
		byID := map[int64]string{}
		for _, c := range d.Cells {
			byID[c.ID] = c.Variant + "\x00" + c.Name
		}
		m := map[string][]store.Run{}
		for _, r := range d.Runs {
			m[byID[r.CellID]] = append(m[byID[r.CellID]], r)
		}
		return m
	}
	ra, rb := runsOf(a), runsOf(b)
	dm := derivedMetrics{}
	inB := map[string]bool{}
	for _, c := range b.Cells {
		inB[c.Variant+"\x00"+c.Name] = true
	}
	inA := map[string]bool{}
	var family []int
	for _, c := range a.Cells {
		key := c.Variant + "\x00" + c.Name
		inA[key] = true
		if !inB[key] {
			out.OnlyA = append(out.OnlyA, label(c))
			continue
		}
		for _, m := range comparedMetrics(c.Workload) {
			def, known := metrics.Describe(m)
			desc, known := def.Stat(), known && def.Judged()
			va, vb := values(dm, ra[key], m), values(dm, rb[key], m)
			if !known || len(va) == 0 || len(vb) == 0 {
				continue
			}
			if m == PrimaryMetric(c.Workload) {
				family = append(family, len(out.Comparisons))
			}
			out.Comparisons = append(out.Comparisons, ComparisonView{Cell: c.Name, Variant: c.Variant, Baseline: a.Experiment.ID,
				Metric: m, Primary: m == PrimaryMetric(c.Workload), Comparison: stats.CompareUnpaired(va, vb, desc, threshold)})
			out.Medians = append(out.Medians, [2]float64{stats.Summarize(va).Median, stats.Summarize(vb).Median})
		}
	}
	for _, c := range b.Cells {
		if !inA[c.Variant+"\x00"+c.Name] {
			out.OnlyB = append(out.OnlyB, label(c))
		}
	}
	ptrs := make([]*stats.Comparison, len(family))
	for i, k := range family {
		ptrs[i] = &out.Comparisons[k].Comparison
	}
	stats.Finish(ptrs, threshold)
	return out
}

func label(c store.Cell) string {
	if c.Variant == "" {
		return c.Name
	}
	return c.Variant + "/" + c.Name
}

// values are a metric's values over the measured, successful runs.
func values(dm derivedMetrics, runs []store.Run, metric string) []float64 {
	var out []float64
	for _, o := range observations(dm, runs, metric, 0) {
		out = append(out, o.Value)
	}
	return out
}
