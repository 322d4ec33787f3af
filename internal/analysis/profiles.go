package analysis

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/google/pprof/profile"

	"github.com/iolab/iolab/internal/profiling"
	"github.com/iolab/iolab/internal/store"
)

// ProfileView is one variant's profile of one cell: its measured runs'
// profiles merged.
type ProfileView struct {
	Cell    string `json:"cell"`
	Variant string `json:"variant"`
	Kind    string `json:"kind"`
	Runs    int    `json:"runs"`
	// Samples is how many samples the merged profile holds: with few, its
	// shares are coarse (10 ms of CPU is one sample of a Go profile).
	Samples int64            `json:"samples"`
	Top     []profiling.Func `json:"top"`
	// Sort is the order of Top and of Changes: flat or cum.
	Sort string `json:"sort"`
	// Focus are the callers and callees of the functions ProfileOptions'
	// Focus names.
	Focus []profiling.Neighbours `json:"focus,omitempty"`
	// Changes, for a variant other than the baseline, are the functions
	// whose share of CPU changed the most from the baseline's.
	Changes []profiling.Change `json:"changes_vs_baseline,omitempty"`
	// Merged is the merged profile itself, for go tool pprof.
	Merged *profile.Profile `json:"-"`
}

// ProfileOptions say how a view lists a profile.
type ProfileOptions struct {
	// Top is how many functions (and changes, callers, callees) to keep.
	Top int
	// Sort orders the functions and the changes: by own share
	// (profiling.SortFlat) or with what they call (profiling.SortCum).
	Sort string
	// Focus, when set, lists the callers and callees of the functions it
	// matches.
	Focus *regexp.Regexp
}

// ProfileViews merges the measured runs' stored profiles (by run, then
// kind) per cell, variant and kind, in the order of the cells, the
// baseline first; a variant other than the baseline gets its changes
// against the baseline's profile of the same cell and kind.
func ProfileViews(data *store.Data, stored map[int64]map[string][]byte, baseline string, po ProfileOptions) ([]ProfileView, error) {
	byKey, err := profilesByView(data, stored)
	if err != nil {
		return nil, err
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
	var views []ProfileView
	for _, cell := range cells {
		for _, kind := range []string{profiling.GoPprof, profiling.Perf} {
			var base []profiling.Func
			for _, variant := range variants {
				ps := byKey[viewKey{cell, variant, kind}]
				if len(ps) == 0 {
					continue
				}
				v, shares, err := profileView(ps, po)
				if err != nil {
					return nil, fmt.Errorf("%s/%s: merge %s profiles: %w", variant, cell, kind, err)
				}
				v.Cell, v.Variant, v.Kind = cell, variant, kind
				if variant == baseline {
					base = shares
				} else if base != nil {
					changes := profiling.Diff(base, shares, po.Sort)
					v.Changes = changes[:min(po.Top, len(changes))]
				}
				views = append(views, v)
			}
		}
	}
	return views, nil
}

type viewKey struct{ cell, variant, kind string }

// profilesByView parses the stored profiles of the measured runs, by
// cell, variant and kind.
func profilesByView(data *store.Data, stored map[int64]map[string][]byte) (map[viewKey][]*profile.Profile, error) {
	byKey := map[viewKey][]*profile.Profile{}
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
			k := viewKey{c.Name, c.Variant, kind}
			byKey[k] = append(byKey[k], p)
		}
	}
	return byKey, nil
}

// profileView merges one view's profiles and lists its top functions
// (and those the focus names), returning every function's share too.
func profileView(ps []*profile.Profile, po ProfileOptions) (ProfileView, []profiling.Func, error) {
	merged, err := profiling.Merge(ps)
	if err != nil {
		return ProfileView{}, nil, err
	}
	shares := profiling.Shares(merged)
	profiling.SortShares(shares, po.Sort)
	v := ProfileView{Runs: len(ps), Samples: sampleCount(merged), Sort: po.Sort, Top: shares[:min(po.Top, len(shares))], Merged: merged}
	if po.Focus != nil {
		v.Focus = profiling.Focus(merged, po.Focus)
		for i := range v.Focus {
			n := &v.Focus[i]
			n.Callers, n.Callees = n.Callers[:min(po.Top, len(n.Callers))], n.Callees[:min(po.Top, len(n.Callees))]
		}
	}
	return v, shares, nil
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
