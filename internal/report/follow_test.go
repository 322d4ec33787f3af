package report

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/procgroup"
	"github.com/iolab/iolab/internal/store"
)

// The load's line adds the segments' latest fresh seconds (the worst p99);
// a stale second, a segment between runs and one that has ended add
// nothing; the load runs while a segment does.
func TestFollow(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	me, _ := os.Hostname()
	owner := store.Owner{Host: me, PID: os.Getpid(), Start: procgroup.StartTime(os.Getpid())}
	seg := func(s, status, run string, round int, sec metrics.Second, errs int64) store.LiveSegment {
		return store.LiveSegment{Member: store.Member{ID: "e" + s, Segment: s, Status: status, Owner: owner},
			Round: round, RunStatus: run, Second: sec, Errors: errs, Finished: round}
	}
	fresh := func(ops, bytes, p99 int64) metrics.Second {
		return metrics.Second{T: now.Unix() - 1, Ops: ops, Bytes: bytes, P99Ns: p99}
	}
	view, running := Follow("g", []store.LiveSegment{
		seg("1/3", store.StatusRunning, store.StatusRunning, 2, fresh(100, 1<<20, 2e6), 1),
		seg("0/3", store.StatusRunning, store.StatusRunning, 2, fresh(300, 3<<20, 5e6), 0),
		seg("2/3", store.StatusRunning, store.StatusRunning, 2, metrics.Second{T: now.Unix() - 60, Ops: 999}, 0), // stale
	}, now)
	if !running || !strings.Contains(view, "load g (3 of 3 segments stored)") || !strings.Contains(view, " 400 ops/s  4.0 MiB/s  p99 ≤ 5") ||
		!strings.Contains(view, "1 errors (the latest second of the 2 segments in a run)") {
		t.Errorf("three running, one stale:\n%s", view)
	}
	if i, j := strings.Index(view, "  0/3"), strings.Index(view, "  1/3"); i < 0 || j < i {
		t.Errorf("segments not in order:\n%s", view)
	}
	view, running = Follow("g", []store.LiveSegment{
		seg("0/2", store.StatusOK, store.StatusOK, 3, metrics.Second{}, 2),
		seg("1/2", "done", store.StatusOK, 3, metrics.Second{}, 0),
	}, now)
	if running || !strings.Contains(view, "between runs; 2 errors so far") {
		t.Errorf("every segment ended:\n%s", view)
	}
}
