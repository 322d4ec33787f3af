package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrNoBisect is returned when no bisect has the ID asked for.
var ErrNoBisect = errors.New("no such bisect")

// SaveBisect keeps a bisect's answer so far (JSON), replacing the one
// it kept before.
func (s *Store) SaveBisect(ctx context.Context, id string, answer []byte) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO bisects (id, answer, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET answer = excluded.answer, updated_at = excluded.updated_at`, id, string(answer), ts(time.Now()))
	return s.wrap(err)
}

// Bisect is the answer a bisect last kept, by its exact ID.
func (s *Store) Bisect(ctx context.Context, id string) ([]byte, error) {
	var answer string
	err := s.db.QueryRowContext(ctx, `SELECT answer FROM bisects WHERE id = ?`, id).Scan(&answer)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("--db %s: bisect %s: %w", s.path, id, ErrNoBisect)
	}
	if err != nil {
		return nil, s.wrap(err)
	}
	return []byte(answer), nil
}

// StoredBisect is a bisect's answer as the store keeps it.
type StoredBisect struct {
	ID        string
	Answer    []byte // JSON, as iolab bisect --json prints it
	UpdatedAt string
}

// Bisects lists every bisect's answer, oldest first.
func (s *Store) Bisects(ctx context.Context) ([]StoredBisect, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, answer, updated_at FROM bisects ORDER BY updated_at, id`)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []StoredBisect
	for rows.Next() {
		var b StoredBisect
		var answer string
		if err := rows.Scan(&b.ID, &answer, &b.UpdatedAt); err != nil {
			return nil, s.wrap(err)
		}
		b.Answer = []byte(answer)
		out = append(out, b)
	}
	return out, s.wrap(rows.Err())
}

// ImportBisect adds a bisect's answer copied from another store, as it
// was kept there; one the store holds already is an error.
func (s *Store) ImportBisect(ctx context.Context, b StoredBisect) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO bisects (id, answer, updated_at) VALUES (?, ?, ?)`, b.ID, string(b.Answer), b.UpdatedAt)
	return s.wrap(err)
}

// DeleteBisect deletes a bisect's answer (its steps are experiments, each
// deleted on its own); ErrNoBisect when there is none.
func (s *Store) DeleteBisect(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM bisects WHERE id = ?`, id)
	if err != nil {
		return s.wrap(err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("--db %s: bisect %s: %w", s.path, id, ErrNoBisect)
	}
	return nil
}

// BisectID is the bisect the experiment is a step of, "" when none.
func (e Experiment) BisectID() string {
	var rec PlanRecord
	if json.Unmarshal(e.Plan, &rec) != nil || rec.Bisect == nil {
		return ""
	}
	return rec.Bisect.ID
}
