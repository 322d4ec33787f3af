package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/jackc/pgx/v5/pgconn"
)

// Patient is a store that outlasts an outage: each call the runner makes
// while a load runs — its runs, their seconds, leases, barriers — is
// retried while the error is one of a store that went away (a PostgreSQL
// restarting, a connection cut), until the store has been unreachable for
// Grace. A restart of a few seconds then costs the load a pause, not the
// load; past Grace the call fails, saying so. Calls that only read for a
// person (show, history) are not retried.
type Patient struct {
	Results
	Grace time.Duration

	mu   sync.Mutex
	down time.Time // when the outage began; zero while the store answers
}

// NewPatient wraps r (nil-safe: a grace of 0 retries nothing).
func NewPatient(r Results, grace time.Duration) *Patient {
	return &Patient{Results: r, Grace: grace}
}

// retryEvery is how often a call is tried again during an outage.
const retryEvery = 250 * time.Millisecond

// retry calls f until it succeeds, fails for another reason than an
// outage, ctx ends, or the outage has lasted Grace.
func (p *Patient) retry(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil || !Unreachable(err) {
			if err == nil {
				p.mu.Lock()
				p.down = time.Time{}
				p.mu.Unlock()
			}
			return err
		}
		p.mu.Lock()
		if p.down.IsZero() {
			p.down = time.Now()
		}
		lasted := time.Since(p.down)
		p.mu.Unlock()
		if lasted >= p.Grace {
			return fmt.Errorf("the store has been unreachable for %v (--store-grace %v): %w", lasted.Round(time.Second), p.Grace, err)
		}
		select {
		case <-time.After(retryEvery):
		case <-ctx.Done():
			return err
		}
	}
}

// Unreachable says err is a store that went away, or is held, rather than
// refused what was asked: the connection refused, reset or closed, a
// server shutting down or starting up, a SQLite file locked by another
// process past its busy timeout.
func Unreachable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		// 57P01-03: admin or crash shutdown, cannot connect now; class
		// 08: connection exceptions.
		return pg.Code == "57P01" || pg.Code == "57P02" || pg.Code == "57P03" || strings.HasPrefix(pg.Code, "08")
	}
	// SQLite busy or locked past its busy timeout: another process holds
	// the file's lock (a slow disk under load), which is let go.
	var lite interface{ Code() int }
	if errors.As(err, &lite) && (lite.Code()&0xff == 5 || lite.Code()&0xff == 6) {
		return true
	}
	var connect *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connect) || errors.As(err, &netErr) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || pgconn.SafeToRetry(err)
}

// The calls a running load makes, each retried through an outage.

func (p *Patient) CreateExperiment(ctx context.Context, e *Experiment, cells []Cell) error {
	return p.retry(ctx, func() error { return p.Results.CreateExperiment(ctx, e, cells) })
}

func (p *Patient) FinishExperiment(ctx context.Context, id, status string) error {
	return p.retry(ctx, func() error { return p.Results.FinishExperiment(ctx, id, status) })
}

func (p *Patient) SetExperimentStatus(ctx context.Context, id, status string) error {
	return p.retry(ctx, func() error { return p.Results.SetExperimentStatus(ctx, id, status) })
}

func (p *Patient) SaveEnv(ctx context.Context, experimentID string, e EnvSnapshot) error {
	return p.retry(ctx, func() error { return p.Results.SaveEnv(ctx, experimentID, e) })
}

func (p *Patient) BeginRun(ctx context.Context, experimentID string, r *Run) error {
	return p.retry(ctx, func() error { return p.Results.BeginRun(ctx, experimentID, r) })
}

func (p *Patient) AppendSeries(ctx context.Context, runID int64, secs []metrics.Second) error {
	return p.retry(ctx, func() error { return p.Results.AppendSeries(ctx, runID, secs) })
}

func (p *Patient) AppendServerSeries(ctx context.Context, runID int64, secs []metrics.ServerSecond) error {
	return p.retry(ctx, func() error { return p.Results.AppendServerSeries(ctx, runID, secs) })
}

func (p *Patient) AppendEnvSeries(ctx context.Context, runID int64, secs []metrics.EnvSecond) error {
	return p.retry(ctx, func() error { return p.Results.AppendEnvSeries(ctx, runID, secs) })
}

func (p *Patient) SaveRun(ctx context.Context, experimentID string, r *Run, derived map[string]float64) error {
	return p.retry(ctx, func() error { return p.Results.SaveRun(ctx, experimentID, r, derived) })
}

func (p *Patient) MarkCutRuns(ctx context.Context, experimentID string) error {
	return p.retry(ctx, func() error { return p.Results.MarkCutRuns(ctx, experimentID) })
}

func (p *Patient) SaveVerify(ctx context.Context, experimentID string, v Verify) error {
	return p.retry(ctx, func() error { return p.Results.SaveVerify(ctx, experimentID, v) })
}

func (p *Patient) SaveObjects(ctx context.Context, experimentID string, runID int64, objs []Object) error {
	return p.retry(ctx, func() error { return p.Results.SaveObjects(ctx, experimentID, runID, objs) })
}

func (p *Patient) Load(ctx context.Context, id string) (d *Data, err error) {
	err = p.retry(ctx, func() error { d, err = p.Results.Load(ctx, id); return err })
	return d, err
}

func (p *Patient) AcquireLease(ctx context.Context, expID string, me Owner, alive Alive) (left []Process, err error) {
	err = p.retry(ctx, func() error { left, err = p.Results.AcquireLease(ctx, expID, me, alive); return err })
	return left, err
}

func (p *Patient) Heartbeat(ctx context.Context, expID string, me Owner, procs []Process) error {
	return p.retry(ctx, func() error { return p.Results.Heartbeat(ctx, expID, me, procs) })
}

func (p *Patient) ReleaseLease(ctx context.Context, expID string, me Owner) error {
	return p.retry(ctx, func() error { return p.Results.ReleaseLease(ctx, expID, me) })
}

func (p *Patient) ArriveAtBarrier(ctx context.Context, grp string, seg int, host string) error {
	return p.retry(ctx, func() error { return p.Results.ArriveAtBarrier(ctx, grp, seg, host) })
}

func (p *Patient) Barrier(ctx context.Context, grp string) (arrived []int, last time.Time, err error) {
	err = p.retry(ctx, func() error { arrived, last, err = p.Results.Barrier(ctx, grp); return err })
	return arrived, last, err
}

func (p *Patient) Members(ctx context.Context, grp string) (ms []Member, err error) {
	err = p.retry(ctx, func() error { ms, err = p.Results.Members(ctx, grp); return err })
	return ms, err
}

func (p *Patient) JoinLoad(ctx context.Context, grp string, n int, fingerprint string) (heldN int, held string, err error) {
	err = p.retry(ctx, func() error { heldN, held, err = p.Results.JoinLoad(ctx, grp, n, fingerprint); return err })
	return heldN, held, err
}

func (p *Patient) LeaveLoad(ctx context.Context, grp, fingerprint string) error {
	return p.retry(ctx, func() error { return p.Results.LeaveLoad(ctx, grp, fingerprint) })
}
