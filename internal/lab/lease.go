package lab

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/iolab/iolab/internal/procgroup"
	"github.com/iolab/iolab/internal/store"
)

// lease is this process's claim to run an experiment (store.AcquireLease):
// renewed while it runs, with the process groups it has running, so that
// whoever takes over after a kill -9 can kill them.
type lease struct {
	ctx     context.Context // the run's context, carrying the process tracker
	release func()
}

// self identifies this process as a runner.
func self() store.Owner {
	host, _ := os.Hostname()
	return store.Owner{Host: host, PID: os.Getpid(), Start: procgroup.StartTime(os.Getpid())}
}

// acquire leases the experiment, kills what a dead previous runner left
// running, and renews the lease until release is called. The returned
// context is cancelled if the lease is lost.
func (r *Runner) acquire(ctx context.Context, expID string) (*lease, error) {
	me := self()
	alive := func(o store.Owner) bool { return procgroup.Alive(o.PID, o.Start) }
	left, err := r.Store.AcquireLease(ctx, expID, me, alive)
	if err != nil {
		return nil, err
	}
	for _, g := range left {
		procgroup.Kill(g)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	renew := func(groups []procgroup.Group) error {
		err := r.Store.Heartbeat(context.WithoutCancel(ctx), expID, me, groups)
		if errors.Is(err, store.ErrLeased) {
			cancel(err)
		}
		return err
	}
	tracker := &procgroup.Tracker{OnStart: func(gs []procgroup.Group) { _ = renew(gs) }}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(store.LeaseTTL / 6)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				_ = renew(tracker.List())
			}
		}
	}()
	release := func() {
		close(stop)
		<-done
		cancel(nil)
		// A lease left behind is harmless: its owner is gone, so the next
		// runner takes it over.
		_ = r.Store.ReleaseLease(context.WithoutCancel(ctx), expID, me)
	}
	return &lease{ctx: procgroup.WithTracker(ctx, tracker), release: release}, nil
}

// leases holds the lease of the experiment a Run runs, once taken.
type leases struct {
	r *Runner
	l *lease
}

// take leases the experiment; the context returned ends when the lease
// is lost.
func (h *leases) take(ctx context.Context, expID string) (context.Context, error) {
	l, err := h.r.acquire(ctx, expID)
	if err != nil {
		return ctx, err
	}
	h.l = l
	return l.ctx, nil
}

func (h *leases) release() {
	if h.l != nil {
		h.l.release()
	}
}
