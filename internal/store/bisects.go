package store

import (
	"context"
	"database/sql"
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
