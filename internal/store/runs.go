package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/redact"
)

// StatusRunning marks a run that has begun and not ended: its per-second
// series is being written. One left so by a killed iolab is marked
// interrupted when the experiment resumes (MarkCutRuns).
const StatusRunning = "running"

// BeginRun stores a run that is starting, as running, and sets its ID, so
// that its per-second series can be stored while it goes on
// (AppendSeries); SaveRun completes it. The row serves a process that dies
// (the run marked interrupted, `iolab follow`), not a machine that does:
// it is committed without waiting for the disk (unsynced).
func (s *Store) BeginRun(ctx context.Context, experimentID string, r *Run) error {
	ctx = context.WithoutCancel(ctx)
	return s.withKept(ctx, unsynced, func(tx *sqlTx) error {
		var err error
		r.ID, err = insertRun(ctx, tx, experimentID, r, StatusRunning, time.Now())
		return err
	})
}

// insertRun stores r's row with the given status and times, its
// measurements to come (writeRun), and returns its ID.
func insertRun(ctx context.Context, db rowQuerier, experimentID string, r *Run, status string, at time.Time) (int64, error) {
	var id int64
	err := db.QueryRowContext(ctx, insertRunReturningID, experimentID, r.CellID, r.Round, r.Slot, boolInt(r.Warmup), status, ts(at), ts(at)).Scan(&id)
	return id, err
}

// The statements every run makes, prepared once (sqlDB.prepare).
const (
	insertRunReturningID = `INSERT INTO runs (experiment_id, cell_id, round, slot, warmup, status, started_at, ended_at,
		duration_ns, errors, error, cpu_user_s, cpu_sys_s, timing_overhead_ns, notes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0, '', 0, 0, 0, '[]') RETURNING id`
	updateRun = `UPDATE runs SET status = ?, started_at = ?, ended_at = ?, duration_ns = ?, errors = ?, error = ?,
		cpu_user_s = ?, cpu_sys_s = ?, timing_overhead_ns = ?, notes = ?, extra = ?, error_codes = ? WHERE id = ?`
	heartbeat = `UPDATE leases SET heartbeat_at = ?, processes = ? WHERE experiment_id = ? AND owner = ?`
)

// AppendSeries stores seconds of a running run's series.
func (s *Store) AppendSeries(ctx context.Context, runID int64, secs []metrics.Second) error {
	return s.appendRows(ctx, func(ctx context.Context, tx *sqlTx) error { return insertSeries(ctx, tx, runID, secs) })
}

// appendRows runs insert in a transaction of its own, whatever becomes
// of ctx: rows of a run that is being cancelled are still its record.
func (s *Store) appendRows(ctx context.Context, insert func(context.Context, *sqlTx) error) error {
	ctx = context.WithoutCancel(ctx)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(err)
	}
	defer tx.Rollback()
	if err := insert(ctx, tx); err != nil {
		return s.wrap(err)
	}
	return s.wrap(tx.Commit())
}

// AppendServerSeries stores seconds of a running run's server series.
func (s *Store) AppendServerSeries(ctx context.Context, runID int64, secs []metrics.ServerSecond) error {
	return s.appendRows(ctx, func(ctx context.Context, tx *sqlTx) error { return insertServerSeries(ctx, tx, runID, secs) })
}

func insertServerSeries(ctx context.Context, tx *sqlTx, runID int64, secs []metrics.ServerSecond) error {
	return insertRows(ctx, tx, `INSERT INTO server_series (run_id, second, rss_bytes, cpu_s, read_bytes, write_bytes, threads, fds)`, "", len(secs), func(i int) []any {
		sec := secs[i]
		return []any{runID, sec.T, sec.RSSBytes, sec.CPUS, sec.ReadBytes, sec.WriteBytes, sec.Threads, sec.FDs}
	})
}

// AppendEnvSeries stores seconds of the machine during a running run.
func (s *Store) AppendEnvSeries(ctx context.Context, runID int64, secs []metrics.EnvSecond) error {
	return s.appendRows(ctx, func(ctx context.Context, tx *sqlTx) error { return insertEnvSeries(ctx, tx, runID, secs) })
}

func insertEnvSeries(ctx context.Context, tx *sqlTx, runID int64, secs []metrics.EnvSecond) error {
	return insertRows(ctx, tx, `INSERT INTO env_series (run_id, second, cpu_stall, memory_stall, io_stall, load1)`, ` ON CONFLICT DO NOTHING`, len(secs), func(i int) []any {
		sec := secs[i]
		return []any{runID, sec.T, sec.CPUStall, sec.MemoryStall, sec.IOStall, sec.Load1}
	})
}

func insertSeries(ctx context.Context, tx *sqlTx, runID int64, secs []metrics.Second) error {
	return insertRows(ctx, tx, `INSERT INTO series (run_id, second, ops, bytes, p50_ns, p99_ns, max_ns)`, "", len(secs), func(i int) []any {
		sec := secs[i]
		return []any{runID, sec.T, sec.Ops, sec.Bytes, sec.P50Ns, sec.P99Ns, sec.MaxNs}
	})
}

// insertRows inserts n rows with one statement for many (insert's
// VALUES made of n tuples, in chunks within both databases' limits on
// bound values), where a statement a row made SQLite parse and plan each:
// most of what storing a short run cost. row gives row i's values;
// suffix follows the VALUES.
func insertRows(ctx context.Context, tx *sqlTx, insert, suffix string, n int, row func(i int) []any) error {
	const maxValues = 900 // SQLite before 3.32: 999
	var q strings.Builder
	var args []any
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		q.WriteString(suffix)
		_, err := tx.ExecContext(ctx, q.String(), args...)
		q.Reset()
		args = args[:0]
		return err
	}
	for i := range n {
		r := row(i)
		if len(args)+len(r) > maxValues {
			if err := flush(); err != nil {
				return err
			}
		}
		if len(args) == 0 {
			q.WriteString(insert + " VALUES ")
		} else {
			q.WriteString(", ")
		}
		q.WriteString("(" + strings.Repeat("?, ", len(r)-1) + "?)")
		args = append(args, r...)
	}
	return flush()
}

// MarkCutRuns marks the runs of an experiment that a killed runner left
// running as interrupted.
func (s *Store) MarkCutRuns(ctx context.Context, experimentID string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE runs SET status = ?, error = 'iolab was killed during the run' WHERE experiment_id = ? AND status = ?`,
		StatusInterrupted, experimentID, StatusRunning)
	return s.wrap(err)
}

// SaveRun stores one run, its histograms, series and derived metrics in one
// transaction: a new run, or the one BeginRun stored (r.ID set), whose
// series so far is already stored. It deliberately ignores ctx's
// cancellation: the run that a Ctrl-C cut short is exactly the one that
// must still be written.
func (s *Store) SaveRun(ctx context.Context, experimentID string, r *Run, derived map[string]float64) error {
	ctx = context.WithoutCancel(ctx)
	if r.ID == 0 {
		if err := s.BeginRun(ctx, experimentID, r); err != nil {
			return err
		}
	}
	return s.withKept(ctx, synced, func(tx *sqlTx) error { return writeRun(ctx, tx, r, derived) })
}

// writeRun writes a begun run's result (r.ID set): its row, histograms,
// derived metrics, frames, series and profiles.
func writeRun(ctx context.Context, tx *sqlTx, r *Run, derived map[string]float64) error {
	res := r.Result
	if res == nil {
		res = &metrics.Result{}
	}
	notes, _ := json.Marshal(res.Notes)
	if res.Notes == nil {
		notes = []byte("[]")
	}
	extra, _ := json.Marshal(res.Extra)
	if res.Extra == nil {
		extra = []byte("{}")
	}
	codes, _ := json.Marshal(res.ErrorCodes)
	if res.ErrorCodes == nil {
		codes = []byte("{}")
	}
	start := res.Start
	if start.IsZero() {
		start = r.EndedAt
	}
	_, err := tx.ExecContext(ctx, updateRun,
		r.Status, ts(start), ts(r.EndedAt), int64(res.Duration), res.Errors, redact.String(firstNonEmpty(r.Error, res.FirstError)),
		res.CPUUserS, res.CPUSysS, res.TimingOverheadNs, redact.String(string(notes)), string(extra), redact.String(string(codes)), r.ID)
	if err != nil {
		return err
	}
	for d, ds := range res.ByOp {
		if ds.Ops == 0 && ds.Lat == nil && ds.Errors == 0 {
			continue
		}
		if err := insertDirection(ctx, tx, r.ID, metrics.Op(d), ds); err != nil {
			return err
		}
	}
	names := slices.Sorted(maps.Keys(derived))
	if err := insertRows(ctx, tx, `INSERT INTO metrics (run_id, name, value)`, "", len(names), func(i int) []any {
		return []any{r.ID, names[i], derived[names[i]]}
	}); err != nil {
		return err
	}
	if err := insertRows(ctx, tx, `INSERT INTO frame_timings (run_id, frame, pos, thread, start_ns, open_ns, io_ns, close_ns, late_ns, dropped)`, "", len(res.Frames), func(i int) []any {
		f := res.Frames[i]
		return []any{r.ID, f.Frame, f.Pos, f.Thread, f.StartNs, f.OpenNs, f.IONs, f.CloseNs, f.LateNs, boolInt(f.Dropped)}
	}); err != nil {
		return err
	}
	if err := insertSeries(ctx, tx, r.ID, res.Series); err != nil {
		return err
	}
	// A run's server and machine seconds are written as it goes
	// (AppendServerSeries, AppendEnvSeries); those it holds (an import,
	// or seconds the store could not take while it ran) come with it.
	if err := insertEnvSeries(ctx, tx, r.ID, res.EnvSeries); err != nil {
		return err
	}
	if err := insertServerSeries(ctx, tx, r.ID, res.ServerSeries); err != nil {
		return err
	}
	for _, kind := range slices.Sorted(maps.Keys(res.Profiles)) {
		if _, err := tx.ExecContext(ctx, `INSERT INTO profiles (run_id, kind, data) VALUES (?, ?, ?)`, r.ID, kind, res.Profiles[kind]); err != nil {
			return err
		}
	}
	return nil
}

// insertDirection writes one operation kind's figures and histograms of
// a run.
func insertDirection(ctx context.Context, tx *sqlTx, runID int64, d metrics.Op, ds metrics.OpStats) error {
	h := ds.Lat
	if h == nil {
		h = metrics.NewHistogram()
	}
	enc, err := metrics.EncodeHistogram(h)
	if err != nil {
		return err
	}
	var opt [3]string
	for i, h := range []*hdrhistogram.Histogram{ds.TTFB, ds.Response, ds.StartLag} {
		if opt[i], err = encodeOptional(h); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO run_directions (run_id, direction, ops, bytes, histogram, errors, ttfb_histogram, active_s, response_histogram, start_lag_histogram)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, runID, d.String(), ds.Ops, ds.Bytes, enc, ds.Errors, opt[0], ds.ActiveS, opt[1], opt[2])
	return err
}

// Profiles reads an experiment's profiles: by run ID, then kind
// (gzipped pprof).
func (s *Store) Profiles(ctx context.Context, experimentID string) (map[int64]map[string][]byte, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT p.run_id, p.kind, p.data FROM profiles p JOIN runs r ON r.id = p.run_id
		WHERE r.experiment_id = ? ORDER BY p.run_id, p.kind`, experimentID)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	out := map[int64]map[string][]byte{}
	for rows.Next() {
		var id int64
		var kind string
		var data []byte
		if err := rows.Scan(&id, &kind, &data); err != nil {
			return nil, s.wrap(err)
		}
		if out[id] == nil {
			out[id] = map[string][]byte{}
		}
		out[id][kind] = data
	}
	return out, s.wrap(rows.Err())
}

// SaveEnv keeps an environment snapshot taken before or after a round,
// to be written in the transaction of the next write — the next run's
// begin, a run's result, the experiment's status — or before the next
// read, or at Close: two synced commits a round fewer (a run of `true`
// in rounds of one took five, each a wake-up on a busy machine, beside
// the next run). A process killed between rounds loses the snapshot
// after the last one.
func (s *Store) SaveEnv(ctx context.Context, experimentID string, e EnvSnapshot) error {
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	s.kept = append(s.kept, keptEnv{experimentID, e})
	return nil
}

// keptEnv is a snapshot SaveEnv kept, of its experiment.
type keptEnv struct {
	experiment string
	EnvSnapshot
}

// withKept runs write in a transaction that first writes the snapshots
// SaveEnv kept; they are forgotten once it commits, and kept for the next
// write while the store is away. A snapshot the store refuses for good
// (its experiment removed meanwhile) must not keep every later run out:
// the write is made again alone, and the snapshots are dropped.
func (s *Store) withKept(ctx context.Context, sync durability, write func(tx *sqlTx) error) error {
	s.keptMu.Lock()
	kept := s.kept
	s.kept = nil
	s.keptMu.Unlock()
	err := s.inTx(ctx, sync, kept, write)
	switch {
	case err == nil || len(kept) == 0:
	case Unreachable(err):
		s.keptMu.Lock()
		s.kept = append(kept, s.kept...)
		s.keptMu.Unlock()
	default:
		err = s.inTx(ctx, sync, nil, write)
	}
	return s.wrap(err)
}

// inTx runs write in a transaction after inserting the snapshots.
func (s *Store) inTx(ctx context.Context, sync durability, kept []keptEnv, write func(tx *sqlTx) error) error {
	tx, done, err := s.db.begin(ctx, sync)
	if err != nil {
		return err
	}
	defer done()
	defer tx.Rollback()
	for _, k := range kept {
		if _, err := tx.ExecContext(ctx, `INSERT INTO env_snapshots (experiment_id, round, phase, taken_at, snapshot) VALUES (?, ?, ?, ?, ?)`,
			k.experiment, k.Round, k.Phase, ts(k.TakenAt), string(k.Snapshot)); err != nil {
			return err
		}
	}
	if err := write(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// writeKept writes the snapshots SaveEnv kept, if any: before a read,
// which sees them, and at Close.
func (s *Store) writeKept(ctx context.Context) error {
	s.keptMu.Lock()
	none := len(s.kept) == 0
	s.keptMu.Unlock()
	if none {
		return nil
	}
	return s.withKept(context.WithoutCancel(ctx), synced, func(*sqlTx) error { return nil })
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ListExperiments returns all experiments, newest first.
func (s *Store) ListExperiments(ctx context.Context) ([]Experiment, error) {
	return s.experiments(ctx, ``)
}

// experiments lists the experiments a WHERE clause (or none) selects,
// newest first.
func (s *Store) experiments(ctx context.Context, where string, args ...any) ([]Experiment, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, command, plan, created_at, COALESCE(finished_at, ''), status, notes, segment_grp, segment
		FROM experiments `+where+` ORDER BY created_at DESC, id DESC`, args...)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []Experiment
	for rows.Next() {
		var e Experiment
		var plan, created, finished, notes string
		if err := rows.Scan(&e.ID, &e.Name, &e.Command, &plan, &created, &finished, &e.Status, &notes, &e.SegmentGroup, &e.Segment); err != nil {
			return nil, s.wrap(err)
		}
		_ = json.Unmarshal([]byte(notes), &e.Notes)
		e.Plan, e.CreatedAt, e.FinishedAt = json.RawMessage(plan), parseTS(created), parseTS(finished)
		out = append(out, e)
	}
	return out, s.wrap(rows.Err())
}

// ErrNoExperiment is returned when no experiment matches.
var ErrNoExperiment = errors.New("no such experiment")

// ErrAmbiguousID is returned when an abbreviated ID matches several
// experiments.
var ErrAmbiguousID = errors.New("ambiguous experiment ID")

// Data is a stored experiment with everything it recorded.
type Data struct {
	Experiment Experiment
	Cells      []Cell
	Runs       []Run // in the order they ran
	Env        []EnvSnapshot
	// Verifies are the read-back checks made after the runs, oldest first.
	Verifies []Verify
}

// Load reads an experiment by ID or unique ID prefix; "" means the newest.
func (s *Store) Load(ctx context.Context, id string) (*Data, error) {
	e, err := s.find(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.LoadExperiment(ctx, e)
}

// find is the experiment an ID names: exactly (one indexed row, however
// many the store holds), else as the unique one it begins or ends; ""
// names the newest.
func (s *Store) find(ctx context.Context, id string) (Experiment, error) {
	exact, err := s.experiments(ctx, `WHERE id = ?`, id)
	if err != nil || len(exact) == 1 {
		return firstOf(exact), err
	}
	all, err := s.ListExperiments(ctx)
	if err != nil {
		return Experiment{}, err
	}
	var match []Experiment
	for _, e := range all {
		if id == "" {
			match = []Experiment{e}
			break
		}
		if strings.HasPrefix(e.ID, id) || strings.HasSuffix(e.ID, id) {
			match = append(match, e)
		}
	}
	switch {
	case len(match) == 0 && id == "":
		return Experiment{}, fmt.Errorf("--db %s holds no experiments yet: %w", s.path, ErrNoExperiment)
	case len(match) == 0:
		return Experiment{}, fmt.Errorf("experiment %q: %w in %s; `iolab ls` lists them", id, ErrNoExperiment, s.path)
	case len(match) > 1:
		return Experiment{}, fmt.Errorf("experiment %q: %w: %d experiments start or end with it (%s, %s ...); give more of it",
			id, ErrAmbiguousID, len(match), match[0].ID, match[1].ID)
	}
	return match[0], nil
}

func firstOf(es []Experiment) Experiment {
	if len(es) == 0 {
		return Experiment{}
	}
	return es[0]
}

// LoadExperiment loads the cells, runs and environment of an experiment
// already found (ListExperiments, Members), without looking it up again.
func (s *Store) LoadExperiment(ctx context.Context, e Experiment) (*Data, error) {
	if err := s.writeKept(ctx); err != nil {
		return nil, err
	}
	d := &Data{Experiment: e}
	if err := s.loadCells(ctx, d); err != nil {
		return nil, err
	}
	if err := s.loadRuns(ctx, d); err != nil {
		return nil, err
	}
	if err := s.loadVerifies(ctx, d); err != nil {
		return nil, err
	}
	return d, s.loadEnv(ctx, d)
}

func (s *Store) loadCells(ctx context.Context, d *Data) error {
	rows, err := s.db.QueryContext(ctx, `SELECT id, idx, name, variant, workload, params FROM cells WHERE experiment_id = ? ORDER BY idx`, d.Experiment.ID)
	if err != nil {
		return s.wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var c Cell
		var params string
		if err := rows.Scan(&c.ID, &c.Index, &c.Name, &c.Variant, &c.Workload, &params); err != nil {
			return s.wrap(err)
		}
		if err := json.Unmarshal([]byte(params), &c.Params); err != nil {
			return s.wrap(err)
		}
		d.Cells = append(d.Cells, c)
	}
	return s.wrap(rows.Err())
}

// Summaries reads every experiment that is no segment of a load without
// its measurements: its cells, its runs with the derived metrics stored
// with each (metrics.Result.Derived, which RunMetrics then returns) but no
// histograms, series or frames, and its first environment snapshot. It is
// what a history across many experiments needs, in a small part of the
// memory and time of loading each (five queries in all, not a dozen per
// experiment); a load run in segments, whose merged metrics no segment
// stored, is loaded whole and merged instead. By experiment ID.
func (s *Store) Summaries(ctx context.Context) (map[string]*Data, error) {
	if err := s.writeKept(ctx); err != nil {
		return nil, err
	}
	list, err := s.experiments(ctx, `WHERE segment_grp = ''`)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Data, len(list))
	for _, e := range list {
		out[e.ID] = &Data{Experiment: e}
	}
	const solo = ` JOIN experiments e ON e.id = x.experiment_id WHERE e.segment_grp = ''`
	err = s.eachRow(ctx, `SELECT x.experiment_id, x.id, x.idx, x.name, x.variant, x.workload, x.params FROM cells x`+solo+` ORDER BY x.experiment_id, x.idx`, func(rows *sql.Rows) error {
		var exp, params string
		var c Cell
		if err := rows.Scan(&exp, &c.ID, &c.Index, &c.Name, &c.Variant, &c.Workload, &params); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(params), &c.Params); err != nil {
			return err
		}
		if d := out[exp]; d != nil {
			d.Cells = append(d.Cells, c)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	byID := map[int64]*metrics.Result{}
	err = s.eachRow(ctx, `SELECT x.experiment_id, `+runColumns("x.")+` FROM runs x`+solo+` ORDER BY x.id`, func(rows *sql.Rows) error {
		var exp string
		r, err := scanRun(rows, &exp)
		if err != nil {
			return err
		}
		if d := out[exp]; d != nil {
			r.Result.Derived = map[string]float64{}
			byID[r.ID] = r.Result
			d.Runs = append(d.Runs, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = s.eachRow(ctx, `SELECT m.run_id, m.name, m.value FROM metrics m JOIN runs x ON x.id = m.run_id`+solo, func(rows *sql.Rows) error {
		var id int64
		var name string
		var v float64
		if err := rows.Scan(&id, &name, &v); err != nil {
			return err
		}
		if res := byID[id]; res != nil {
			res.Derived[name] = v
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := s.readVerifies(ctx, out, ``); err != nil {
		return nil, err
	}
	return out, s.eachRow(ctx, `SELECT x.experiment_id, x.round, x.phase, x.taken_at, x.snapshot FROM env_snapshots x
		WHERE x.id IN (SELECT min(id) FROM env_snapshots GROUP BY experiment_id)`, func(rows *sql.Rows) error {
		var exp, taken, snap string
		var env EnvSnapshot
		if err := rows.Scan(&exp, &env.Round, &env.Phase, &taken, &snap); err != nil {
			return err
		}
		if d := out[exp]; d != nil {
			env.TakenAt, env.Snapshot = parseTS(taken), json.RawMessage(snap)
			d.Env = []EnvSnapshot{env}
		}
		return nil
	})
}

// eachRow runs a query and calls row for each of its rows, in order,
// until one fails; its errors name the store.
func (s *Store) eachRow(ctx context.Context, query string, row func(*sql.Rows) error, args ...any) error {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return s.wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return s.wrap(err)
		}
	}
	return s.wrap(rows.Err())
}

func (s *Store) loadRuns(ctx context.Context, d *Data) error {
	byID, err := s.scanRuns(ctx, d)
	if err != nil {
		return err
	}
	return s.loadDirections(ctx, d.Experiment.ID, byID)
}

// scanRuns reads an experiment's runs into d, without what is stored per
// run in other tables, and returns their results by run.
func (s *Store) scanRuns(ctx context.Context, d *Data) (map[int64]*metrics.Result, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+runColumns("")+` FROM runs WHERE experiment_id = ? ORDER BY id`, d.Experiment.ID)
	if err != nil {
		return nil, s.wrap(err)
	}
	byID := map[int64]*metrics.Result{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			rows.Close()
			return nil, s.wrap(err)
		}
		byID[r.ID] = r.Result
		d.Runs = append(d.Runs, r)
	}
	rows.Close()
	return byID, s.wrap(rows.Err())
}

// runColumns are the columns scanRun reads, of the table named by prefix.
func runColumns(prefix string) string {
	var cols []string
	for _, c := range strings.Split("id cell_id round slot warmup status started_at ended_at duration_ns errors error cpu_user_s cpu_sys_s timing_overhead_ns notes extra error_codes", " ") {
		cols = append(cols, prefix+c)
	}
	return strings.Join(cols, ", ")
}

// scanRun reads a run of runColumns, after the columns first scans into.
func scanRun(rows interface{ Scan(...any) error }, first ...any) (Run, error) {
	var r Run
	res := &metrics.Result{}
	var warmup int
	var started, ended, notes, extra, codes string
	var dur int64
	dest := append(first, &r.ID, &r.CellID, &r.Round, &r.Slot, &warmup, &r.Status, &started, &ended, &dur,
		&res.Errors, &r.Error, &res.CPUUserS, &res.CPUSysS, &res.TimingOverheadNs, &notes, &extra, &codes)
	if err := rows.Scan(dest...); err != nil {
		return r, err
	}
	r.Warmup, r.EndedAt = warmup != 0, parseTS(ended)
	res.Start, res.Duration, res.FirstError = parseTS(started), time.Duration(dur), r.Error
	_ = json.Unmarshal([]byte(notes), &res.Notes)
	if extra != "{}" {
		_ = json.Unmarshal([]byte(extra), &res.Extra)
	}
	if codes != "{}" {
		_ = json.Unmarshal([]byte(codes), &res.ErrorCodes)
	}
	r.Result = res
	return r, nil
}

func (s *Store) loadDirections(ctx context.Context, expID string, byID map[int64]*metrics.Result) error {
	rows, err := s.db.QueryContext(ctx, `SELECT d.run_id, d.direction, d.ops, d.bytes, d.histogram, d.errors, d.ttfb_histogram, d.active_s, d.response_histogram, d.start_lag_histogram FROM run_directions d
		JOIN runs r ON r.id = d.run_id WHERE r.experiment_id = ?`, expID)
	if err != nil {
		return s.wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, ops, bytes, errs int64
		var dir, hist, ttfbHist, responseHist, lagHist string
		var active float64
		if err := rows.Scan(&id, &dir, &ops, &bytes, &hist, &errs, &ttfbHist, &active, &responseHist, &lagHist); err != nil {
			return s.wrap(err)
		}
		st := metrics.OpStats{Ops: ops, Bytes: bytes, Errors: errs, ActiveS: active}
		var err error
		if st.Lat, err = metrics.DecodeHistogram(hist); err != nil {
			return fmt.Errorf("--db %s: run %d %s: %w", s.path, id, dir, err)
		}
		for _, h := range []struct {
			text string
			into **hdrhistogram.Histogram
			what string
		}{{ttfbHist, &st.TTFB, "ttfb"}, {responseHist, &st.Response, "response"}, {lagHist, &st.StartLag, "start lag"}} {
			if h.text == "" {
				continue
			}
			if *h.into, err = metrics.DecodeHistogram(h.text); err != nil {
				return fmt.Errorf("--db %s: run %d %s %s: %w", s.path, id, dir, h.what, err)
			}
		}
		if op, ok := metrics.ParseOp(dir); ok && byID[id] != nil {
			byID[id].ByOp[op] = st
		}
	}
	if err := rows.Err(); err != nil {
		return s.wrap(err)
	}
	if err := s.loadFrames(ctx, expID, byID); err != nil {
		return err
	}
	if err := s.loadSeries(ctx, expID, byID); err != nil {
		return err
	}
	if err := s.loadServerSeries(ctx, expID, byID); err != nil {
		return err
	}
	return s.loadEnvSeries(ctx, expID, byID)
}

func (s *Store) loadEnvSeries(ctx context.Context, expID string, byID map[int64]*metrics.Result) error {
	return perRun(ctx, s, `SELECT s.run_id, s.second, s.cpu_stall, s.memory_stall, s.io_stall, s.load1 FROM env_series s
		JOIN runs r ON r.id = s.run_id WHERE r.experiment_id = ? ORDER BY s.run_id, s.second`, expID, byID,
		func(sec *metrics.EnvSecond) []any {
			return []any{&sec.T, &sec.CPUStall, &sec.MemoryStall, &sec.IOStall, &sec.Load1}
		},
		func(r *metrics.Result, sec metrics.EnvSecond) { r.EnvSeries = append(r.EnvSeries, sec) })
}

func (s *Store) loadServerSeries(ctx context.Context, expID string, byID map[int64]*metrics.Result) error {
	return perRun(ctx, s, `SELECT s.run_id, s.second, s.rss_bytes, s.cpu_s, s.read_bytes, s.write_bytes, s.threads, s.fds FROM server_series s
		JOIN runs r ON r.id = s.run_id WHERE r.experiment_id = ? ORDER BY s.run_id, s.second`, expID, byID,
		func(sec *metrics.ServerSecond) []any {
			return []any{&sec.T, &sec.RSSBytes, &sec.CPUS, &sec.ReadBytes, &sec.WriteBytes, &sec.Threads, &sec.FDs}
		},
		func(r *metrics.Result, sec metrics.ServerSecond) { r.ServerSeries = append(r.ServerSeries, sec) })
}

func (s *Store) loadFrames(ctx context.Context, expID string, byID map[int64]*metrics.Result) error {
	type row struct {
		f       metrics.FrameTiming
		dropped int
	}
	return perRun(ctx, s, `SELECT f.run_id, f.frame, f.pos, f.thread, f.start_ns, f.open_ns, f.io_ns, f.close_ns, f.late_ns, f.dropped
		FROM frame_timings f JOIN runs r ON r.id = f.run_id WHERE r.experiment_id = ?
		ORDER BY f.run_id, CASE WHEN f.pos < 0 THEN f.frame ELSE f.pos END`, expID, byID,
		func(x *row) []any {
			return []any{&x.f.Frame, &x.f.Pos, &x.f.Thread, &x.f.StartNs, &x.f.OpenNs, &x.f.IONs, &x.f.CloseNs, &x.f.LateNs, &x.dropped}
		},
		func(r *metrics.Result, x row) {
			x.f.Dropped = x.dropped != 0
			if x.f.Pos < 0 { // stored before positions were: played in frame order
				x.f.Pos = x.f.Frame
			}
			r.Frames = append(r.Frames, x.f)
		})
}

func (s *Store) loadSeries(ctx context.Context, expID string, byID map[int64]*metrics.Result) error {
	return perRun(ctx, s, `SELECT s.run_id, s.second, s.ops, s.bytes, s.p50_ns, s.p99_ns, s.max_ns FROM series s
		JOIN runs r ON r.id = s.run_id WHERE r.experiment_id = ? ORDER BY s.run_id, s.second`, expID, byID,
		func(sec *metrics.Second) []any {
			return []any{&sec.T, &sec.Ops, &sec.Bytes, &sec.P50Ns, &sec.P99Ns, &sec.MaxNs}
		},
		func(r *metrics.Result, sec metrics.Second) { r.Series = append(r.Series, sec) })
}

// perRun reads an experiment's rows of a per-run table, whose first column
// is the run ID, into values of T (fields gives where each column goes)
// and adds each to its run's result; rows of runs not loaded are dropped.
func perRun[T any](ctx context.Context, s *Store, query, expID string, byID map[int64]*metrics.Result,
	fields func(*T) []any, add func(*metrics.Result, T)) error {
	rows, err := s.db.QueryContext(ctx, query, expID)
	if err != nil {
		return s.wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var v T
		if err := rows.Scan(append([]any{&id}, fields(&v)...)...); err != nil {
			return s.wrap(err)
		}
		if r := byID[id]; r != nil {
			add(r, v)
		}
	}
	return s.wrap(rows.Err())
}

func (s *Store) loadEnv(ctx context.Context, d *Data) error {
	rows, err := s.db.QueryContext(ctx, `SELECT round, phase, taken_at, snapshot FROM env_snapshots WHERE experiment_id = ? ORDER BY id`, d.Experiment.ID)
	if err != nil {
		return s.wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var e EnvSnapshot
		var taken, snap string
		if err := rows.Scan(&e.Round, &e.Phase, &taken, &snap); err != nil {
			return s.wrap(err)
		}
		e.TakenAt, e.Snapshot = parseTS(taken), json.RawMessage(snap)
		d.Env = append(d.Env, e)
	}
	return s.wrap(rows.Err())
}

// Object is an entry of an experiment's manifest: an object a run left in
// place, with what it should hold.
type Object struct {
	CellID      int64
	Key         string
	Size        int64
	Seed        uint64
	ContentSeed uint64
}

// SaveObjects adds a run's objects to the experiment's manifest.
func (s *Store) SaveObjects(ctx context.Context, experimentID string, runID int64, objs []Object) error {
	ctx = context.WithoutCancel(ctx)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(err)
	}
	defer tx.Rollback()
	for _, o := range objs {
		// Seeds are stored as signed 64-bit integers, which every SQL
		// database has; the bits are the same.
		if _, err := tx.ExecContext(ctx, `INSERT INTO objects (experiment_id, run_id, cell_id, object_key, size, seed, content_seed)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, experimentID, runID, o.CellID, o.Key, o.Size, int64(o.Seed), int64(o.ContentSeed)); err != nil {
			return s.wrap(err)
		}
	}
	return s.wrap(tx.Commit())
}

// Objects lists an experiment's manifest.
func (s *Store) Objects(ctx context.Context, experimentID string) ([]Object, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT cell_id, object_key, size, seed, content_seed FROM objects WHERE experiment_id = ? ORDER BY run_id, object_key`, experimentID)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []Object
	for rows.Next() {
		var o Object
		var seed, cseed int64
		if err := rows.Scan(&o.CellID, &o.Key, &o.Size, &seed, &cseed); err != nil {
			return nil, s.wrap(err)
		}
		o.Seed, o.ContentSeed = uint64(seed), uint64(cseed)
		out = append(out, o)
	}
	return out, s.wrap(rows.Err())
}

// runTables are the tables whose rows belong to a run, in the order they
// are deleted (before the runs they refer to).
var runTables = []string{"run_directions", "metrics", "series", "env_series", "server_series", "profiles", "frame_timings"}

// DeleteExperiment deletes an experiment and everything stored of it —
// runs and their rows, cells, snapshots, kept objects' manifest, lease —
// in one transaction, and, when it was a load's last segment, the load's
// record and barriers. ErrNoExperiment if there is no such experiment.
func (s *Store) DeleteExperiment(ctx context.Context, id string) error {
	if err := s.writeKept(ctx); err != nil { // none left to write after it
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(err)
	}
	defer tx.Rollback()
	var grp string
	if err := tx.QueryRowContext(ctx, `SELECT segment_grp FROM experiments WHERE id = ?`, id).Scan(&grp); errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %s", ErrNoExperiment, id)
	} else if err != nil {
		return s.wrap(err)
	}
	for _, t := range runTables {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+t+` WHERE run_id IN (SELECT id FROM runs WHERE experiment_id = ?)`, id); err != nil {
			return s.wrap(err)
		}
	}
	for _, t := range []string{"objects", "verifies", "runs", "cells", "env_snapshots", "leases", "experiments"} {
		col := "experiment_id"
		if t == "experiments" {
			col = "id"
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+t+` WHERE `+col+` = ?`, id); err != nil {
			return s.wrap(err)
		}
	}
	if grp != "" {
		var left int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM experiments WHERE segment_grp = ?`, grp).Scan(&left); err != nil {
			return s.wrap(err)
		}
		if left == 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM segment_loads WHERE grp = ?`, grp); err != nil {
				return s.wrap(err)
			}
			// The barriers are the group's name and "NAME run I".
			if _, err := tx.ExecContext(ctx, `DELETE FROM segment_barrier WHERE grp = ? OR substr(grp, 1, ?) = ?`, grp, len(grp)+5, grp+" run "); err != nil {
				return s.wrap(err)
			}
		}
	}
	return s.wrap(tx.Commit())
}

// encodeOptional encodes a histogram a direction may not have: "" for none.
func encodeOptional(h *hdrhistogram.Histogram) (string, error) {
	if h == nil {
		return "", nil
	}
	return metrics.EncodeHistogram(h)
}
