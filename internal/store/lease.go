package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/procgroup"
	"github.com/iolab/iolab/internal/segment"
)

// A lease makes one process the runner of an experiment. The runner renews
// its heartbeat while it runs and drops the lease when it ends; a second
// process that wants to run the experiment (a --resume while the first
// still runs) is refused while the owner is alive. The lease of a dead
// owner — a kill -9, a crashed host — is taken over, and the new owner is
// told which process groups the dead one had running, to kill them before
// it redoes the run they belonged to.

// LeaseTTL is how long a heartbeat vouches for an owner on another host,
// whose process cannot be checked directly. Runners renew every
// LeaseTTL/6.
const LeaseTTL = 30 * time.Second

// Owner identifies a runner process.
type Owner struct {
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// Start is the process's start time in clock ticks since boot
	// (/proc/PID/stat field 22), so a reused PID is not taken for the owner.
	Start int64 `json:"start"`
}

func (o Owner) String() string { return fmt.Sprintf("pid %d on %s", o.PID, o.Host) }

// Process is a process group a runner started (a command, a server), with
// its leader's start time.
type Process = procgroup.Group

// ErrLeased is returned when another live process runs the experiment.
var ErrLeased = errors.New("the experiment is being run by another process")

// Alive says whether an owner on this host still runs; it is asked only for
// owners on the same host.
type Alive func(Owner) bool

// AcquireLease makes me the runner of the experiment. It returns the
// process groups a dead previous owner left running, for the caller to
// kill. It fails with ErrLeased, naming the owner, while a live one holds
// it.
func (s *Store) AcquireLease(ctx context.Context, expID string, me Owner, alive Alive) ([]Process, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer tx.Rollback()
	var ownerJSON, heartbeat, procsJSON string
	err = tx.QueryRowContext(ctx, `SELECT owner, heartbeat_at, processes FROM leases WHERE experiment_id = ?`, expID).
		Scan(&ownerJSON, &heartbeat, &procsJSON)
	now := time.Now()
	var left []Process
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err = tx.ExecContext(ctx, `INSERT INTO leases (experiment_id, owner, heartbeat_at, processes) VALUES (?, ?, ?, '[]')`,
			expID, encodeOwner(me), ts(now))
	case err != nil:
	default:
		var prev Owner
		_ = json.Unmarshal([]byte(ownerJSON), &prev)
		age := now.Sub(parseTS(heartbeat))
		live := age < LeaseTTL
		if prev.Host == me.Host {
			live = alive(prev)
		}
		if live && prev != me {
			return nil, fmt.Errorf("experiment %s: %w: %s (last heartbeat %s ago); wait for it to end or stop it",
				expID, ErrLeased, prev, age.Round(time.Second))
		}
		_ = json.Unmarshal([]byte(procsJSON), &left)
		// Compare and swap: of two processes taking over, one wins.
		var res sql.Result
		res, err = tx.ExecContext(ctx, `UPDATE leases SET owner = ?, heartbeat_at = ?, processes = '[]' WHERE experiment_id = ? AND owner = ? AND heartbeat_at = ?`,
			encodeOwner(me), ts(now), expID, ownerJSON, heartbeat)
		if n, _ := rowsAffected(res); err == nil && n != 1 {
			return nil, fmt.Errorf("experiment %s: %w: another process took it over just now", expID, ErrLeased)
		}
	}
	if err != nil {
		return nil, s.wrap(err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("experiment %s: %w (%v)", expID, ErrLeased, err)
	}
	return left, nil
}

// Heartbeat renews my lease and records the process groups I have running.
// It fails with ErrLeased when the lease is no longer mine.
func (s *Store) Heartbeat(ctx context.Context, expID string, me Owner, procs []Process) error {
	if procs == nil {
		procs = []Process{}
	}
	b, _ := json.Marshal(procs)
	// What it records serves a runner that dies, not a machine that does
	// (after which nothing it started is left): not waited for on disk.
	tx, done, err := s.db.begin(ctx, unsynced)
	if err != nil {
		return s.wrap(err)
	}
	defer done()
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, heartbeat, ts(time.Now()), string(b), expID, encodeOwner(me))
	if err != nil {
		return s.wrap(err)
	}
	if n, _ := rowsAffected(res); n != 1 {
		return fmt.Errorf("experiment %s: %w: the lease was taken over", expID, ErrLeased)
	}
	return s.wrap(tx.Commit())
}

// ReleaseLease drops my lease.
func (s *Store) ReleaseLease(ctx context.Context, expID string, me Owner) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM leases WHERE experiment_id = ? AND owner = ?`, expID, encodeOwner(me))
	return s.wrap(err)
}

func encodeOwner(o Owner) string {
	b, _ := json.Marshal(o)
	return string(b)
}

func rowsAffected(r sql.Result) (int64, error) {
	if r == nil {
		return 0, nil
	}
	return r.RowsAffected()
}

// ArriveAtBarrier records that segment seg of a load's group is ready to
// start; arriving again (a restarted pod) moves its time.
func (s *Store) ArriveAtBarrier(ctx context.Context, grp string, seg int, host string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO segment_barrier (grp, segment, host, at) VALUES (?, ?, ?, ?)
		ON CONFLICT (grp, segment) DO UPDATE SET host = excluded.host, at = excluded.at`, grp, seg, host, ts(time.Now()))
	return s.wrap(err)
}

// Barrier says which segments of a group have arrived, and when the last
// of them did.
func (s *Store) Barrier(ctx context.Context, grp string) (arrived []int, last time.Time, err error) {
	rows, err := s.db.QueryContext(ctx, `SELECT segment, at FROM segment_barrier WHERE grp = ? ORDER BY segment`, grp)
	if err != nil {
		return nil, time.Time{}, s.wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var seg int
		var at string
		if err := rows.Scan(&seg, &at); err != nil {
			return nil, time.Time{}, s.wrap(err)
		}
		arrived = append(arrived, seg)
		if t := parseTS(at); t.After(last) {
			last = t
		}
	}
	return arrived, last, s.wrap(rows.Err())
}

// Member is one segment's experiment in a load's group, with the lease of
// the process running it (an empty Owner when none holds it).
type Member struct {
	Segment   string // I/N
	ID        string
	Status    string
	Owner     Owner
	Heartbeat time.Time
}

// Members lists every experiment of a load's group, by segment and then
// age (a segment run again has several).
func (s *Store) Members(ctx context.Context, grp string) ([]Member, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT e.segment, e.id, e.status, COALESCE(l.owner, ''), COALESCE(l.heartbeat_at, '')
		FROM experiments e LEFT JOIN leases l ON l.experiment_id = e.id WHERE e.segment_grp = ? ORDER BY e.segment, e.created_at`, grp)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []Member
	for rows.Next() {
		var m Member
		var owner, heartbeat string
		if err := rows.Scan(&m.Segment, &m.ID, &m.Status, &owner, &heartbeat); err != nil {
			return nil, s.wrap(err)
		}
		if owner != "" {
			_ = json.Unmarshal([]byte(owner), &m.Owner)
			m.Heartbeat = parseTS(heartbeat)
		}
		out = append(out, m)
	}
	// By segment as a number (0, 1, 2 ... 10), not as the text the
	// query sorts (0, 1, 10, 11 ... 2); by age within one.
	slices.SortStableFunc(out, func(a, b Member) int { return cmp.Compare(segment.Index(a.Segment), segment.Index(b.Segment)) })
	return out, s.wrap(rows.Err())
}

// Gone says why the member's experiment will store no more runs — it
// ended (its status), or its runner died: the process is gone (on this
// host), or its heartbeat is older than LeaseTTL (on another) — or ""
// while it may.
func (m Member) Gone() string {
	host, _ := os.Hostname()
	switch {
	case m.Status == StatusDied && m.Owner.PID != 0:
		return fmt.Sprintf("died (%s)", m.Owner)
	case m.Status != StatusRunning:
		return fmt.Sprintf("ended (%s)", m.Status)
	case m.Owner.PID == 0:
		return "" // running, its lease not taken yet
	case m.Owner.Host == host && !procgroup.Alive(m.Owner.PID, m.Owner.Start):
		return fmt.Sprintf("died (%s)", m.Owner)
	case m.Owner.Host != host && time.Since(m.Heartbeat) > LeaseTTL:
		return fmt.Sprintf("died (%s, last heard of %v ago)", m.Owner, time.Since(m.Heartbeat).Round(time.Second))
	}
	return ""
}

// StatusDied is an experiment whose runner died while it ran (a kill -9,
// a lost host): MarkDied finds it, so it is not listed as running for
// ever. It can be resumed.
const StatusDied = "died"

// MarkDied marks each running experiment whose runner died (Member.Gone)
// as died, and its runs still running as interrupted; it returns their
// IDs. Reading commands call it, so what a dead process left is not
// shown as running. An experiment whose lease changed hands meanwhile (a
// resume took it over) is left alone.
func (s *Store) MarkDied(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT e.id, l.owner, l.heartbeat_at FROM experiments e JOIN leases l ON l.experiment_id = e.id WHERE e.status = ?`, StatusRunning)
	if err != nil {
		return nil, s.wrap(err)
	}
	type dead struct{ id, owner string }
	var found []dead
	for rows.Next() {
		var m Member
		var owner, heartbeat string
		if err := rows.Scan(&m.ID, &owner, &heartbeat); err != nil {
			rows.Close()
			return nil, s.wrap(err)
		}
		m.Status, m.Heartbeat = StatusRunning, parseTS(heartbeat)
		if json.Unmarshal([]byte(owner), &m.Owner) == nil && m.Gone() != "" {
			found = append(found, dead{m.ID, owner})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.wrap(err)
	}
	var marked []string
	for _, d := range found {
		res, err := s.db.ExecContext(ctx, `UPDATE experiments SET status = ? WHERE id = ? AND status = ?
			AND EXISTS (SELECT 1 FROM leases WHERE experiment_id = ? AND owner = ?)`, StatusDied, d.id, StatusRunning, d.id, d.owner)
		if err != nil {
			return marked, s.wrap(err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			if err := s.MarkCutRuns(ctx, d.id); err != nil {
				return marked, err
			}
			marked = append(marked, d.id)
		}
	}
	return marked, nil
}

// JoinLoad records the load a segment group runs — N and its fingerprint
// — when the group has none yet, and returns what the group holds: the
// first segment to join defines the load, and the rest compare themselves
// with it (a group made before loads were recorded is defined by the
// first segment to join it now).
func (s *Store) JoinLoad(ctx context.Context, grp string, n int, fingerprint string) (heldN int, held string, err error) {
	if _, err := s.db.ExecContext(ctx, `INSERT INTO segment_loads (grp, n, fingerprint, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (grp) DO NOTHING`, grp, n, fingerprint, ts(time.Now())); err != nil {
		return 0, "", s.wrap(err)
	}
	err = s.db.QueryRowContext(ctx, `SELECT n, fingerprint FROM segment_loads WHERE grp = ?`, grp).Scan(&heldN, &held)
	if errors.Is(err, sql.ErrNoRows) {
		err = fmt.Errorf("segment group %s: its load's record went as this segment joined it (its segments removed meanwhile, iolab rm?); run the segment again", grp)
	}
	return heldN, held, s.wrap(err)
}

// LiveSegment is where one segment of a load stands: its experiment, the
// run it is in (or last stored), that run's latest stored second, and
// the errors and runs it has finished.
type LiveSegment struct {
	Member
	Round     int
	Warmup    bool
	RunStatus string // "" before its first run
	// Second is the run's latest stored second, T its Unix second; Ops 0
	// and T 0 when none is stored yet.
	Second   metrics.Second
	Finished int   // runs finished ok
	Errors   int64 // failed operations in every run it finished, failed ones too
}

// LiveLoad is where each segment of group grp stands, from the store
// alone (what show --follow draws every second): three queries, however
// many segments.
func (s *Store) LiveLoad(ctx context.Context, grp string) ([]LiveSegment, error) {
	members, err := s.Members(ctx, grp)
	if err != nil {
		return nil, err
	}
	out := make([]LiveSegment, len(members))
	byExp := map[string]*LiveSegment{}
	for i, m := range members {
		out[i].Member = m
		byExp[m.ID] = &out[i]
	}
	rows, err := s.db.QueryContext(ctx, `SELECT r.experiment_id, r.round, r.warmup, r.status, r.started_at, COALESCE(x.second, -1), COALESCE(x.ops, 0), COALESCE(x.bytes, 0), COALESCE(x.p99_ns, 0)
		FROM runs r JOIN experiments e ON e.id = r.experiment_id
		LEFT JOIN series x ON x.run_id = r.id AND x.second = (SELECT max(second) FROM series WHERE run_id = r.id)
		WHERE e.segment_grp = ? AND r.id = (SELECT max(id) FROM runs WHERE experiment_id = r.experiment_id)`, grp)
	if err != nil {
		return nil, s.wrap(err)
	}
	for rows.Next() {
		var exp, status, started string
		var round, warmup int
		var sec metrics.Second
		if err := rows.Scan(&exp, &round, &warmup, &status, &started, &sec.T, &sec.Ops, &sec.Bytes, &sec.P99Ns); err != nil {
			rows.Close()
			return nil, s.wrap(err)
		}
		if l := byExp[exp]; l != nil {
			l.Round, l.Warmup, l.RunStatus = round, warmup != 0, status
			if sec.T >= 0 {
				sec.T += parseTS(started).Unix()
				l.Second = sec
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.wrap(err)
	}
	rows, err = s.db.QueryContext(ctx, `SELECT r.experiment_id, COALESCE(sum(CASE WHEN r.status = ? THEN 1 ELSE 0 END), 0), COALESCE(sum(r.errors), 0)
		FROM runs r JOIN experiments e ON e.id = r.experiment_id WHERE e.segment_grp = ? AND r.status <> ? GROUP BY r.experiment_id`, StatusOK, grp, StatusRunning)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var exp string
		var n int
		var errs int64
		if err := rows.Scan(&exp, &n, &errs); err != nil {
			return nil, s.wrap(err)
		}
		if l := byExp[exp]; l != nil {
			l.Finished, l.Errors = n, errs
		}
	}
	return out, s.wrap(rows.Err())
}

// LeaveLoad forgets the load group grp holds when it is the given one and
// no experiment of the group is stored: a segment that joined and failed
// before storing anything does not bind the group to its load.
func (s *Store) LeaveLoad(ctx context.Context, grp, fingerprint string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM segment_loads WHERE grp = ? AND fingerprint = ?
		AND NOT EXISTS (SELECT 1 FROM experiments WHERE segment_grp = ?)`, grp, fingerprint, grp)
	return s.wrap(err)
}
