package lab

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/store"
)

// seriesWriter writes a running run's seconds — the client's, the
// server's, the machine's — to the store from a goroutine of its own.
// Whoever hands it seconds (the driver between two ticks of the run, the
// watchers) never waits for the store: a store that pauses (a PostgreSQL
// restarting, waited out for --store-grace) holds up the writing, never
// the run, whose runtime, operations and seconds stay what they would
// have been. Seconds wait in memory meanwhile: a second is a handful of
// figures, and an outage lasts at most the grace.
type seriesWriter struct {
	st    store.Results
	ctx   context.Context
	runID int64

	mu     sync.Mutex
	client []metrics.Second
	server []metrics.ServerSecond
	env    []metrics.EnvSecond
	err    error         // the first write that failed: nothing more is tried
	held   time.Duration // the longest the store took to take a batch
	closed bool

	wake chan struct{}
	done chan struct{}
}

// heldNotice is how long the store may take to take a batch of seconds
// before the run says so: far past a healthy store's write.
const heldNotice = 2 * time.Second

// batchOf is how many of the server's and machine's seconds (one a second
// each) are written at a time; the client's go as the driver hands them.
const batchOf = 5

func newSeriesWriter(ctx context.Context, st store.Results, runID int64) *seriesWriter {
	w := &seriesWriter{st: st, ctx: ctx, runID: runID, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.loop()
	return w
}

// Client, Server and Env hand seconds over, and return at once.
func (w *seriesWriter) Client(secs []metrics.Second) {
	w.add(func() bool { w.client = append(w.client, secs...); return true })
}

func (w *seriesWriter) Server(sec metrics.ServerSecond) {
	w.add(func() bool { w.server = append(w.server, sec); return len(w.server) >= batchOf })
}

func (w *seriesWriter) Env(sec metrics.EnvSecond) {
	w.add(func() bool { w.env = append(w.env, sec); return len(w.env) >= batchOf })
}

func (w *seriesWriter) add(put func() (due bool)) {
	w.mu.Lock()
	due := put() && w.err == nil && !w.closed
	w.mu.Unlock()
	if due {
		select {
		case w.wake <- struct{}{}:
		default: // the writer is already woken
		}
	}
}

func (w *seriesWriter) loop() {
	defer close(w.done)
	for range w.wake {
		if !w.write() {
			return
		}
	}
}

// write writes what is waiting; false once the writer has nothing more
// to do (closed, or the store failed past its grace).
func (w *seriesWriter) write() bool {
	w.mu.Lock()
	client, server, env, closed := w.client, w.server, w.env, w.closed
	w.client, w.server, w.env = nil, nil, nil
	w.mu.Unlock()
	began := time.Now()
	var err error
	if len(client) > 0 {
		if err = w.st.AppendSeries(w.ctx, w.runID, client); err == nil {
			client = nil
		}
	}
	if err == nil && len(server) > 0 {
		if err = w.st.AppendServerSeries(w.ctx, w.runID, server); err == nil {
			server = nil
		}
	}
	if err == nil && len(env) > 0 {
		if err = w.st.AppendEnvSeries(w.ctx, w.runID, env); err == nil {
			env = nil
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held = max(w.held, time.Since(began))
	if err != nil {
		// Kept, in order, before what came meanwhile: the run's record
		// takes them when it is saved.
		w.err = err
		w.client = append(client, w.client...)
		w.server = append(server, w.server...)
		w.env = append(env, w.env...)
		return false
	}
	return !closed
}

// Close writes what is still waiting and says what could not be written
// (the store went away past its grace), to be saved with the run's
// record, and the longest any seconds waited for the store.
func (w *seriesWriter) Close() (client []metrics.Second, server []metrics.ServerSecond, env []metrics.EnvSecond, held time.Duration, err error) {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	close(w.wake)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.client, w.server, w.env, w.held, w.err
}

// heldNote says that a run's seconds waited for the store, and that the
// run was not held up by it.
func heldNote(held time.Duration, err error) metrics.Note {
	msg := fmt.Sprintf("the store did not take this run's seconds for %v (it was unreachable); the run went on as measured, its seconds kept and written when the store answered", held.Round(100*time.Millisecond))
	if err != nil {
		msg = fmt.Sprintf("the store did not take this run's seconds (%v); the run went on as measured, its seconds kept with its record", err)
	}
	return metrics.Note{Code: "store-held", Message: msg}
}
