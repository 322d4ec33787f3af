package lab

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/store"
)

// pausedStore takes no seconds while paused: each call to store them
// waits until it is resumed, as a store waited out through an outage
// does; with fail set, it then fails them, as a store gone past its
// grace does.
type pausedStore struct {
	*store.Store
	resume chan struct{}
	fail   bool
	calls  sync.WaitGroup
}

var errGone = errors.New("connection refused")

func (p *pausedStore) wait() error {
	<-p.resume
	if p.fail {
		return errGone
	}
	return nil
}

func (p *pausedStore) AppendSeries(ctx context.Context, id int64, secs []metrics.Second) error {
	if err := p.wait(); err != nil {
		return err
	}
	return p.Store.AppendSeries(ctx, id, secs)
}

func (p *pausedStore) AppendEnvSeries(ctx context.Context, id int64, secs []metrics.EnvSecond) error {
	if err := p.wait(); err != nil {
		return err
	}
	return p.Store.AppendEnvSeries(ctx, id, secs)
}

// handingWorkload hands its seconds to the run's sink as the driver
// does, one at a time, and notes the longest a hand-over took.
type handingWorkload struct {
	countingWorkload
	seconds int
	longest time.Duration
	handed  chan struct{} // closed once every second is handed over
}

func (w *handingWorkload) Run(ctx context.Context, p func(int64, int64)) (*metrics.Result, error) {
	sink, _ := metrics.SecondSink(ctx)
	for t := range w.seconds {
		at := time.Now()
		sink([]metrics.Second{{T: int64(t), Ops: 10, Bytes: 10}})
		w.longest = max(w.longest, time.Since(at))
	}
	close(w.handed)
	res, err := w.countingWorkload.Run(ctx, p)
	if res != nil {
		res.Duration = time.Duration(w.seconds+1) * time.Second
		res.Series = []metrics.Second{{T: int64(w.seconds), Ops: 1, Bytes: 1}} // the last, not drained
	}
	return res, err
}

// A store that pauses while a run goes on holds up the writing of its
// seconds, never the run: each hand-over returns at once, the run is
// stored as measured with every second, and a note says the store held
// them. Past the store's grace (the writes fail), the seconds it did not
// take are saved with the run's record.
func TestStoreThatPausesHoldsUpNoRun(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{false, true} {
		st := &pausedStore{Store: openStore(t), resume: make(chan struct{}), fail: fail}
		w := &handingWorkload{countingWorkload: countingWorkload{name: "h"}, seconds: 4, handed: make(chan struct{})}
		go func() {
			// Resumed once the run has handed everything over, or after
			// a while if a hand-over waits for the store (the defect).
			select {
			case <-w.handed:
			case <-time.After(3 * heldNotice):
			}
			time.Sleep(heldNotice + 100*time.Millisecond) // held long enough to be noted
			close(st.resume)
		}()
		cells := []Cell{{Name: "h", Workload: w, Target: t.TempDir()}}
		id, err := (&Runner{Store: st}).Run(context.Background(), Plan{Name: "t", Rounds: 1, Seed: 1}, cells)
		if err != nil {
			t.Fatalf("fail %v: %v", fail, err)
		}
		if w.longest >= heldNotice {
			t.Errorf("fail %v: a hand-over of seconds waited %v for the store", fail, w.longest)
		}
		d, err := st.Load(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		run := d.Runs[0]
		if run.Status != store.StatusOK {
			t.Fatalf("fail %v: the run is %s (%s)", fail, run.Status, run.Error)
		}
		var ops int64
		for _, s := range run.Result.Series {
			ops += s.Ops
		}
		if len(run.Result.Series) != 5 || ops != 41 {
			t.Errorf("fail %v: %d seconds of %d ops stored, want all 5 (41 ops): %+v", fail, len(run.Result.Series), ops, run.Result.Series)
		}
		noted := false
		for _, n := range run.Result.Notes {
			noted = noted || n.Code == "store-held" && strings.Contains(n.Message, "the run went on as measured")
		}
		if !noted {
			t.Errorf("fail %v: no note of the store's hold: %+v", fail, run.Result.Notes)
		}
	}
}
