package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/pgtest"
)

// eachBackend runs test against a SQLite file and a PostgreSQL database (a
// real server, started by internal/pgtest), each a new one.
func eachBackend(t *testing.T, test func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		test(t, filepath.Join(t.TempDir(), "x.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		test(t, pgtest.Database(t))
	})
}

func roundTrip(t *testing.T, path string) {
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	e := &Experiment{ID: "20260101-000000-abcd", Name: "fs", Command: "iolab fs", Plan: json.RawMessage(`{"rounds":2}`),
		CreatedAt: time.Now(), Status: "running"}
	cells := []Cell{{Index: 0, Name: "randread-4k", Workload: "fs", Params: map[string]string{"bs": "4k"}}}
	if err := s.CreateExperiment(ctx, e, cells); err != nil {
		t.Fatal(err)
	}
	h := metrics.NewHistogram()
	for v := int64(1000); v < 100000; v += 7 {
		metrics.RecordLatency(h, v)
	}
	res := &metrics.Result{Start: time.Now(), Duration: 2 * time.Second, Errors: 1, FirstError: "boom",
		Series: []metrics.Second{{T: 0, Ops: 5, Bytes: 20, P50Ns: 1, P99Ns: 2, MaxNs: 3}, {T: 1, Ops: 6}},
		Notes:  []metrics.Note{{Code: "o-direct-fallback", Message: "m"}}}
	res.ByOp[metrics.Read] = metrics.OpStats{Ops: h.TotalCount(), Bytes: 4096 * h.TotalCount(), Lat: h}
	res.ByOp[metrics.Get] = metrics.OpStats{Ops: h.TotalCount(), Errors: 3, Lat: h, TTFB: h, ActiveS: 1.25}
	res.ErrorCodes = map[string]int64{"get:SlowDown": 3}
	res.Frames = []metrics.FrameTiming{{Frame: 1, Pos: 0, Thread: 1, StartNs: 5, OpenNs: 6, IONs: 7, CloseNs: 8}, {Frame: 0, Pos: 1, LateNs: 9, Dropped: true}}
	res.Extra = map[string]float64{"wall_s": 1.5}
	res.Profiles = map[string][]byte{"go_pprof": {0, 1, 2, 255}}
	cancelled, cancel := context.WithCancel(ctx)
	cancel() // a Ctrl-C'd run must still be written
	run := &Run{CellID: cells[0].ID, Round: 0, Slot: 0, Status: StatusInterrupted, EndedAt: time.Now(), Result: res}
	if err := s.SaveRun(cancelled, e.ID, run, map[string]float64{"ops_per_s": 42}); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishExperiment(ctx, e.ID, "interrupted"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := s.Load(ctx, "20260101")
	if err != nil {
		t.Fatal(err)
	}
	if d.Experiment.Status != "interrupted" || len(d.Cells) != 1 || d.Cells[0].Params["bs"] != "4k" || len(d.Runs) != 1 {
		t.Fatalf("loaded %+v", d)
	}
	got := d.Runs[0]
	if got.Status != StatusInterrupted || got.Result.Errors != 1 || got.Error != "boom" || len(got.Result.Series) != 2 ||
		got.Result.Duration != 2*time.Second || len(got.Result.Notes) != 1 {
		t.Fatalf("run %+v result %+v", got, got.Result)
	}
	if metrics.PercentilesOf(got.Result.ByOp[metrics.Read].Lat) != metrics.PercentilesOf(h) {
		t.Fatal("histogram changed in the round trip")
	}
	if len(got.Result.Frames) != 2 || got.Result.Frames[0].IONs != 7 || got.Result.Frames[0].Frame != 1 || !got.Result.Frames[1].Dropped ||
		got.Result.Frames[1].LateNs != 9 || got.Result.Frames[1].Pos != 1 {
		t.Fatalf("frames %+v", got.Result.Frames)
	}
	if got.Result.Extra["wall_s"] != 1.5 {
		t.Fatalf("extra %v", got.Result.Extra)
	}
	g := got.Result.ByOp[metrics.Get]
	if g.Errors != 3 || g.TTFB == nil || g.TTFB.TotalCount() != h.TotalCount() || got.Result.ErrorCodes["get:SlowDown"] != 3 || g.ActiveS != 1.25 {
		t.Fatalf("get stats %+v codes %v", g, got.Result.ErrorCodes)
	}
	if _, err := s.Load(ctx, "nope"); !errors.Is(err, ErrNoExperiment) {
		t.Fatalf("load of unknown id: %v", err)
	}
}

func TestRefusesForeignAndNewerFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()

	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("this is not a database, just some text that is long enough to have a header"), 0o644)
	if _, err := Open(ctx, text); !errors.Is(err, ErrNotIolab) || !strings.Contains(err.Error(), text) {
		t.Fatalf("text file: %v", err)
	}

	other := filepath.Join(dir, "other.db")
	db, _ := sql.Open("sqlite", other)
	db.Exec(`CREATE TABLE t (x)`)
	db.Close()
	if _, err := Open(ctx, other); !errors.Is(err, ErrNotIolab) {
		t.Fatalf("foreign sqlite: %v", err)
	}

	newer := filepath.Join(dir, "newer.db")
	s, err := Open(ctx, newer)
	if err != nil {
		t.Fatal(err)
	}
	s.db.Exec(`UPDATE meta SET value = '99' WHERE key = 'schema_version'`)
	s.Close()
	if _, err := Open(ctx, newer); err == nil || !strings.Contains(err.Error(), "newer iolab") {
		t.Fatalf("newer schema: %v", err)
	}

	if _, err := Open(ctx, dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("directory: %v", err)
	}
}

// A PostgreSQL database of another program, or of a newer iolab, is
// refused; a server that is not there is named without the password.
func TestPostgresRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	foreign := pgtest.Database(t)
	db, err := sql.Open("pgx", foreign)
	if err != nil {
		t.Fatal(err)
	}
	db.Exec(`CREATE TABLE t (x INTEGER)`)
	db.Close()
	if _, err := Open(ctx, foreign); !errors.Is(err, ErrNotIolab) {
		t.Fatalf("foreign database: %v", err)
	}
	newer := pgtest.Database(t)
	s, err := Open(ctx, newer)
	if err != nil {
		t.Fatal(err)
	}
	s.db.ExecContext(ctx, `UPDATE meta SET value = '99' WHERE key = 'schema_version'`)
	s.Close()
	if _, err := Open(ctx, newer); err == nil || !strings.Contains(err.Error(), "newer iolab") {
		t.Fatalf("newer schema: %v", err)
	}
	_, err = Open(ctx, "postgres://iolab:s3cretpw@127.0.0.1:1/none?sslmode=disable&connect_timeout=5")
	if err == nil || !strings.Contains(err.Error(), "cannot connect") || strings.Contains(err.Error(), "s3cretpw") ||
		!strings.Contains(err.Error(), "postgres://iolab:***@127.0.0.1:1/none") {
		t.Fatalf("no server: %v", err)
	}
}

func TestBind(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"SELECT a FROM t WHERE b = ? AND c = ?":    "SELECT a FROM t WHERE b = $1 AND c = $2",
		"INSERT INTO t VALUES ('?', ?, \"x?\", ?)": "INSERT INTO t VALUES ('?', $1, \"x?\", $2)",
		"SELECT 1": "SELECT 1",
	} {
		if got := bind(in, true); got != want {
			t.Errorf("bind(%q) = %q, want %q", in, got, want)
		}
		if bind(in, false) != in {
			t.Errorf("SQLite's query changed: %q", in)
		}
	}
}

func TestMigratesVersion1(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	// Turn it back into what schema 1 looked like.
	for _, q := range []string{`ALTER TABLE cells DROP COLUMN variant`, `ALTER TABLE runs DROP COLUMN extra`,
		`ALTER TABLE runs DROP COLUMN error_codes`, `ALTER TABLE run_directions DROP COLUMN errors`,
		`ALTER TABLE run_directions DROP COLUMN ttfb_histogram`, `ALTER TABLE run_directions DROP COLUMN active_s`, `ALTER TABLE run_directions DROP COLUMN response_histogram`, `ALTER TABLE run_directions DROP COLUMN start_lag_histogram`, `DROP TABLE objects`, `DROP TABLE frame_timings`, `DROP TABLE leases`, `DROP TABLE server_series`, `DROP TABLE profiles`, `DROP TABLE env_series`, `ALTER TABLE experiments DROP COLUMN notes`,
		`DROP TABLE segment_loads`, `DROP INDEX env_snapshots_by_experiment`, `DROP INDEX experiments_by_group`,
		`ALTER TABLE experiments DROP COLUMN segment_grp`, `ALTER TABLE experiments DROP COLUMN segment`, `DROP TABLE segment_barrier`, `DROP TABLE bisects`, `DROP TABLE verifies`,
		`UPDATE meta SET value = '1' WHERE key = 'schema_version'`} {
		if _, err := s.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v string
	s.db.QueryRow(`SELECT value FROM meta WHERE key = 'schema_version'`).Scan(&v)
	if v != fmt.Sprint(SchemaVersion) {
		t.Fatalf("schema version %s after opening a version 1 database", v)
	}
	e := &Experiment{ID: "x", Name: "x", Command: "x", Plan: json.RawMessage(`{}`), CreatedAt: time.Now(), Status: "running"}
	cells := []Cell{{Name: "c", Variant: "b", Workload: "cmd", Params: map[string]string{}}}
	if err := s.CreateExperiment(ctx, e, cells); err != nil {
		t.Fatal(err)
	}
	run := &Run{CellID: cells[0].ID, Status: StatusOK, EndedAt: time.Now(), Result: &metrics.Result{Extra: map[string]float64{"wall_s": 1.5}}}
	if err := s.SaveRun(ctx, e.ID, run, nil); err != nil {
		t.Fatal(err)
	}
	d, err := s.Load(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if d.Cells[0].Variant != "b" || d.Runs[0].Result.Extra["wall_s"] != 1.5 {
		t.Fatalf("migrated database lost variant or extra: %+v %+v", d.Cells[0], d.Runs[0].Result)
	}
}

// A second of the machine given twice for a run (a watcher's late tick)
// is kept once, without failing the run.
func TestEnvSeriesSecondOnce(t *testing.T) { eachBackend(t, envSeriesSecondOnce) }

func envSeriesSecondOnce(t *testing.T, dsn string) {
	ctx := context.Background()
	s, e, cells := withExperiment(t, dsn, "x", []Cell{{Name: "c", Workload: "cmd", Params: map[string]string{}}})
	run := &Run{CellID: cells[0].ID, Status: StatusOK, EndedAt: time.Now(), Result: &metrics.Result{}}
	if err := s.SaveRun(ctx, e.ID, run, nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.AppendEnvSeries(ctx, run.ID, []metrics.EnvSecond{{T: 100, CPUStall: 0.5}}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := s.Load(ctx, "x")
	if err != nil || len(d.Runs[0].Result.EnvSeries) != 1 {
		t.Fatalf("%v: %+v", err, d.Runs[0].Result.EnvSeries)
	}
}

// withExperiment opens the store at dsn, closed when the test ends, holding
// one running experiment of the cells.
func withExperiment(t *testing.T, dsn, id string, cells []Cell) (*Store, *Experiment, []Cell) {
	t.Helper()
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e := &Experiment{ID: id, Name: "x", Command: "c", Plan: json.RawMessage(`{}`), CreatedAt: time.Now(), Status: "running"}
	if err := s.CreateExperiment(context.Background(), e, cells); err != nil {
		t.Fatal(err)
	}
	return s, e, cells
}

// What history and report pay to load every experiment of a big store by
// its ID: go test -run '^$' -bench LoadByID ./internal/store
func BenchmarkLoadByIDAmong3000(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "x.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := range 3000 {
		e := &Experiment{ID: fmt.Sprintf("e-%05d", i), Name: "x", Command: "c", Plan: []byte("{}"), CreatedAt: time.Unix(int64(1e9+i), 0), Status: "done"}
		if err := s.CreateExperiment(ctx, e, []Cell{{Name: "c", Workload: "fs", Params: map[string]string{}}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for n := range b.N {
		if _, err := s.Load(ctx, fmt.Sprintf("e-%05d", n%3000)); err != nil {
			b.Fatal(err)
		}
	}
}

// A bisect's answer is kept by its ID, the newest replacing the one
// before; an ID of none is ErrNoBisect.
func TestBisectAnswerKept(t *testing.T) { eachBackend(t, bisectAnswerKept) }

func bisectAnswerKept(t *testing.T, dsn string) {
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, answer := range []string{`{"verdict":"not finished"}`, `{"verdict":"found"}`} {
		if err := s.SaveBisect(ctx, "b1", []byte(answer)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Bisect(ctx, "b1"); err != nil || string(got) != `{"verdict":"found"}` {
		t.Errorf("bisect b1: %s, %v", got, err)
	}
	if _, err := s.Bisect(ctx, "b2"); !errors.Is(err, ErrNoBisect) {
		t.Errorf("an unknown bisect: %v", err)
	}
}

// A bisect's answer moves between stores as it was kept (import), and is
// deleted by its ID; both on every backend.
func TestBisectAnswerMovesAndGoes(t *testing.T) { eachBackend(t, bisectAnswerMovesAndGoes) }

func bisectAnswerMovesAndGoes(t *testing.T, dsn string) {
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SaveBisect(ctx, "b1", []byte(`{"verdict":"found"}`)); err != nil {
		t.Fatal(err)
	}
	kept, err := s.Bisects(ctx)
	if err != nil || len(kept) != 1 || kept[0].ID != "b1" || string(kept[0].Answer) != `{"verdict":"found"}` || kept[0].UpdatedAt == "" {
		t.Fatalf("the bisects kept: %+v, %v", kept, err)
	}
	if err := s.ImportBisect(ctx, kept[0]); err == nil {
		t.Error("a bisect the store holds was imported again")
	}
	if err := s.DeleteBisect(ctx, "b1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Bisect(ctx, "b1"); !errors.Is(err, ErrNoBisect) {
		t.Errorf("bisect b1 after its deletion: %v", err)
	}
	if err := s.DeleteBisect(ctx, "b1"); !errors.Is(err, ErrNoBisect) {
		t.Errorf("deleting a bisect of none: %v", err)
	}
	if err := s.ImportBisect(ctx, kept[0]); err != nil {
		t.Fatal(err)
	}
	if again, err := s.Bisects(ctx); err != nil || len(again) != 1 || again[0].ID != kept[0].ID || again[0].UpdatedAt != kept[0].UpdatedAt || string(again[0].Answer) != string(kept[0].Answer) {
		t.Errorf("imported back: %+v, want %+v (%v)", again, kept, err)
	}
}

// A round's environment snapshots are written with the store's next write
// (a run's begin), not in commits of their own, and every one is written
// by Close: another process reading the store sees the snapshot before a
// round once the round's run has begun, and the one after it once the
// writer has closed.
func TestEnvSnapshotsRideWithTheNextWrite(t *testing.T) { eachBackend(t, envWithTheNextWrite) }

func envWithTheNextWrite(t *testing.T, dsn string) {
	ctx := context.Background()
	s, e, cells := withExperiment(t, dsn, "env", []Cell{{Name: "c", Workload: "cmd", Params: map[string]string{}}})
	other, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	phases := func() []string {
		t.Helper()
		d, err := other.Load(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, env := range d.Env {
			out = append(out, env.Phase)
		}
		return out
	}
	if err := s.SaveEnv(ctx, e.ID, EnvSnapshot{Round: 0, Phase: "before", TakenAt: time.Now(), Snapshot: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if got := phases(); len(got) != 0 {
		t.Errorf("a snapshot in a commit of its own: %v", got)
	}
	if err := s.BeginRun(ctx, e.ID, &Run{CellID: cells[0].ID}); err != nil {
		t.Fatal(err)
	}
	if got := phases(); !slices.Equal(got, []string{"before"}) {
		t.Errorf("after the run began: %v, want the snapshot before it", got)
	}
	if err := s.SaveEnv(ctx, e.ID, EnvSnapshot{Round: 0, Phase: "after", TakenAt: time.Now(), Snapshot: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := phases(); !slices.Equal(got, []string{"before", "after"}) {
		t.Errorf("after Close: %v, want both", got)
	}
}

// A load's segments are listed by number — 0, 1, 2 ... 10, 11 — not as
// text sorts them (0, 1, 10, 11, 2 ...).
func TestMembersInSegmentOrder(t *testing.T) { eachBackend(t, membersInOrder) }

func membersInOrder(t *testing.T, dsn string) {
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, i := range []int{11, 2, 10, 0, 1} {
		e := &Experiment{ID: fmt.Sprintf("seg-%02d", i), Name: "x", Command: "c", Plan: json.RawMessage(`{}`), CreatedAt: time.Now(), Status: "done",
			SegmentGroup: "g", Segment: fmt.Sprintf("%d/12", i)}
		if err := s.CreateExperiment(ctx, e, []Cell{{Name: "c", Workload: "fs", Params: map[string]string{}}}); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := s.Members(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Segment)
	}
	if want := []string{"0/12", "1/12", "2/12", "10/12", "11/12"}; !slices.Equal(got, want) {
		t.Errorf("members %v, want %v", got, want)
	}
}

// A snapshot the store refuses for good (its experiment gone) does not
// keep the runs out: the run is stored, the snapshot dropped.
func TestRefusedSnapshotKeepsNoRunOut(t *testing.T) { eachBackend(t, refusedSnapshot) }

func refusedSnapshot(t *testing.T, dsn string) {
	ctx := context.Background()
	s, e, cells := withExperiment(t, dsn, "kept", []Cell{{Name: "c", Workload: "cmd", Params: map[string]string{}}})
	if err := s.SaveEnv(ctx, "no-such-experiment", EnvSnapshot{Phase: "before", TakenAt: time.Now(), Snapshot: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := s.BeginRun(ctx, e.ID, &Run{CellID: cells[0].ID, Round: i}); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if d, err := s.Load(ctx, e.ID); err != nil || len(d.Runs) != 2 {
		t.Fatalf("%v: %+v", err, d)
	}
}

// A store error never reaches a user as a bare "sql: no rows in result
// set": it says what is missing, and still is sql.ErrNoRows.
func TestNoRowsIsSaid(t *testing.T) {
	t.Parallel()
	s := &Store{path: "x.db"}
	err := s.wrap(sql.ErrNoRows)
	if !errors.Is(err, sql.ErrNoRows) || !strings.Contains(err.Error(), "--db x.db: a row iolab wrote or expected is not in the store") {
		t.Errorf("%v", err)
	}
}
