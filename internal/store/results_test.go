package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/metrics"
)

// resultsSuite is the conformance suite of Results: each entry tests the
// methods it names, on a store of its own; every method of the interface
// must be named by one, and the suite runs on SQLite and PostgreSQL alike.
var resultsSuite = []struct {
	name    string
	methods []string
	test    func(t *testing.T, dsn string)
}{
	{"round trip", []string{"CreateExperiment", "SaveRun", "FinishExperiment", "Load", "Close"}, roundTrip},
	{"experiments", []string{"ListExperiments", "LoadExperiment", "AddNote", "SetExperimentStatus", "SaveEnv", "Path"}, experimentsConform},
	{"a run as it goes", []string{"BeginRun", "AppendSeries", "AppendServerSeries", "AppendEnvSeries", "MarkCutRuns", "Profiles"}, runConform},
	{"objects", []string{"SaveObjects", "Objects", "SaveVerify"}, objectsConform},
	{"lease", []string{"AcquireLease", "Heartbeat", "ReleaseLease"}, lease},
	{"segments", []string{"ArriveAtBarrier", "Barrier", "Members", "JoinLoad", "LeaveLoad"}, segmentsConform},
	{"delete", []string{"DeleteExperiment"}, deleteConform},
}

func TestResultsConformance(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range resultsSuite {
		for _, m := range c.methods {
			covered[m] = true
		}
	}
	iface := reflect.TypeFor[Results]()
	for i := range iface.NumMethod() {
		if m := iface.Method(i).Name; !covered[m] {
			t.Errorf("Results.%s is tested by no entry of resultsSuite", m)
		}
	}
	for _, c := range resultsSuite {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			eachBackend(t, c.test)
		})
	}
}

func experimentsConform(t *testing.T, dsn string) {
	ctx := context.Background()
	var s Results
	s, older, _ := withExperiment(t, dsn, "20260101-000000-aaaa", nil)
	if s.Path() == "" {
		t.Fatal("no path")
	}
	newer := &Experiment{ID: "20260102-000000-bbbb", Name: "y", Command: "c", Plan: json.RawMessage(`{"plan_text": "p", "seed": 7}`),
		CreatedAt: older.CreatedAt.Add(time.Hour), Status: "running"}
	if err := s.CreateExperiment(ctx, newer, []Cell{{Name: "c", Workload: "cmd", Params: map[string]string{}}}); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListExperiments(ctx)
	if err != nil || len(list) != 2 || list[0].ID != newer.ID || list[1].ID != older.ID {
		t.Fatalf("list, newest first: %v %+v", err, list)
	}
	if rec, ok := list[0].PlanRecord(); !ok || rec.Text != "p" || rec.Seed != 7 {
		t.Fatalf("the plan record: %+v", rec)
	}
	d, err := s.LoadExperiment(ctx, list[0])
	if err != nil || d.Experiment.ID != newer.ID || len(d.Cells) != 1 {
		t.Fatalf("load of a listed experiment: %v %+v", err, d)
	}
	for id, want := range map[string]string{"": newer.ID, "bbbb": newer.ID, "20260101": older.ID} {
		if d, err := s.Load(ctx, id); err != nil || d.Experiment.ID != want {
			t.Errorf("load %q: %v, want %s", id, err, want)
		}
	}
	if _, err := s.Load(ctx, "2026010"); !errors.Is(err, ErrAmbiguousID) {
		t.Errorf("an ambiguous prefix: %v", err)
	}
	if err := s.AddNote(ctx, older.ID, "VM-7"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddNote(ctx, "nope", "x"); !errors.Is(err, ErrNoExperiment) {
		t.Errorf("a note on no experiment: %v", err)
	}
	if err := s.SetExperimentStatus(ctx, older.ID, "interrupted"); err != nil {
		t.Fatal(err)
	}
	snap := EnvSnapshot{Round: 2, Phase: "after", TakenAt: time.Now().UTC().Truncate(time.Second), Snapshot: json.RawMessage(`{"kernel":"6.1"}`)}
	if err := s.SaveEnv(ctx, older.ID, snap); err != nil {
		t.Fatal(err)
	}
	d, err = s.Load(ctx, older.ID)
	if err != nil || d.Experiment.Status != "interrupted" || len(d.Experiment.Notes) != 1 || d.Experiment.Notes[0].Text != "VM-7" ||
		len(d.Env) != 1 || d.Env[0].Round != 2 || d.Env[0].Phase != "after" || !d.Env[0].TakenAt.Equal(snap.TakenAt) {
		t.Fatalf("%v: %+v", err, d)
	}
}

func runConform(t *testing.T, dsn string) {
	ctx := context.Background()
	var s Results
	s, e, cells := withExperiment(t, dsn, "runs", []Cell{{Name: "c", Workload: "fs", Params: map[string]string{}}})
	run := &Run{CellID: cells[0].ID, Round: 1, Slot: 0}
	if err := s.BeginRun(ctx, e.ID, run); err != nil || run.ID == 0 {
		t.Fatalf("begin: %v, id %d", err, run.ID)
	}
	d, _ := s.Load(ctx, e.ID)
	if len(d.Runs) != 1 || d.Runs[0].Status != StatusRunning {
		t.Fatalf("a begun run: %+v", d.Runs)
	}
	// Seconds as they come, the run's end cut by Ctrl-C.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.AppendSeries(cancelled, run.ID, []metrics.Second{{T: 0, Ops: 3, Bytes: 12}, {T: 1, Ops: 4}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendServerSeries(cancelled, run.ID, []metrics.ServerSecond{{T: 0, RSSBytes: 1 << 20, CPUS: 0.25}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.AppendEnvSeries(cancelled, run.ID, []metrics.EnvSecond{{T: 5, IOStall: 0.5}}); err != nil {
			t.Fatal(err)
		}
	}
	run.Status, run.EndedAt = StatusInterrupted, time.Now()
	run.Result = &metrics.Result{Start: time.Now(), Duration: 2 * time.Second, Profiles: map[string][]byte{"perf": {1, 2, 3}}}
	if err := s.SaveRun(cancelled, e.ID, run, map[string]float64{"ops_per_s": 3.5}); err != nil {
		t.Fatal(err)
	}
	// Another begun run whose runner died: marked interrupted.
	cut := &Run{CellID: cells[0].ID, Round: 2}
	if err := s.BeginRun(ctx, e.ID, cut); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkCutRuns(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	d, err := s.Load(ctx, e.ID)
	if err != nil || len(d.Runs) != 2 {
		t.Fatalf("%v: %+v", err, d)
	}
	got := d.Runs[0].Result
	if d.Runs[0].Status != StatusInterrupted || len(got.Series) != 2 || got.Series[0].Bytes != 12 || len(got.ServerSeries) != 1 ||
		got.ServerSeries[0].CPUS != 0.25 || len(got.EnvSeries) != 1 || got.EnvSeries[0].IOStall != 0.5 {
		t.Fatalf("the run's seconds: %+v", got)
	}
	if d.Runs[1].Status != StatusInterrupted {
		t.Fatalf("a cut run left %s", d.Runs[1].Status)
	}
	profiles, err := s.Profiles(ctx, e.ID)
	if err != nil || !slices.Equal(profiles[run.ID]["perf"], []byte{1, 2, 3}) {
		t.Fatalf("profiles: %v %v", err, profiles)
	}
}

func objectsConform(t *testing.T, dsn string) {
	ctx := context.Background()
	var s Results
	s, e, cells := withExperiment(t, dsn, "objects", []Cell{{Name: "c", Workload: "s3", Params: map[string]string{}}})
	run := &Run{CellID: cells[0].ID, Status: StatusOK, EndedAt: time.Now(), Result: &metrics.Result{}}
	if err := s.SaveRun(ctx, e.ID, run, nil); err != nil {
		t.Fatal(err)
	}
	objs := []Object{{CellID: cells[0].ID, Key: "a/1", Size: 4096, Seed: 1 << 62, ContentSeed: 9}, {CellID: cells[0].ID, Key: "a/2", Size: 1}}
	if err := s.SaveObjects(ctx, e.ID, run.ID, objs); err != nil {
		t.Fatal(err)
	}
	got, err := s.Objects(ctx, e.ID)
	if err != nil || !slices.Equal(got, objs) {
		t.Fatalf("%v: %+v", err, got)
	}
	// Their later checks are the experiment's, loaded with it, oldest
	// first; one cut short says so.
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	checks := []Verify{
		{CellID: cells[0].ID, At: at.Add(time.Hour), By: "s3 verify", Target: "http://127.0.0.1:1/b", Checked: 2, Missing: 1, Unreadable: 1,
			First: []string{"a/1 (missing)", "a/2 (unreadable: timeout)"}, Interrupted: true},
		{CellID: cells[0].ID, At: at, By: "s3 verify", Target: "http://127.0.0.1:1/b", Checked: 2, Mismatched: 2, First: []string{"a/1 (content differs)"}},
	}
	for _, v := range checks {
		if err := s.SaveVerify(ctx, e.ID, v); err != nil {
			t.Fatal(err)
		}
	}
	d, err := s.Load(ctx, e.ID)
	if err != nil || len(d.Verifies) != 2 {
		t.Fatalf("%v: %+v", err, d)
	}
	for i, want := range []Verify{checks[1], checks[0]} {
		if got := d.Verifies[i]; !got.At.Equal(want.At) || got.By != want.By || got.Target != want.Target || got.CellID != want.CellID ||
			got.Checked != want.Checked || got.Mismatched != want.Mismatched || got.Missing != want.Missing || got.Unreadable != want.Unreadable ||
			!slices.Equal(got.First, want.First) || got.Interrupted != want.Interrupted {
			t.Errorf("check %d read back as %+v, want %+v", i, got, want)
		}
	}
}

func segmentsConform(t *testing.T, dsn string) {
	ctx := context.Background()
	var s Results
	s, _, _ = withExperiment(t, dsn, "solo", nil)
	for i, seg := range []string{"0/2", "1/2"} {
		e := &Experiment{ID: "seg-" + seg[:1], Name: "x", Command: "c", Plan: json.RawMessage(`{}`), CreatedAt: time.Now().Add(time.Duration(i) * time.Second),
			Status: "running", SegmentGroup: "load", Segment: seg}
		if err := s.CreateExperiment(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
	}
	members, err := s.Members(ctx, "load")
	if err != nil || len(members) != 2 || members[0].Segment != "0/2" || members[1].ID != "seg-1" {
		t.Fatalf("members: %v %+v", err, members)
	}
	if err := s.ArriveAtBarrier(ctx, "load run 0", 1, "host-b"); err != nil {
		t.Fatal(err)
	}
	if err := s.ArriveAtBarrier(ctx, "load run 0", 0, "host-a"); err != nil {
		t.Fatal(err)
	}
	arrived, last, err := s.Barrier(ctx, "load run 0")
	if err != nil || !slices.Equal(arrived, []int{0, 1}) || time.Since(last) > time.Minute {
		t.Fatalf("barrier: %v %v %v", err, arrived, last)
	}
	if arrived, _, err := s.Barrier(ctx, "load run 1"); err != nil || len(arrived) != 0 {
		t.Fatalf("a barrier nobody reached: %v %v", err, arrived)
	}
	// The first to join defines the load; the others read it back.
	if n, fp, err := s.JoinLoad(ctx, "load", 2, `{"a":1}`); err != nil || n != 2 || fp != `{"a":1}` {
		t.Fatalf("first join: %v %d %s", err, n, fp)
	}
	if n, fp, err := s.JoinLoad(ctx, "load", 3, `{"a":2}`); err != nil || n != 2 || fp != `{"a":1}` {
		t.Fatalf("a later join reads what the group holds: %v %d %s", err, n, fp)
	}
	// A group that holds experiments keeps its load; one that holds none
	// forgets it when the segment that gave it leaves.
	if err := s.LeaveLoad(ctx, "load", `{"a":1}`); err != nil {
		t.Fatal(err)
	}
	if _, fp, _ := s.JoinLoad(ctx, "load", 2, `{"a":3}`); fp != `{"a":1}` {
		t.Fatalf("a group with experiments forgot its load: %s", fp)
	}
	if _, _, err := s.JoinLoad(ctx, "empty", 2, `{"b":1}`); err != nil {
		t.Fatal(err)
	}
	if err := s.LeaveLoad(ctx, "empty", `{"b":2}`); err != nil {
		t.Fatal(err)
	}
	if _, fp, _ := s.JoinLoad(ctx, "empty", 2, `{"b":3}`); fp != `{"b":1}` {
		t.Fatalf("another segment's leave forgot the load: %s", fp)
	}
	if err := s.LeaveLoad(ctx, "empty", `{"b":1}`); err != nil {
		t.Fatal(err)
	}
	if _, fp, _ := s.JoinLoad(ctx, "empty", 2, `{"b":3}`); fp != `{"b":3}` {
		t.Fatalf("the load of a group that holds nothing is kept after its segment left: %s", fp)
	}
}

// Deleting an experiment deletes every row of it and nothing of another;
// the last segment of a load takes the load's record and barriers along.
func deleteConform(t *testing.T, dsn string) {
	ctx := context.Background()
	s, keep, cells := withExperiment(t, dsn, "keep", []Cell{{Name: "c", Workload: "fs", Params: map[string]string{}}})
	var victims []string
	for i, seg := range []string{"0/2", "1/2"} {
		e := &Experiment{ID: "gone-" + seg[:1], Name: "x", Command: "c", Plan: json.RawMessage(`{}`), CreatedAt: time.Now(),
			Status: "done", SegmentGroup: "load", Segment: seg}
		cs := []Cell{{Name: "c", Workload: "fs", Params: map[string]string{"bs": "4k"}}}
		if err := s.CreateExperiment(ctx, e, cs); err != nil {
			t.Fatal(err)
		}
		victims = append(victims, e.ID)
		for _, id := range []string{e.ID, keep.ID} {
			cell := cs[0].ID
			if id == keep.ID {
				cell = cells[0].ID
			}
			run := &Run{CellID: cell, Round: i, Status: StatusOK, EndedAt: time.Now(),
				Result: &metrics.Result{Start: time.Now(), Duration: time.Second, Series: []metrics.Second{{T: 1, Ops: 2}},
					Profiles: map[string][]byte{"perf": {1}}}}
			run.Result.ByOp[metrics.Read] = metrics.OpStats{Ops: 2, Bytes: 8}
			if err := s.SaveRun(ctx, id, run, map[string]float64{"ops_per_s": 2}); err != nil {
				t.Fatal(err)
			}
			if err := s.AppendEnvSeries(ctx, run.ID, []metrics.EnvSecond{{T: 1}}); err != nil {
				t.Fatal(err)
			}
			if err := s.SaveObjects(ctx, id, run.ID, []Object{{CellID: cell, Key: "k" + seg, Size: 1}}); err != nil {
				t.Fatal(err)
			}
			if err := s.SaveEnv(ctx, id, EnvSnapshot{Round: i, Phase: "before", TakenAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			if err := s.SaveVerify(ctx, id, Verify{CellID: cell, At: time.Now(), By: "s3 verify", Checked: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.ArriveAtBarrier(ctx, "load run 3", i, "h"); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.JoinLoad(ctx, "load", 2, "{}"); err != nil {
		t.Fatal(err)
	}
	if err := s.ArriveAtBarrier(ctx, "loader run 3", 0, "h"); err != nil { // another group's, whose name starts alike
		t.Fatal(err)
	}
	if err := s.DeleteExperiment(ctx, victims[0]); err != nil {
		t.Fatal(err)
	}
	if arrived, _, _ := s.Barrier(ctx, "load run 3"); len(arrived) != 2 {
		t.Fatalf("a segment of the load is left, and its barriers with it: %v", arrived)
	}
	if err := s.DeleteExperiment(ctx, victims[1]); err != nil {
		t.Fatal(err)
	}
	for _, id := range victims {
		if _, err := s.Load(ctx, id); !errors.Is(err, ErrNoExperiment) {
			t.Errorf("%s after delete: %v", id, err)
		}
	}
	if err := s.DeleteExperiment(ctx, victims[0]); !errors.Is(err, ErrNoExperiment) {
		t.Errorf("deleting it twice: %v", err)
	}
	for _, table := range append([]string{"runs", "cells", "objects", "verifies", "env_snapshots", "segment_loads", "segment_barrier"}, runTables...) {
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		want := 1 // keep's: one per segment for runs, run rows, objects and snapshots
		switch table {
		case "runs", "objects", "verifies", "env_snapshots", "run_directions", "metrics", "series", "env_series", "profiles":
			want = 2
		case "segment_loads", "frame_timings", "server_series":
			want = 0
		}
		if n != want {
			t.Errorf("%s: %d rows left, want %d (the other experiment's)", table, n, want)
		}
	}
	if n, fp, _ := s.JoinLoad(ctx, "load", 4, "new"); n != 4 || fp != "new" {
		t.Errorf("the group's name is free again: %d %s", n, fp)
	}
	d, err := s.Load(ctx, keep.ID)
	if err != nil || len(d.Runs) != 2 || d.Runs[1].Result.Ops() != 2 {
		t.Fatalf("the other experiment: %v %+v", err, d)
	}
}

// A summary is the experiment without its measurements: the runs with the
// metrics stored with them (which RunMetrics then returns), no
// histograms or series, the first environment snapshot; a segment of a
// load has none.
func TestSummaries(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s, e, cells := withExperiment(t, dsn, "sum", []Cell{{Name: "c", Workload: "fs", Params: map[string]string{"bs": "4k"}}})
		res := &metrics.Result{Start: time.Now(), Duration: time.Second, Series: []metrics.Second{{T: 0, Ops: 5}}}
		h := metrics.NewHistogram()
		metrics.RecordLatency(h, 1000)
		res.ByOp[metrics.Read] = metrics.OpStats{Ops: 5, Bytes: 20, Lat: h}
		run := &Run{CellID: cells[0].ID, Round: 0, Status: StatusOK, EndedAt: time.Now(), Result: res}
		derived := metrics.RunMetrics(res)
		if err := s.SaveRun(ctx, e.ID, run, derived); err != nil {
			t.Fatal(err)
		}
		for i, phase := range []string{"before", "after"} {
			if err := s.SaveEnv(ctx, e.ID, EnvSnapshot{Round: 0, Phase: phase, TakenAt: time.Now().Add(time.Duration(i) * time.Second), Snapshot: json.RawMessage(`{"i":` + fmt.Sprint(i) + `}`)}); err != nil {
				t.Fatal(err)
			}
		}
		seg := &Experiment{ID: "seg", Name: "x", Command: "c", Plan: json.RawMessage(`{}`), CreatedAt: time.Now(), Status: "done", SegmentGroup: "g", Segment: "0/2"}
		if err := s.CreateExperiment(ctx, seg, []Cell{{Name: "c", Workload: "fs", Params: map[string]string{}}}); err != nil {
			t.Fatal(err)
		}
		all, err := s.Summaries(ctx)
		d := all[e.ID]
		if err != nil || len(all) != 1 || d == nil || len(d.Cells) != 1 || d.Cells[0].Params["bs"] != "4k" || len(d.Runs) != 1 || len(d.Env) != 1 || string(d.Env[0].Snapshot) != `{"i":0}` {
			t.Fatalf("%v: %d summaries (a segment's is not one), %+v", err, len(all), d)
		}
		got := d.Runs[0].Result
		if got.ByOp[metrics.Read].Lat != nil || len(got.Series) != 0 || !maps.Equal(metrics.RunMetrics(got), derived) || derived["read.lat_p99_ns"] == 0 {
			t.Fatalf("the summary's run: %+v, metrics %v, want %v", got, metrics.RunMetrics(got), derived)
		}
	})
}
