package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/observe"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/variant"
	"github.com/iolab/iolab/internal/workload"
	"github.com/iolab/iolab/internal/workload/cmd"
	"github.com/iolab/iolab/internal/workload/frames"
	"github.com/iolab/iolab/internal/workload/fs"
	"github.com/iolab/iolab/internal/workload/httpload"
	"github.com/iolab/iolab/internal/workload/s3"
)

// planCells expands a plan into cells: every workload at every point of its
// matrix, for every variant. A cell's name is the workload and its matrix
// point, the same for every variant, so comparisons pair them.
func planCells(p *plan.Plan, variants []*variant.Variant) ([]lab.Cell, error) {
	var cells []lab.Cell
	for _, w := range p.Workloads {
		for _, point := range w.Points() {
			name := cellName(w, point)
			for _, v := range variants {
				wl, target, err := buildWorkload(p, w, point, v)
				if err != nil {
					return nil, err
				}
				// What talks to the variant's server (s3, http) is set up
				// after each start of it; local files (fs, frames) once.
				perStart := v.HasServer() && (w.Kind == "s3" || w.Kind == "http")
				cells = append(cells, lab.Cell{Name: name, Variant: v.Name, Workload: wl, Target: target,
					Around: &variantRun{v: v, hooks: p.Hooks}, PerStart: perStart})
			}
		}
	}
	return cells, nil
}

func cellName(w plan.Workload, point map[string]plan.Value) string {
	parts := []string{w.Name}
	for _, ax := range w.Matrix {
		parts = append(parts, ax.Field+"="+point[ax.Field].Text)
	}
	return strings.Join(parts, " ")
}

var template = regexp.MustCompile(`\{\{[^}]*\}\}`)

// expand fills a plan value's templates for a variant and matrix point and
// rejects any template left unknown.
func expand(val plan.Value, field string, v *variant.Variant, params map[string]string) (string, error) {
	s := v.Expand(val.Text)
	for k, x := range params {
		s = strings.ReplaceAll(s, "{{"+k+"}}", x)
	}
	// Templates the workload fills itself, per operation (http URLs).
	rest := s
	for _, t := range []string{"{{i}}", "{{worker}}", "{{id}}"} {
		rest = strings.ReplaceAll(rest, t, "")
	}
	if m := template.FindString(rest); m != "" {
		known := []string{"{{variant}}", "{{workdir}}", "{{tmp}}", "{{port}}", "{{i}}", "{{worker}}", "{{id}}"}
		for k := range params {
			known = append(known, "{{"+k+"}}")
		}
		sort.Strings(known[7:])
		return "", val.Pos.Errorf("%s: unknown template %s; known: %s", field, m, strings.Join(known, ", "))
	}
	return s, nil
}

// fields merges a workload's settings with a matrix point.
func fields(w plan.Workload, point map[string]plan.Value) map[string]plan.Value {
	f := map[string]plan.Value{}
	for k, v := range w.Fields {
		f[k] = v
	}
	for k, v := range point {
		f[k] = v
	}
	return f
}

func buildWorkload(p *plan.Plan, w plan.Workload, point map[string]plan.Value, v *variant.Variant) (workload.Workload, string, error) {
	switch w.Kind {
	case "cmd":
		return buildCmd(w, point, v)
	case "s3":
		return buildS3(p, w, point, v)
	case "http":
		return buildHTTP(p, w, point, v)
	case "frames":
		return buildFrames(p, w, point, v)
	}
	return buildFS(p, w, point, v)
}

// applyFields sets a plan workload's fields through the flags of its
// command, so a plan accepts exactly what the command line accepts.
func applyFields(p *plan.Plan, flags *pflag.FlagSet, w plan.Workload, point map[string]plan.Value, v *variant.Variant) error {
	var known []string
	flags.VisitAll(func(f *pflag.Flag) { known = append(known, f.Name) })
	all := fields(w, point)
	for _, key := range sortedKeys(all) {
		val := all[key]
		if flags.Lookup(key) == nil {
			return val.KeyPos.Errorf("unknown key %q in %s workload %q; known: %s", key, w.Kind, w.Name, strings.Join(known, ", "))
		}
		text, err := expand(val, w.Kind+"."+key, v, nil)
		if err != nil {
			return err
		}
		if (key == "directory" || key == "filename" || key == "url-file") && !filepath.IsAbs(text) {
			text = filepath.Join(p.Dir, text)
		}
		if err := setFlag(flags, key, text); err != nil {
			return val.Pos.Errorf("%s.%s %q: %v", w.Kind, key, text, err)
		}
	}
	return nil
}

// flagWorkload builds a workload whose plan keys are its command's flags:
// addFlags registers them, the fields are set through them, and build
// makes the workload from the parsed options.
func flagWorkload(p *plan.Plan, w plan.Workload, point map[string]plan.Value, v *variant.Variant,
	addFlags func(*pflag.FlagSet), build func() (workload.Workload, string, error)) (workload.Workload, string, error) {
	flags := pflag.NewFlagSet(w.Kind, pflag.ContinueOnError)
	addFlags(flags)
	if err := applyFields(p, flags, w, point, v); err != nil {
		return nil, "", err
	}
	wl, target, err := build()
	if err != nil {
		return nil, "", w.Pos.Errorf("workload %q: %v", w.Name, err)
	}
	return wl, target, nil
}

func buildFS(p *plan.Plan, w plan.Workload, point map[string]plan.Value, v *variant.Variant) (workload.Workload, string, error) {
	var o FSOptions
	return flagWorkload(p, w, point, v, o.AddJobFlags, func() (workload.Workload, string, error) {
		job, err := o.job()
		if err != nil {
			return nil, "", err
		}
		target := job.Directory
		if target == "" {
			target = job.Filename
		}
		wl, err := fs.New(job)
		return wl, target, err
	})
}

func buildS3(p *plan.Plan, w plan.Workload, point map[string]plan.Value, v *variant.Variant) (workload.Workload, string, error) {
	var o S3Options
	return flagWorkload(p, w, point, v, o.AddJobFlags, func() (workload.Workload, string, error) {
		job, err := o.job()
		if err != nil {
			return nil, "", err
		}
		wl, err := s3.New(job)
		return wl, v.Workdir, err
	})
}

func buildHTTP(p *plan.Plan, w plan.Workload, point map[string]plan.Value, v *variant.Variant) (workload.Workload, string, error) {
	var o HTTPOptions
	mode := httpload.Upload
	addFlags := func(f *pflag.FlagSet) {
		o.AddJobFlags(f)
		f.StringVar(&mode, "mode", mode, "upload or download")
	}
	return flagWorkload(p, w, point, v, addFlags, func() (workload.Workload, string, error) {
		job, err := o.job(mode)
		if err != nil {
			return nil, "", err
		}
		wl, err := httpload.New(job)
		return wl, v.Workdir, err
	})
}

func buildFrames(p *plan.Plan, w plan.Workload, point map[string]plan.Value, v *variant.Variant) (workload.Workload, string, error) {
	var o FramesOptions
	return flagWorkload(p, w, point, v, o.AddJobFlags, func() (workload.Workload, string, error) {
		job, err := o.job()
		if err != nil {
			return nil, "", err
		}
		wl, err := frames.New(job)
		return wl, job.Directory, err
	})
}

func buildCmd(w plan.Workload, point map[string]plan.Value, v *variant.Variant) (workload.Workload, string, error) {
	params := map[string]string{}
	for k, val := range point {
		params[k] = val.Text
	}
	o := cmd.Options{Dir: v.Workdir, Env: v.Env(), Params: params}
	all := fields(w, point)
	known := []string{"run", "bytes", "items", "timeout"}
	for _, key := range sortedKeys(all) {
		val := all[key]
		if _, isParam := point[key]; isParam {
			continue
		}
		var err error
		switch key {
		case "run":
			if o.Run, err = expand(val, "cmd.run", v, params); err != nil {
				return nil, "", err
			}
		case "bytes":
			o.BytesPerRun, err = units.ParseSize(val.Text)
			if err == nil && o.BytesPerRun < 1 {
				err = errors.New("want a size above 0 such as 1g")
			}
		case "items":
			o.ItemsPerRun, err = units.ParseInt(val.Text, 1, math.MaxInt64)
		case "timeout":
			o.Timeout, err = units.ParseDuration(val.Text)
		default:
			return nil, "", val.KeyPos.Errorf("unknown key %q in cmd workload %q; known: %s (matrix fields become {{name}} templates)", key, w.Name, strings.Join(known, ", "))
		}
		if err != nil {
			return nil, "", val.Pos.Errorf("cmd.%s %q: %v", key, val.Text, err)
		}
	}
	wl, err := cmd.New(o)
	if err != nil {
		return nil, "", w.Pos.Errorf("workload %q: %v", w.Name, err)
	}
	return wl, v.Workdir, nil
}

func sortedKeys(m map[string]plan.Value) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// variantRun wraps each run of a variant's cell: the plan's run hooks and
// the variant's server, started fresh for every run and always stopped.
type variantRun struct {
	v     *variant.Variant
	hooks plan.Hooks
}

func (r *variantRun) BeforeRun(ctx context.Context) error {
	if err := r.v.Hook(ctx, "before_run", r.hooks.BeforeRun); err != nil {
		return err
	}
	return r.v.Start(ctx)
}

// Observe implements lab.Observer: the server's whole process tree, read
// from /proc every second while the workload runs.
func (r *variantRun) Observe() func() map[string]float64 {
	pid := r.v.ServerPID()
	if pid == 0 {
		return nil
	}
	w := observe.WatchTree(pid, time.Second)
	return func() map[string]float64 {
		p := w.Stop()
		if p.Samples == 0 {
			return nil
		}
		return map[string]float64{"server_cpu_s": p.CPUSeconds, "server_max_rss_bytes": float64(p.RSSBytes),
			"server_read_bytes": float64(p.ReadBytes), "server_write_bytes": float64(p.WriteBytes),
			"server_threads_max": float64(p.MaxThreads), "server_fds_max": float64(p.MaxFDs)}
	}
}

func (r *variantRun) AfterRun(ctx context.Context) error {
	stopErr := r.v.Stop()
	if err := r.v.Hook(ctx, "after_run", r.hooks.AfterRun); err != nil {
		return err
	}
	if stopErr != nil {
		return fmt.Errorf("variant %s: stop: %w", r.v.Name, stopErr)
	}
	return nil
}
