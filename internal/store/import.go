package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/redact"
)

// ErrImported is returned when the experiment to import is in the store
// already.
var ErrImported = errors.New("already in the store")

// Import copies experiment e of store from into s, whole, in one
// transaction: its record (times, status, notes, segment), cells, runs
// with their histograms, series, frames, profiles and the machine's and
// the server's seconds, its environment snapshots, its kept objects'
// manifest and their later checks; each run's derived metrics are computed again from what it
// measured. Text that may hold a secret passes through redact.String, as
// in CreateExperiment (the secrets this process was given — a --db
// URL's password — never reach the store). IDs of cells and runs are the
// store's own. An experiment the
// store holds already is refused (ErrImported), so nothing is imported
// twice.
func (s *Store) Import(ctx context.Context, from *Store, e Experiment) error {
	d, err := from.LoadExperiment(ctx, e)
	if err != nil {
		return err
	}
	profiles, err := from.Profiles(ctx, e.ID)
	if err != nil {
		return err
	}
	objects, err := from.objectRows(ctx, e.ID)
	if err != nil {
		return err
	}

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM experiments WHERE id = ?`, e.ID).Scan(&n); err != nil {
		return s.wrap(err)
	}
	if n > 0 {
		return fmt.Errorf("experiment %s: %w %s", e.ID, ErrImported, s.path)
	}
	if err := insertImported(ctx, tx, e); err != nil {
		return s.wrap(err)
	}
	cellID := map[int64]int64{}
	for _, c := range d.Cells {
		params, _ := json.Marshal(c.Params)
		id, err := insertID(ctx, tx, `INSERT INTO cells (experiment_id, idx, name, variant, workload, params) VALUES (?, ?, ?, ?, ?, ?)`,
			e.ID, c.Index, redact.String(c.Name), redact.String(c.Variant), c.Workload, redact.String(string(params)))
		if err != nil {
			return s.wrap(err)
		}
		cellID[c.ID] = id
	}
	runID := map[int64]int64{}
	for _, r := range d.Runs {
		old := r.ID
		r.CellID = cellID[r.CellID]
		if r.ID, err = insertRun(ctx, tx, e.ID, &r, r.Status, r.EndedAt); err != nil {
			return s.wrap(err)
		}
		runID[old] = r.ID
		res := *r.Result
		res.Profiles = profiles[old]
		r.Result = &res
		if err := writeRun(ctx, tx, &r, metrics.RunMetrics(&res)); err != nil {
			return s.wrap(err)
		}
	}
	for _, env := range d.Env {
		if _, err := tx.ExecContext(ctx, `INSERT INTO env_snapshots (experiment_id, round, phase, taken_at, snapshot) VALUES (?, ?, ?, ?, ?)`,
			e.ID, env.Round, env.Phase, ts(env.TakenAt), string(env.Snapshot)); err != nil {
			return s.wrap(err)
		}
	}
	for _, o := range objects {
		if _, err := tx.ExecContext(ctx, `INSERT INTO objects (experiment_id, run_id, cell_id, object_key, size, seed, content_seed) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			e.ID, runID[o.run], cellID[o.cell], o.key, o.size, o.seed, o.cont); err != nil {
			return s.wrap(err)
		}
	}
	for _, v := range d.Verifies {
		v.CellID = cellID[v.CellID]
		first, _ := json.Marshal(v.First)
		if err := insertVerify(ctx, tx, e.ID, v, string(first)); err != nil {
			return s.wrap(err)
		}
	}
	return s.wrap(tx.Commit())
}

// importedObject is an object a run left in place, as an import copies it.
type importedObject struct {
	run, cell        int64
	key              string
	size, seed, cont int64
}

// objectRows reads the objects an experiment's runs left in place.
func (s *Store) objectRows(ctx context.Context, id string) ([]importedObject, error) {
	var objects []importedObject
	err := s.eachRow(ctx, `SELECT run_id, cell_id, object_key, size, seed, content_seed FROM objects WHERE experiment_id = ?`, func(rows *sql.Rows) error {
		var o importedObject
		if err := rows.Scan(&o.run, &o.cell, &o.key, &o.size, &o.seed, &o.cont); err != nil {
			return err
		}
		objects = append(objects, o)
		return nil
	}, id)
	return objects, err
}

// insertImported writes an imported experiment's own row, its secrets
// masked as every stored text is.
func insertImported(ctx context.Context, tx *sqlTx, e Experiment) error {
	notes, _ := json.Marshal(e.Notes)
	if e.Notes == nil {
		notes = []byte("[]")
	}
	var finished any
	if !e.FinishedAt.IsZero() {
		finished = ts(e.FinishedAt)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO experiments (id, name, command, plan, created_at, finished_at, status, notes, segment_grp, segment)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, e.ID, redact.String(e.Name), redact.String(e.Command), redact.String(string(e.Plan)), ts(e.CreatedAt),
		finished, e.Status, redact.String(string(notes)), e.SegmentGroup, e.Segment)
	return err
}

// Find is the experiment an ID names (all of it, or a unique prefix or
// suffix; "" the newest), without loading it; ErrNoExperiment,
// ErrAmbiguousID.
func (s *Store) Find(ctx context.Context, id string) (Experiment, error) { return s.find(ctx, id) }

// Cells are an experiment's cells (its exact ID).
func (s *Store) Cells(ctx context.Context, id string) ([]Cell, error) {
	d := &Data{Experiment: Experiment{ID: id}}
	err := s.loadCells(ctx, d)
	return d.Cells, err
}
