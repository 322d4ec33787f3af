package store

import (
	"context"
	"errors"
	"strings"
	"testing"
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
