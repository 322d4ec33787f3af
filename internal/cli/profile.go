package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/google/pprof/profile"

	"github.com/iolab/iolab/internal/profiling"
	"github.com/iolab/iolab/internal/store"
)

// profileView is one variant's profile of one cell: its measured runs'
// profiles merged.
type profileView struct {
	Cell    string `json:"cell"`
	Variant string `json:"variant"`
	Kind    string `json:"kind"`
	Runs    int    `json:"runs"`
	// Samples is how many samples the merged profile holds: with few, its
	// shares are coarse (10 ms of CPU is one sample of a Go profile).
	Samples int64            `json:"samples"`
	Top     []profiling.Func `json:"top"`
	// Changes, for a variant other than the baseline, are the functions
	// whose share of CPU changed the most from the baseline's.
	Changes []profiling.Change `json:"changes_vs_baseline,omitempty"`
}

// printProfiles prints the profiles of an experiment's servers: per cell
// and variant the functions that took the most CPU over its measured
// runs, and what gained or lost share against the baseline.
func printProfiles(ctx context.Context, st *store.Store, id string, o RepeatOptions, top int, stdout io.Writer) error {
	data, err := st.Load(ctx, id)
	if err != nil {
		return err
	}
	stored, err := st.Profiles(ctx, data.Experiment.ID)
	if err != nil {
		return err
	}
	if len(stored) == 0 {
		return usage("--profile: experiment %s has no profiles; give a variant of its plan a profile: (go_pprof: URL, or perf: true)", data.Experiment.ID)
	}
	sp, _ := data.Experiment.PlanRecord()
	views, err := profileViews(data, stored, sp.Baseline, top)
	if err != nil {
		return err
	}
	if o.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"experiment": data.Experiment.ID, "profiles": views})
	}
	writeProfiles(stdout, views, sp.Baseline)
	return nil
}

// writeProfiles prints profile views as text: per cell and variant the
// top functions, and the changes against the baseline.
func writeProfiles(w io.Writer, views []profileView, baseline string) {
	for _, v := range views {
		fmt.Fprintf(w, "\n%s — %s: %s profile of %d measured runs (%d samples), top functions by own CPU\n", v.Cell, v.Variant, v.Kind, v.Runs, v.Samples)
		fmt.Fprintf(w, "  %6s  %6s  %s\n", "flat", "cum", "function")
		for _, f := range v.Top {
			fmt.Fprintf(w, "  %5.1f%%  %5.1f%%  %s\n", 100*f.Flat, 100*f.Cum, f.Name)
		}
		if len(v.Changes) == 0 {
			continue
		}
		fmt.Fprintf(w, "  against %s, the largest changes of own CPU share:\n", baseline)
		fmt.Fprintf(w, "  %8s  %8s  %9s  %s\n", "baseline", "this", "change", "function")
		for _, c := range v.Changes {
			fmt.Fprintf(w, "  %7.1f%%  %7.1f%%  %+6.1f pp  %s\n", 100*c.BaseFlat, 100*c.Flat, 100*(c.Flat-c.BaseFlat), c.Name)
		}
	}
}

// profileViews merges the measured runs' profiles per cell, variant and
// kind, in the order of the cells, the baseline first.
func profileViews(data *store.Data, stored map[int64]map[string][]byte, baseline string, top int) ([]profileView, error) {
	type key struct{ cell, variant, kind string }
	byKey := map[key][]*profile.Profile{}
	cellOf := map[int64]store.Cell{}
	for _, c := range data.Cells {
		cellOf[c.ID] = c
	}
	for _, run := range data.Runs {
		if run.Warmup || run.Status != store.StatusOK {
			continue
		}
		c := cellOf[run.CellID]
		for kind, b := range stored[run.ID] {
			p, err := profiling.Parse(b)
			if err != nil {
				return nil, fmt.Errorf("run %d: stored %s profile: %w", run.ID, kind, err)
			}
			k := key{c.Name, c.Variant, kind}
			byKey[k] = append(byKey[k], p)
		}
	}
	var cells, variants []string
	for _, c := range data.Cells {
		if !slices.Contains(cells, c.Name) {
			cells = append(cells, c.Name)
		}
		if !slices.Contains(variants, c.Variant) {
			variants = append(variants, c.Variant)
		}
	}
	slices.SortStableFunc(variants, func(a, b string) int { return boolRank(b == baseline) - boolRank(a == baseline) })
	var views []profileView
	for _, cell := range cells {
		for _, kind := range []string{profiling.GoPprof, profiling.Perf} {
			var base []profiling.Func
			for _, variant := range variants {
				ps := byKey[key{cell, variant, kind}]
				if len(ps) == 0 {
					continue
				}
				merged, err := profiling.Merge(ps)
				if err != nil {
					return nil, fmt.Errorf("%s/%s: merge %s profiles: %w", variant, cell, kind, err)
				}
				shares := profiling.Shares(merged)
				v := profileView{Cell: cell, Variant: variant, Kind: kind, Runs: len(ps), Samples: sampleCount(merged), Top: shares[:min(top, len(shares))]}
				if variant == baseline {
					base = shares
				} else if base != nil {
					changes := profiling.Diff(base, shares)
					v.Changes = changes[:min(top, len(changes))]
				}
				views = append(views, v)
			}
		}
	}
	return views, nil
}

// sampleCount is how many samples a profile holds (its first value is
// the count in Go's and in perf's).
func sampleCount(p *profile.Profile) int64 {
	n := int64(0)
	for _, s := range p.Sample {
		if len(s.Value) > 0 {
			n += s.Value[0]
		}
	}
	return n
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
