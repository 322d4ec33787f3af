package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/metrics"
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

// A run with more rows than one statement may bind (series, frames,
// metrics) is stored whole and in order.
func TestSaveRunManyRows(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s, e, cells := withExperiment(t, dsn, "many", []Cell{{Name: "c", Workload: "frames", Params: map[string]string{}}})
		res := &metrics.Result{Start: time.Now(), Duration: time.Second}
		for i := range 1001 {
			res.Series = append(res.Series, metrics.Second{T: int64(i), Ops: int64(i), Bytes: 2 * int64(i)})
			res.Frames = append(res.Frames, metrics.FrameTiming{Frame: i, Pos: i, Thread: i % 4, IONs: int64(i) * 10, Dropped: i%7 == 0})
		}
		derived := map[string]float64{}
		for i := range 333 {
			derived[fmt.Sprintf("m%03d", i)] = float64(i)
		}
		run := &Run{CellID: cells[0].ID, Round: 1, Status: StatusOK, EndedAt: time.Now(), Result: res}
		if err := s.SaveRun(ctx, e.ID, run, derived); err != nil {
			t.Fatal(err)
		}
		d, err := s.Load(ctx, e.ID)
		if err != nil || len(d.Runs) != 1 {
			t.Fatalf("%v: %+v", err, d)
		}
		got := d.Runs[0].Result
		if len(got.Series) != 1001 {
			t.Fatalf("stored %d seconds, want 1001", len(got.Series))
		}
		for i, sec := range got.Series {
			if sec.T != int64(i) || sec.Bytes != 2*int64(i) {
				t.Fatalf("second %d: %+v", i, sec)
			}
		}
		sums, err := s.Summaries(ctx)
		if err != nil || sums[e.ID] == nil || len(sums[e.ID].Runs) != 1 {
			t.Fatalf("summaries: %v", err)
		}
		if m := sums[e.ID].Runs[0].Result.Derived; len(m) != 333 || m["m332"] != 332 || m["m000"] != 0 {
			t.Errorf("stored %d metrics (want 333), m332 = %v", len(m), m["m332"])
		}
		frames := got.Frames
		if len(frames) != 1001 || frames[1000].IONs != 10000 || !frames[994].Dropped || frames[995].Dropped {
			t.Fatalf("frames: %d stored", len(frames))
		}
	})
}
