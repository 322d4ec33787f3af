package store

import (
	"context"
	"time"

	"github.com/iolab/iolab/internal/metrics"
)

// Results is the store as iolab uses it: experiments written while they
// run, a run the moment it ends, read back whole; the leases and barriers
// by which runners and the segments of a load find each other. Store
// implements it on SQLite and on PostgreSQL, by the DSN Open is given;
// the conformance suite (results_test.go) runs every method on both.
//
// Every method takes a context. The writes of a run (BeginRun, the
// appends, SaveRun) ignore its cancellation: a run cut short by Ctrl-C is
// still recorded, as interrupted.
type Results interface {
	// CreateExperiment stores e and its cells, setting each cell's ID.
	CreateExperiment(ctx context.Context, e *Experiment, cells []Cell) error
	// AddNote appends a note to an experiment; ErrNoExperiment if unknown.
	AddNote(ctx context.Context, id, text string) error
	// FinishExperiment sets its final status and the time it ended;
	// SetExperimentStatus only its status (a resumed one runs again).
	FinishExperiment(ctx context.Context, id, status string) error
	SetExperimentStatus(ctx context.Context, id, status string) error
	// SaveEnv stores an environment snapshot of a round.
	SaveEnv(ctx context.Context, experimentID string, e EnvSnapshot) error

	// BeginRun records a run as running before it starts, setting r.ID,
	// so its seconds can be appended while it runs.
	BeginRun(ctx context.Context, experimentID string, r *Run) error
	// AppendSeries, AppendServerSeries and AppendEnvSeries add seconds of
	// a begun run, each call a transaction of its own; the machine's
	// second given twice (a watcher's late tick) is kept once.
	AppendSeries(ctx context.Context, runID int64, secs []metrics.Second) error
	AppendServerSeries(ctx context.Context, runID int64, secs []metrics.ServerSecond) error
	AppendEnvSeries(ctx context.Context, runID int64, secs []metrics.EnvSecond) error
	// SaveRun writes a run's result and derived metrics: the begun run, or
	// a new one when r.ID is 0.
	SaveRun(ctx context.Context, experimentID string, r *Run, derived map[string]float64) error
	// MarkCutRuns marks the runs still running (their runner died) as
	// interrupted.
	MarkCutRuns(ctx context.Context, experimentID string) error
	// SaveObjects and Objects keep and return what runs left in a target
	// (s3 --keep), to verify later.
	SaveObjects(ctx context.Context, experimentID string, runID int64, objs []Object) error
	Objects(ctx context.Context, experimentID string) ([]Object, error)
	// SaveVerify keeps a later check of those objects (s3 verify) with
	// the experiment, loaded with it as Data.Verifies.
	SaveVerify(ctx context.Context, experimentID string, v Verify) error

	// DeleteExperiment deletes an experiment (its exact ID) and all that
	// is stored of it; ErrNoExperiment if unknown.
	DeleteExperiment(ctx context.Context, id string) error

	// ListExperiments lists every experiment, newest first.
	ListExperiments(ctx context.Context) ([]Experiment, error)
	// Load reads an experiment by its ID or a unique prefix or suffix of
	// it ("" is the newest); ErrNoExperiment, ErrAmbiguousID.
	Load(ctx context.Context, id string) (*Data, error)
	// LoadExperiment reads an experiment ListExperiments returned.
	LoadExperiment(ctx context.Context, e Experiment) (*Data, error)
	// Profiles are the profiles taken during an experiment's runs, by
	// run and kind (not loaded with it: they are large).
	Profiles(ctx context.Context, experimentID string) (map[int64]map[string][]byte, error)

	// AcquireLease makes me the experiment's runner, unless a live one
	// holds it (ErrLeased); it returns the processes a dead one left.
	AcquireLease(ctx context.Context, expID string, me Owner, alive Alive) ([]Process, error)
	// Heartbeat says me still runs it, with its process groups;
	// ErrLeased once another took over.
	Heartbeat(ctx context.Context, expID string, me Owner, procs []Process) error
	ReleaseLease(ctx context.Context, expID string, me Owner) error
	// ArriveAtBarrier marks a segment arrived at a named point of a load;
	// Barrier says which have, and when the last came.
	ArriveAtBarrier(ctx context.Context, grp string, seg int, host string) error
	Barrier(ctx context.Context, grp string) (arrived []int, last time.Time, err error)
	// Members are the experiments of a load's segments, with their
	// runners' leases.
	Members(ctx context.Context, grp string) ([]Member, error)
	// JoinLoad records a group's N and load fingerprint unless it holds
	// them already, and returns what it holds.
	JoinLoad(ctx context.Context, grp string, n int, fingerprint string) (heldN int, held string, err error)
	// LeaveLoad forgets the group's load when it is this fingerprint and
	// the group holds no experiment yet.
	LeaveLoad(ctx context.Context, grp, fingerprint string) error

	// Path names the store (a file, or a URL with its password masked).
	Path() string
	Close() error
}

var _ Results = (*Store)(nil)
