package store

import (
	"context"
	"testing"
)

// A record that serves a process that dies (a run begun, a heartbeat) is
// committed without waiting for the disk; a result is, and so is whatever
// the connection commits after the record.
func TestCommitDurability(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		setting := func(sync durability) string {
			t.Helper()
			tx, done, err := s.db.begin(ctx, sync)
			if err != nil {
				t.Fatal(err)
			}
			defer done()
			defer tx.Rollback()
			q := `PRAGMA synchronous`
			if s.db.pg {
				q = `SHOW synchronous_commit`
			}
			var v string
			if err := tx.QueryRowContext(ctx, q).Scan(&v); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			return v
		}
		want := map[bool][2]string{false: {"1", "2"}, true: {"off", "on"}}[s.db.pg] // SQLite: NORMAL, FULL
		for i, c := range []struct {
			sync durability
			want string
		}{{synced, want[1]}, {unsynced, want[0]}, {synced, want[1]}, {unsynced, want[0]}, {synced, want[1]}} {
			if got := setting(c.sync); got != c.want {
				t.Errorf("transaction %d (synced %v): the commit's setting is %s, want %s", i, c.sync, got, c.want)
			}
		}
	})
}
