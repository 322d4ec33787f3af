package store

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/procgroup"
)

func lease(t *testing.T, dsn string) {
	ctx := context.Background()
	s, _, _ := withExperiment(t, dsn, "e1", nil)
	first := Owner{Host: "h", PID: 10, Start: 1}
	second := Owner{Host: "h", PID: 20, Start: 2}
	alive := map[int]bool{10: true, 20: true}
	isAlive := func(o Owner) bool { return alive[o.PID] }

	if left, err := s.AcquireLease(ctx, "e1", first, isAlive); err != nil || len(left) != 0 {
		t.Fatalf("first acquire: %v, %v", left, err)
	}
	procs := []Process{{PGID: 77, Start: 5}}
	if err := s.Heartbeat(ctx, "e1", first, procs); err != nil {
		t.Fatal(err)
	}
	_, err := s.AcquireLease(ctx, "e1", second, isAlive)
	if !errors.Is(err, ErrLeased) || !strings.Contains(err.Error(), "pid 10 on h") {
		t.Fatalf("a second runner while the first lives: %v", err)
	}
	// The first dies: the second takes over and learns what it left.
	alive[10] = false
	left, err := s.AcquireLease(ctx, "e1", second, isAlive)
	if err != nil || len(left) != 1 || left[0] != procs[0] {
		t.Fatalf("take-over: %v, %v", left, err)
	}
	if err := s.Heartbeat(ctx, "e1", first, nil); !errors.Is(err, ErrLeased) {
		t.Fatalf("the old owner's heartbeat after a take-over: %v", err)
	}
	// An owner on another host is judged by its heartbeat alone.
	remote := Owner{Host: "elsewhere", PID: 30, Start: 3}
	if _, err := s.AcquireLease(ctx, "e1", remote, isAlive); !errors.Is(err, ErrLeased) {
		t.Fatalf("another host while the heartbeat is fresh: %v", err)
	}
	if err := s.ReleaseLease(ctx, "e1", second); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireLease(ctx, "e1", remote, isAlive); err != nil {
		t.Fatalf("after release: %v", err)
	}
}

// A running experiment whose runner is gone is marked died when the store
// is read, its running runs interrupted; one whose runner lives is not,
// and a marked one names its dead runner as a member.
func TestMarkDied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, cells := withExperiment(t, filepath.Join(t.TempDir(), "x.db"), "dead", []Cell{{Name: "c", Workload: "fs", Params: map[string]string{}}})
	host, _ := os.Hostname()
	ghost := Owner{Host: host, PID: 1 << 22, Start: 1} // above pid_max: no such process
	if _, err := s.AcquireLease(ctx, "dead", ghost, func(Owner) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRun(ctx, "dead", &Run{CellID: cells[0].ID}); err != nil {
		t.Fatal(err)
	}
	live := &Experiment{ID: "live", Name: "x", Command: "c", Plan: json.RawMessage(`{}`), CreatedAt: time.Now(), Status: StatusRunning}
	if err := s.CreateExperiment(ctx, live, nil); err != nil {
		t.Fatal(err)
	}
	me := Owner{Host: host, PID: os.Getpid(), Start: procgroup.StartTime(os.Getpid())}
	if _, err := s.AcquireLease(ctx, "live", me, func(Owner) bool { return true }); err != nil {
		t.Fatal(err)
	}
	marked, err := s.MarkDied(ctx)
	if err != nil || !slices.Equal(marked, []string{"dead"}) {
		t.Fatalf("marked %v: %v", marked, err)
	}
	d, _ := s.Load(ctx, "dead")
	if d.Experiment.Status != StatusDied || d.Runs[0].Status != StatusInterrupted {
		t.Fatalf("the dead one: %s, run %s", d.Experiment.Status, d.Runs[0].Status)
	}
	if d, _ := s.Load(ctx, "live"); d.Experiment.Status != StatusRunning {
		t.Fatalf("the live one: %s", d.Experiment.Status)
	}
	if again, _ := s.MarkDied(ctx); len(again) != 0 {
		t.Fatalf("marked twice: %v", again)
	}
	m := Member{ID: "dead", Status: StatusDied, Owner: ghost}
	if g := m.Gone(); !strings.HasPrefix(g, "died (pid 4194304 on ") {
		t.Fatalf("a died member: %q", g)
	}
}
