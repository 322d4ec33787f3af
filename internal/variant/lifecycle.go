package variant

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/iolab/iolab/internal/cgroup"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/observe"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/procgroup"
	"github.com/iolab/iolab/internal/profiling"
	"github.com/iolab/iolab/internal/units"
)

// Lifecycle wraps each run of a variant's cell (lab.Around, lab.Observer):
// the plan's run hooks and the variant's server — on a port of its own,
// in a cgroup of the cell's limits — started fresh for every run, watched
// and profiled while the workload runs, and always stopped. The workload's
// own set-up against the server (lab.Cell.PerStart) comes between
// BeforeRun and the run, its close before AfterRun.
type Lifecycle struct {
	v      *Variant
	hooks  plan.Hooks
	params map[string]string // the cell's matrix point
	limits cgroup.Limits     // for the server
	group  *cgroup.Group     // the running server's
	// observed is the process the variant names to observe (observe:),
	// when it starts no server.
	observed int
}

// Lifecycle is the lifecycle of the variant's runs of a cell: the plan's
// run hooks, the cell's matrix point (params) for their templates, and
// the limits of the server's cgroup.
func (v *Variant) Lifecycle(hooks plan.Hooks, params map[string]string, limits cgroup.Limits) *Lifecycle {
	return &Lifecycle{v: v, hooks: hooks, params: params, limits: limits}
}

// BeforeRun starts the run: a new port, the before_run hook, the cgroup,
// the server, ready.
func (r *Lifecycle) BeforeRun(ctx context.Context) error {
	if r.v.HasServer() {
		if err := r.v.NewPort(); err != nil {
			return err
		}
	}
	if err := r.v.Hook(ctx, "before_run", r.hooks.BeforeRun, r.params); err != nil {
		return err
	}
	if err := r.resolveObserved(); err != nil {
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

// Serving implements lab.Server: a server was started for the run.
func (r *Lifecycle) Serving() bool { return r.v.HasServer() }

// Observe implements lab.Observer: the server's whole process tree (or
// the process the variant names to observe), read from /proc every second
// while the workload runs, and its cgroup's accounting.
func (r *Lifecycle) Observe(each func(metrics.ServerSecond)) func() observe.Observation {
	pid := r.v.ServerPID()
	if pid == 0 {
		pid = r.observed
	}
	if pid == 0 {
		return nil
	}
	watch := watchServer(pid, each, r.group)
	captures, err := r.startProfiles(pid)
	return func() observe.Observation {
		obs := observe.Observation{Extra: watch(), Err: err}
		for kind, c := range captures {
			data, perr := c.Stop()
			if perr != nil {
				obs.Err = cmp.Or(obs.Err, fmt.Errorf("variant %s: %w", r.v.Name, perr))
				continue
			}
			if obs.Profiles == nil {
				obs.Profiles = map[string][]byte{}
			}
			obs.Profiles[kind] = data
		}
		return obs
	}
}

// startProfiles starts the profiles the variant asks for, of the server
// pid's process tree.
func (r *Lifecycle) startProfiles(pid int) (map[string]profiling.Capture, error) {
	spec := r.v.Spec().Profile
	if spec == nil {
		return nil, nil
	}
	out := map[string]profiling.Capture{}
	if spec.GoPprof.Text != "" {
		c, err := profiling.StartGo(context.Background(), r.v.ExpandWith(spec.GoPprof.Text, r.params))
		if err != nil {
			return out, fmt.Errorf("variant %s: %w", r.v.Name, err)
		}
		out[profiling.GoPprof] = c
	}
	if spec.Perf {
		c, err := profiling.StartPerf(observe.Tree(pid))
		if err != nil {
			return out, fmt.Errorf("variant %s: %w", r.v.Name, err)
		}
		out[profiling.Perf] = c
	}
	return out, nil
}

// watchServer watches the process tree of pid during a run: each second
// goes to each, and the returned function stops and gives the run's
// server figures (with the cgroup's accounting over the same window, when
// the server runs in one).
func watchServer(pid int, each func(metrics.ServerSecond), group *cgroup.Group) func() map[string]float64 {
	w := observe.WatchTree(pid, time.Second, each)
	var before cgroup.Usage
	if group != nil {
		before = group.Usage()
	}
	return func() map[string]float64 {
		p := w.Stop()
		out := map[string]float64{}
		if p.Samples > 0 {
			out = map[string]float64{"server_cpu_s": p.CPUSeconds, "server_rss_peak_bytes": float64(p.RSSBytes),
				"server_read_bytes": float64(p.ReadBytes), "server_write_bytes": float64(p.WriteBytes),
				"server_threads_max": float64(p.MaxThreads), "server_fds_max": float64(p.MaxFDs)}
		}
		if group != nil {
			// CPU over the measured window, like server_cpu_s; the memory
			// peak is the server's whole life's.
			u := group.Usage()
			u.CPU -= before.CPU
			u.Throttled -= before.Throttled
			maps.Copy(out, u.Metrics())
		}
		return out
	}
}

// resolveObserved finds the process a variant names to observe: a PID,
// or the one in a PID file (read before every run: the target may have
// restarted).
func (r *Lifecycle) resolveObserved() error {
	o := r.v.Spec().Observe
	if o == nil || r.v.HasServer() {
		return nil
	}
	text, what := o.PID.Text, "observe.pid"
	if o.PIDFile.Text != "" {
		path := r.v.ExpandWith(o.PIDFile.Text, r.params)
		if !filepath.IsAbs(path) {
			path = filepath.Join(r.v.Workdir, path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("variant %s: observe.pidfile: %w", r.v.Name, err)
		}
		text, what = strings.TrimSpace(string(b)), "observe.pidfile "+path
	}
	pid, err := CheckPID(text)
	if err != nil {
		return fmt.Errorf("variant %s: %s: %w", r.v.Name, what, err)
	}
	r.observed = pid
	return nil
}

// CheckPID parses a PID of a running process.
func CheckPID(text string) (int, error) {
	pid, err := units.ParseInt(text, 1, 1<<22)
	if err != nil {
		return 0, fmt.Errorf("%q: %v; want the PID of a running process", text, err)
	}
	if procgroup.StartTime(int(pid)) == 0 {
		return 0, fmt.Errorf("%d: no such process", pid)
	}
	return int(pid), nil
}

// PIDObserver watches a process iolab did not start (--observe-pid)
// during every run of a single command.
type PIDObserver struct{ PID int }

func (PIDObserver) BeforeRun(context.Context) error { return nil }
func (PIDObserver) AfterRun(context.Context) error  { return nil }

// Observe watches the process's tree during a run.
func (o PIDObserver) Observe(each func(metrics.ServerSecond)) func() observe.Observation {
	watch := watchServer(o.PID, each, nil)
	return func() observe.Observation { return observe.Observation{Extra: watch()} }
}

// AfterRun stops the server and its cgroup, runs the after_run hook and
// says why the server failed (killed for memory, a stop that failed).
func (r *Lifecycle) AfterRun(ctx context.Context) error {
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
