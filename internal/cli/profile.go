package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/outpath"
	"github.com/iolab/iolab/internal/profiling"
	"github.com/iolab/iolab/internal/report"
	"github.com/iolab/iolab/internal/store"
)

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
	if po.Pprof != "" { // several profiles are named from it, in its directory
		if err := outpath.Writable("--pprof", po.Pprof, isGzip); err != nil {
			return err
		}
	}
	opts := analysis.ProfileOptions{Top: po.Top, Sort: po.Sort}
	if po.Focus != "" {
		var err error
		if opts.Focus, err = regexp.Compile(po.Focus); err != nil {
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
	views, err := analysis.ProfileViews(data, stored, sp.Baseline, opts)
	if err != nil {
		return err
	}
	if po.Pprof != "" {
		if err := writePprof(po.Pprof, views, stdout); err != nil {
			return err
		}
	}
	if o.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"experiment": data.Experiment.ID, "profiles": views})
	}
	report.Profiles(stdout, views, sp.Baseline)
	return nil
}

// writePprof writes each merged profile as a gzipped pprof protobuf: to
// path when there is one, else to path with the view's names before its
// extension.
func writePprof(path string, views []analysis.ProfileView, stdout io.Writer) error {
	for _, v := range views {
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
		// A gzipped file is taken for a profile iolab wrote before.
		if err := outpath.Check("--pprof", file, isGzip); err != nil {
			return err
		}
		f, err := os.Create(file)
		if err != nil {
			return usage("--pprof: %v", err)
		}
		err = v.Merged.Write(f)
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

// isGzip says a file's head is gzip's, as a profile iolab wrote starts.
func isGzip(head []byte) bool { return bytes.HasPrefix(head, []byte{0x1f, 0x8b}) }
