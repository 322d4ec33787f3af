package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/google/pprof/profile"
	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/flagval"
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
	// Sort is the order of Top and of Changes: flat or cum.
	Sort string `json:"sort"`
	// Focus are the callers and callees of the functions --focus names.
	Focus []profiling.Neighbours `json:"focus,omitempty"`
	// Changes, for a variant other than the baseline, are the functions
	// whose share of CPU changed the most from the baseline's.
	Changes []profiling.Change `json:"changes_vs_baseline,omitempty"`
}

// ProfileOptions say how show --profile lists a profile.
type ProfileOptions struct {
	Top int
	// Sort orders the functions and the changes: by own share (flat) or
	// with what they call (cum).
	Sort string
	// Focus, a regular expression, lists the callers and callees of the
	// functions it matches.
	Focus string
	// Pprof is a file to write each merged profile to, for go tool pprof.
	Pprof string
}

func (o *ProfileOptions) addFlags(f *pflag.FlagSet) {
	flagval.IntVar(f, &o.Top, "top", 15, 1, 10000, "with --profile, how many functions to list")
	f.StringVar(&o.Sort, "sort", profiling.SortFlat, "with --profile, order functions (and changes against the baseline) by their own CPU share (flat) or with what they call (cum)")
	f.StringVar(&o.Focus, "focus", "", "with --profile, the callers and callees of the functions this regular expression matches")
	f.StringVar(&o.Pprof, "pprof", "", "with --profile, write each variant's merged profile of each cell to this file (several: FILE-variant-cell-kind.pb.gz), for go tool pprof")
}

// printProfiles prints the profiles of an experiment's servers: per cell
// and variant the functions that took the most CPU over its measured
// runs, and what gained or lost share against the baseline.
func printProfiles(ctx context.Context, st *store.Store, id string, o RepeatOptions, po ProfileOptions, stdout io.Writer) error {
	if po.Sort != profiling.SortFlat && po.Sort != profiling.SortCum {
		return usage("--sort %q: want flat or cum", po.Sort)
	}
	var focus *regexp.Regexp
	if po.Focus != "" {
		var err error
		if focus, err = regexp.Compile(po.Focus); err != nil {
			return usage("--focus %q: %v", po.Focus, err)
		}
	}
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
	views, merged, err := profileViews(data, stored, sp.Baseline, po, focus)
	if err != nil {
		return err
	}
	if po.Pprof != "" {
		if err := writePprof(po.Pprof, views, merged, stdout); err != nil {
			return err
		}
	}
	if o.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"experiment": data.Experiment.ID, "profiles": views})
	}
	writeProfiles(stdout, views, sp.Baseline)
	return nil
}

// writePprof writes each merged profile as a gzipped pprof protobuf: to
// path when there is one, else to path with the view's names before its
// extension.
func writePprof(path string, views []profileView, merged []*profile.Profile, stdout io.Writer) error {
	for i, v := range views {
		file := path
		if len(views) > 1 {
			ext := filepath.Ext(path)
			if strings.HasSuffix(path, ".pb.gz") {
				ext = ".pb.gz"
			}
			name := strings.Map(func(r rune) rune {
				if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '.' || r == '_' {
					return r
				}
				return '_'
			}, v.Variant+"-"+v.Cell+"-"+v.Kind)
			file = strings.TrimSuffix(path, ext) + "-" + name + ext
		}
		f, err := os.Create(file)
		if err != nil {
			return usage("--pprof: %v", err)
		}
		err = merged[i].Write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("--pprof %s: %w", file, err)
		}
		fmt.Fprintf(stdout, "wrote %s (%s/%s, %s, %d runs): go tool pprof %s\n", file, v.Variant, v.Cell, v.Kind, v.Runs, file)
	}
	return nil
}

// writeProfiles prints profile views as text: per cell and variant the
// top functions, and the changes against the baseline.
func writeProfiles(w io.Writer, views []profileView, baseline string) {
	for _, v := range views {
		by := map[string]string{profiling.SortFlat: "own CPU", profiling.SortCum: "CPU with what they call"}[v.Sort]
		fmt.Fprintf(w, "\n%s — %s: %s profile of %d measured runs (%d samples), top functions by %s\n", v.Cell, v.Variant, v.Kind, v.Runs, v.Samples, by)
		fmt.Fprintf(w, "  %6s  %6s  %s\n", "flat", "cum", "function")
		for _, f := range v.Top {
			fmt.Fprintf(w, "  %5.1f%%  %5.1f%%  %s\n", 100*f.Flat, 100*f.Cum, f.Name)
		}
		for _, n := range v.Focus {
			fmt.Fprintf(w, "  %s: flat %.1f%%, cum %.1f%%\n    called by:\n", n.Name, 100*n.Flat, 100*n.Cum)
			for _, c := range n.Callers {
				fmt.Fprintf(w, "      %5.1f%%  %s\n", 100*c.Cum, c.Name)
			}
			fmt.Fprintf(w, "    calls:\n")
			for _, c := range n.Callees {
				fmt.Fprintf(w, "      %5.1f%%  %s\n", 100*c.Cum, c.Name)
			}
			if n.Flat > 0 {
				fmt.Fprintf(w, "      %5.1f%%  (itself)\n", 100*n.Flat)
			}
		}
		if len(v.Changes) == 0 {
			continue
		}
		fmt.Fprintf(w, "  against %s, the largest changes of %s share:\n", baseline, by)
		fmt.Fprintf(w, "  %8s  %8s  %9s  %s\n", "baseline", "this", "change", "function")
		for _, c := range v.Changes {
			base, this := c.BaseFlat, c.Flat
			if v.Sort == profiling.SortCum {
				base, this = c.BaseCum, c.Cum
			}
			fmt.Fprintf(w, "  %7.1f%%  %7.1f%%  %+6.1f pp  %s\n", 100*base, 100*this, 100*(this-base), c.Name)
		}
	}
}

// profileViews merges the measured runs' profiles per cell, variant and
// kind, in the order of the cells, the baseline first.
func profileViews(data *store.Data, stored map[int64]map[string][]byte, baseline string, po ProfileOptions, focus *regexp.Regexp) ([]profileView, []*profile.Profile, error) {
	top := po.Top
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
				return nil, nil, fmt.Errorf("run %d: stored %s profile: %w", run.ID, kind, err)
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
	var profiles []*profile.Profile
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
					return nil, nil, fmt.Errorf("%s/%s: merge %s profiles: %w", variant, cell, kind, err)
				}
				shares := profiling.Shares(merged)
				profiling.SortShares(shares, po.Sort)
				v := profileView{Cell: cell, Variant: variant, Kind: kind, Runs: len(ps), Samples: sampleCount(merged), Sort: po.Sort,
					Top: shares[:min(top, len(shares))]}
				if focus != nil {
					v.Focus = profiling.Focus(merged, focus)
					for i := range v.Focus {
						n := &v.Focus[i]
						n.Callers, n.Callees = n.Callers[:min(top, len(n.Callers))], n.Callees[:min(top, len(n.Callees))]
					}
				}
				if variant == baseline {
					base = shares
				} else if base != nil {
					changes := profiling.Diff(base, shares, po.Sort)
					v.Changes = changes[:min(top, len(changes))]
				}
				views = append(views, v)
				profiles = append(profiles, merged)
			}
		}
	}
	return views, profiles, nil
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
