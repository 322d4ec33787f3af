// Package store keeps experiments and their runs in one SQLite file, the
// moment each run ends: a crash, Ctrl-C or a full disk later loses nothing
// that finished. The schema is defined once (schema.go) with a version
// number; a database that is not iolab's, or is newer than this build, is
// refused with an error that says so.
//
// The store holds raw results (per-direction counts and HDR histograms,
// per-second series, environment snapshots as JSON) and, for SQL users, the
// derived per-run metrics; summaries are always recomputed from raw data.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // PostgreSQL driver, as "pgx"
	"modernc.org/sqlite"               // pure-Go SQLite driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/redact"
)

// Run statuses.
const (
	StatusOK          = "ok"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
)

// CalibrationRound is the round the first calibration run is stored as
// (a warm-up run, below every other round), the others following it: a
// curve's or a search's first flat-out runs, CalibrationRuns of them,
// whose highest rate the other loads are shares of — several, so that one
// unlucky run (the server still starting, a burst of other work) does not
// set the range a search is in.
const (
	CalibrationRound = -(1 << 30)
	CalibrationRuns  = 3
)

// IsCalibration says a run of that round is a calibration run.
func IsCalibration(round int) bool {
	return round >= CalibrationRound && round < CalibrationRound+CalibrationRuns
}

// Store is an open iolab database.
type Store struct {
	db   *sqlDB
	path string // as shown: a file, or a PostgreSQL URL without its password
	// kept is the environment snapshots SaveEnv keeps for the next write.
	keptMu sync.Mutex
	kept   []keptEnv
}

// ErrNotIolab is returned for a database file that iolab did not create.
var ErrNotIolab = errors.New("not an iolab database")

// ErrNoDirectory is returned for a new database file in a directory that
// is not there.
var ErrNoDirectory = errors.New("no directory")

// IsPostgres says a --db names a PostgreSQL database (postgres://...).
func IsPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// Open opens the database at path, creating it if it does not exist: a
// SQLite file, or with a postgres:// URL a PostgreSQL database (the server
// and the database must exist; the schema is created in it). A password
// comes from the URL, PGPASSWORD or ~/.pgpass and is never shown.
func Open(ctx context.Context, path string) (*Store, error) {
	if IsPostgres(path) {
		return openPostgres(ctx, path)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("--db %s: is a directory; want a file path such as ./iolab.db", path)
	} else if errors.Is(err, os.ErrNotExist) {
		// SQLite would say "unable to open database file" of it.
		if dir := filepath.Dir(path); !isDir(dir) {
			return nil, fmt.Errorf("--db %s: %w %s to create it in", path, ErrNoDirectory, dir)
		}
	}
	// Transactions take the write lock when they begin (waiting up to the
	// busy timeout for another process), so two processes writing one file
	// — segments of a load — never deadlock upgrading a read to a write.
	// Write-ahead logging with a full sync: each commit is durable with one
	// fsync of the log (a rollback journal took four), on the machine whose
	// disk may be the one measured, and readers never wait for a writer.
	// The log (FILE-wal, FILE-shm beside the file) is folded back into the
	// file when the last connection closes; where the file system cannot
	// share memory, SQLite keeps its rollback journal.
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate"
	// Processes that start together on one file (the segments of a load)
	// each set it up; in some of those steps (the switch to the log, the
	// schema) SQLite answers another "locked" at once, without its busy
	// wait. A held file is waited for, as long as openWait.
	deadline := time.Now().Add(openWait)
	for {
		s, err := openSQLite(ctx, path, dsn)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return s, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Duration(50+rand.IntN(150)) * time.Millisecond):
		}
	}
}

// openWait is how long a SQLite file another process holds is waited for
// when opened.
const openWait = time.Minute

func openSQLite(ctx context.Context, path, dsn string) (*Store, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("--db %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	s := &Store{db: &sqlDB{DB: db}, path: path}
	if err := s.init(ctx); err != nil {
		if full := s.spaceErr(err); full != nil {
			err = full
		}
		db.Close()
		return nil, err
	}
	s.db.prepare(ctx)
	return s, nil
}

// isBusy says err is SQLite's "database is locked" (SQLITE_BUSY and its
// extended codes).
func isBusy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_BUSY
}

func openPostgres(ctx context.Context, url string) (*Store, error) {
	shown := redact.URL(url)
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("--db %s: %v", shown, redact.String(err.Error()))
	}
	s := &Store{db: &sqlDB{DB: db, pg: true}, path: shown}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("--db %s: cannot connect: %s", shown, redact.String(err.Error()))
	}
	if err := s.init(ctx); err != nil {
		db.Close()
		return nil, err
	}
	s.db.prepare(ctx)
	return s, nil
}

func (s *Store) init(ctx context.Context) error {
	var n int
	tables := `SELECT count(*) FROM sqlite_master`
	if s.db.pg {
		tables = `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()`
	}
	err := s.db.QueryRowContext(ctx, tables).Scan(&n)
	if err != nil {
		if isBusy(err) {
			return fmt.Errorf("--db %s: %w", s.path, err)
		}
		// (SQLite's error kept: a full disk is said as one, openSQLite.)
		return fmt.Errorf("--db %s: %w (%w); point --db at an iolab database or a new file", s.path, ErrNotIolab, err)
	}
	if n == 0 {
		// Segments of a load start together on a new database: one
		// creates the schema, the others find it created.
		created, err := s.create(ctx, tables)
		if err != nil || created {
			return err
		}
	}
	var app, version string
	err = s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'app'`).Scan(&app)
	if err == nil {
		err = s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'schema_version'`).Scan(&version)
	}
	if isBusy(err) {
		return fmt.Errorf("--db %s: %w", s.path, err)
	}
	if err != nil || app != appID {
		return fmt.Errorf("--db %s: %w (a database of another program); point --db at an iolab database or a new one", s.path, ErrNotIolab)
	}
	v, err := strconv.Atoi(version)
	if err != nil {
		return fmt.Errorf("--db %s: bad schema version %q", s.path, version)
	}
	if v > SchemaVersion {
		return fmt.Errorf("--db %s: written by a newer iolab (schema %d; this iolab reads up to %d); upgrade iolab", s.path, v, SchemaVersion)
	}
	return s.migrate(ctx, v)
}

// migrate upgrades a database written by an older iolab, in one transaction.
func (s *Store) migrate(ctx context.Context, from int) error {
	if from == SchemaVersion {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(err)
	}
	defer tx.Rollback()
	for v := from; v < SchemaVersion; v++ {
		if _, err := tx.ExecContext(ctx, s.ddl(migrations[v])); err != nil {
			return fmt.Errorf("--db %s: upgrade schema %d to %d: %w", s.path, v, v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = ? WHERE key = 'schema_version'`, strconv.Itoa(SchemaVersion)); err != nil {
		return s.wrap(err)
	}
	return s.wrap(tx.Commit())
}

// create creates the schema unless another process did it first (it then
// reports false). On PostgreSQL an advisory lock makes the others wait for
// the first; on SQLite the loser's CREATE fails and it finds the tables.
func (s *Store) create(ctx context.Context, tables string) (bool, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("--db %s: %w", s.path, err)
	}
	defer tx.Rollback()
	if s.db.pg {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(1095716673)`); err != nil { // "IOLA"
			return false, fmt.Errorf("--db %s: %w", s.path, err)
		}
	}
	var n int
	if err := tx.QueryRowContext(ctx, tables).Scan(&n); err != nil {
		return false, fmt.Errorf("--db %s: %w", s.path, err)
	}
	if n > 0 {
		return false, nil // created meanwhile
	}
	if _, err := tx.ExecContext(ctx, s.ddl(schema)); err != nil {
		tx.Rollback()
		// Another process's schema won the race (SQLite: its write lock).
		if s.db.QueryRowContext(ctx, tables).Scan(&n) == nil && n > 0 {
			return false, nil
		}
		return false, fmt.Errorf("--db %s: create schema: %w", s.path, err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('app', ?), ('schema_version', ?)`, appID, strconv.Itoa(SchemaVersion))
	if err != nil {
		return false, fmt.Errorf("--db %s: %w", s.path, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("--db %s: %w", s.path, err)
	}
	return true, nil
}

// ddl is DDL in the store's dialect.
func (s *Store) ddl(q string) string {
	if s.db.pg {
		return pgDDL(q)
	}
	return q
}

// Close closes the database.
func (s *Store) Close() error {
	err := s.writeKept(context.Background())
	return errors.Join(err, s.db.Close())
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Experiment is one invocation of iolab that measures something.
type Experiment struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Command    string          `json:"command"`
	Plan       json.RawMessage `json:"plan"`
	CreatedAt  time.Time       `json:"created_at"`
	FinishedAt time.Time       `json:"finished_at"`
	Status     string          `json:"status"`
	// Notes are what the user said about it (--note, iolab note), oldest
	// first.
	Notes []Note `json:"notes,omitempty"`
	// SegmentGroup names the load this experiment ran a segment of
	// (--segment-group), and Segment which one (I/N); both empty for a
	// whole load.
	SegmentGroup string `json:"segment_group,omitempty"`
	Segment      string `json:"segment,omitempty"`
}

// Note is a remark on an experiment: "VM-7: virtio queue depth 256".
type Note struct {
	At   time.Time `json:"at"`
	Text string    `json:"text"`
}

// Cell is one workload with its parameters within an experiment.
type Cell struct {
	ID       int64             `json:"-"`
	Index    int               `json:"index"`
	Name     string            `json:"name"`
	Variant  string            `json:"variant"`
	Workload string            `json:"workload"`
	Params   map[string]string `json:"params"`
}

// Run is one measured (or warm-up) execution of a cell.
type Run struct {
	ID      int64
	CellID  int64
	Round   int
	Slot    int
	Warmup  bool
	Status  string
	Error   string
	EndedAt time.Time
	Result  *metrics.Result
}

// EnvSnapshot is an environment snapshot stored as JSON.
// PhaseReady is the phase of a target's environment read once a
// variant's server was ready: the target as the runs saw it (a mount the
// server made), where a round's snapshots, taken with no server up, see
// what lies under it.
const PhaseReady = "ready"

type EnvSnapshot struct {
	Round    int
	Phase    string
	TakenAt  time.Time
	Snapshot json.RawMessage
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func parseTS(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// CreateExperiment stores a new experiment with its cells and sets the
// cells' IDs.
func (s *Store) CreateExperiment(ctx context.Context, e *Experiment, cells []Cell) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, `INSERT INTO experiments (id, name, command, plan, created_at, status, segment_grp, segment) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, redact.String(e.Name), redact.String(e.Command), redact.String(string(e.Plan)), ts(e.CreatedAt), e.Status, e.SegmentGroup, e.Segment)
	if err != nil {
		return s.wrap(err)
	}
	for i := range cells {
		params, _ := json.Marshal(cells[i].Params)
		cells[i].ID, err = insertID(ctx, tx, `INSERT INTO cells (experiment_id, idx, name, variant, workload, params) VALUES (?, ?, ?, ?, ?, ?)`,
			e.ID, cells[i].Index, redact.String(cells[i].Name), redact.String(cells[i].Variant), cells[i].Workload, redact.String(string(params)))
		if err != nil {
			return s.wrap(err)
		}
	}
	return s.wrap(tx.Commit())
}

// AddNote appends a note to an experiment (by its full ID).
func (s *Store) AddNote(ctx context.Context, id, text string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(err)
	}
	defer tx.Rollback()
	var raw string
	switch err := tx.QueryRowContext(ctx, `SELECT notes FROM experiments WHERE id = ?`, id).Scan(&raw); {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: %s", ErrNoExperiment, id)
	case err != nil:
		return s.wrap(err)
	}
	var notes []Note
	_ = json.Unmarshal([]byte(raw), &notes)
	notes = append(notes, Note{At: time.Now().UTC(), Text: redact.String(text)})
	b, err := json.Marshal(notes)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE experiments SET notes = ? WHERE id = ?`, string(b), id); err != nil {
		return s.wrap(err)
	}
	return s.wrap(tx.Commit())
}

// FinishExperiment records the experiment's final status.
func (s *Store) FinishExperiment(ctx context.Context, id, status string) error {
	return s.withKept(ctx, synced, func(tx *sqlTx) error {
		_, err := tx.ExecContext(ctx, `UPDATE experiments SET status = ?, finished_at = ? WHERE id = ?`, status, ts(time.Now()), id)
		return err
	})
}

// SetExperimentStatus marks a resumed experiment as running again.
func (s *Store) SetExperimentStatus(ctx context.Context, id, status string) error {
	return s.withKept(ctx, synced, func(tx *sqlTx) error {
		_, err := tx.ExecContext(ctx, `UPDATE experiments SET status = ?, finished_at = NULL WHERE id = ?`, status, id)
		return err
	})
}

func (s *Store) wrap(err error) error {
	if err == nil {
		return nil
	}
	if full := s.spaceErr(err); full != nil {
		return full
	}
	if err == sql.ErrNoRows { //nolint:errorlint // bare: no caller said what was missing
		err = fmt.Errorf("a row iolab wrote or expected is not in the store (removed by another process meanwhile?): %w", err)
	}
	return fmt.Errorf("--db %s: %w", s.path, err)
}

// isDir says path is a directory.
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
