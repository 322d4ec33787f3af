package cli

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/iolab/iolab/internal/cgroup"
	"github.com/iolab/iolab/internal/observe"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/variant"
)

// variantRun wraps each run of a variant's cell: the plan's run hooks and
// the variant's server — on a port of its own, in a cgroup of the cell's
// limits — started fresh for every run and always stopped.
type variantRun struct {
	v      *variant.Variant
	hooks  plan.Hooks
	params map[string]string // the cell's matrix point
	limits cgroup.Limits     // for the server
	group  *cgroup.Group     // the running server's
}

func (r *variantRun) BeforeRun(ctx context.Context) error {
	if r.v.HasServer() {
		if err := r.v.NewPort(); err != nil {
			return err
		}
	}
	if err := r.v.Hook(ctx, "before_run", r.hooks.BeforeRun, r.params); err != nil {
		return err
	}
	if r.v.HasServer() && !r.limits.IsZero() {
		var err error
		if r.group, err = cgroup.New(r.limits); err != nil {
			return fmt.Errorf("variant %s: %w", r.v.Name, err)
		}
	}
	err := r.v.Start(ctx, r.params, r.group)
	if err != nil && r.group != nil {
		if oom := r.group.OOMError(r.group.Usage()); oom != nil {
			return fmt.Errorf("variant %s: its server was %w while it started (%v)", r.v.Name, oom, err)
		}
	}
	return err
}

// Observe implements lab.Observer: the server's whole process tree, read
// from /proc every second while the workload runs, and its cgroup's
// accounting.
func (r *variantRun) Observe() func() map[string]float64 {
	pid := r.v.ServerPID()
	if pid == 0 {
		return nil
	}
	w := observe.WatchTree(pid, time.Second)
	var before cgroup.Usage
	if r.group != nil {
		before = r.group.Usage()
	}
	return func() map[string]float64 {
		p := w.Stop()
		out := map[string]float64{}
		if p.Samples > 0 {
			out = map[string]float64{"server_cpu_s": p.CPUSeconds, "server_rss_peak_bytes": float64(p.RSSBytes),
				"server_read_bytes": float64(p.ReadBytes), "server_write_bytes": float64(p.WriteBytes),
				"server_threads_max": float64(p.MaxThreads), "server_fds_max": float64(p.MaxFDs)}
		}
		if r.group != nil {
			// CPU over the measured window, like server_cpu_s; the memory
			// peak is the server's whole life's.
			u := r.group.Usage()
			u.CPU -= before.CPU
			u.Throttled -= before.Throttled
			maps.Copy(out, u.Metrics())
		}
		return out
	}
}

func (r *variantRun) AfterRun(ctx context.Context) error {
	stopErr := r.v.Stop()
	var oom, rmErr error
	if r.group != nil {
		oom = r.group.OOMError(r.group.Usage())
		rmErr = r.group.Remove()
		r.group = nil
	}
	if err := r.v.Hook(ctx, "after_run", r.hooks.AfterRun, r.params); err != nil {
		return err
	}
	switch {
	case oom != nil:
		return fmt.Errorf("variant %s: its server was %w", r.v.Name, oom)
	case stopErr != nil:
		return fmt.Errorf("variant %s: stop: %w", r.v.Name, stopErr)
	case rmErr != nil:
		return fmt.Errorf("variant %s: %w", r.v.Name, rmErr)
	}
	return nil
}
