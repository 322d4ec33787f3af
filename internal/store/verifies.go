package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/iolab/iolab/internal/redact"
)

// verifiesTable keeps the read-back checks made after an experiment's runs
// (iolab s3 verify, days later): what they found is the experiment's too.
const verifiesTable = `
CREATE TABLE verifies (
	experiment_id TEXT NOT NULL REFERENCES experiments(id),
	cell_id       INTEGER NOT NULL REFERENCES cells(id),
	at            TEXT NOT NULL,
	by_command    TEXT NOT NULL,          -- what checked: "s3 verify"
	target        TEXT NOT NULL,          -- what was read: endpoint and bucket
	checked       BIGINT NOT NULL,
	mismatched    BIGINT NOT NULL,        -- read, and not as written
	missing       BIGINT NOT NULL,        -- the server says it does not exist
	unreadable    BIGINT NOT NULL,        -- it may exist, but could not be read
	first         TEXT NOT NULL,          -- JSON ["key (why)", ...]: the first bad objects
	interrupted   INTEGER NOT NULL        -- 1: cut short, the counts are of what it checked
);
CREATE INDEX verifies_experiment ON verifies (experiment_id);`

// Verify is one later read-back check of what a cell's runs left in place.
type Verify struct {
	CellID                                   int64
	At                                       time.Time
	By, Target                               string
	Checked, Mismatched, Missing, Unreadable int64
	First                                    []string
	Interrupted                              bool
}

// SaveVerify stores a later check of an experiment's objects, whatever the
// caller's context: a check cut short by Ctrl-C keeps what it found.
func (s *Store) SaveVerify(ctx context.Context, experimentID string, v Verify) error {
	first, _ := json.Marshal(v.First)
	if v.First == nil {
		first = []byte("[]")
	}
	return s.wrap(insertVerify(context.WithoutCancel(ctx), s.db, experimentID, v, string(first)))
}

// execer is a database or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func insertVerify(ctx context.Context, db execer, experimentID string, v Verify, first string) error {
	_, err := db.ExecContext(ctx, `INSERT INTO verifies (experiment_id, cell_id, at, by_command, target, checked, mismatched, missing, unreadable, first, interrupted)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, experimentID, v.CellID, ts(v.At), v.By, redact.String(v.Target),
		v.Checked, v.Mismatched, v.Missing, v.Unreadable, redact.String(first), boolInt(v.Interrupted))
	return err
}

// loadVerifies reads the experiment's later checks, oldest first.
func (s *Store) loadVerifies(ctx context.Context, d *Data) error {
	return s.readVerifies(ctx, map[string]*Data{d.Experiment.ID: d}, `WHERE experiment_id = ?`, d.Experiment.ID)
}

// readVerifies adds the later checks the condition selects to the
// experiments of byID they belong to, oldest first.
func (s *Store) readVerifies(ctx context.Context, byID map[string]*Data, where string, args ...any) error {
	return s.eachRow(ctx, `SELECT experiment_id, cell_id, at, by_command, target, checked, mismatched, missing, unreadable, first, interrupted FROM verifies `+
		where+` ORDER BY at`, func(rows *sql.Rows) error {
		var v Verify
		var exp, at, first string
		var cut int
		if err := rows.Scan(&exp, &v.CellID, &at, &v.By, &v.Target, &v.Checked, &v.Mismatched, &v.Missing, &v.Unreadable, &first, &cut); err != nil {
			return err
		}
		v.At, v.Interrupted = parseTS(at), cut == 1
		if err := json.Unmarshal([]byte(first), &v.First); err != nil {
			return err
		}
		if d := byID[exp]; d != nil {
			d.Verifies = append(d.Verifies, v)
		}
		return nil
	}, args...)
}
