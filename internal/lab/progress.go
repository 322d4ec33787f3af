package lab

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// RunPosition places a run in the experiment, for the progress line.
type RunPosition struct {
	Round, Rounds int
	Warmup        bool
	Done, Total   int // runs finished before this one, and in all
}

// Progress draws one live line on a terminal for runs longer than
// ShowAfter: round k/N, the cell, throughput so far (what the workload
// reported; a command's run reports none, and shows its time instead)
// and the time the experiment has left. It redraws on its own while a
// run lasts, whether or not the workload reports.
type Progress struct {
	W         io.Writer
	ShowAfter time.Duration
	// RunTime is the expected duration of one run (0 if unknown: the ETA
	// is then estimated from the runs so far).
	RunTime time.Duration

	mu         sync.Mutex
	start      time.Time
	began      time.Time // of the experiment
	shown      bool
	cell       string
	pos        RunPosition
	ops, bytes int64
	reported   bool
	stop       chan struct{}
	stopped    chan struct{}
}

// redraw is how often the line is drawn again while a run lasts.
const redraw = 250 * time.Millisecond

// Start begins a run and returns the callback its workload reports to.
func (p *Progress) Start(cell string, pos RunPosition) func(ops, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.start, p.cell, p.pos, p.shown = time.Now(), cell, pos, false
	p.ops, p.bytes, p.reported = 0, 0, false
	if p.began.IsZero() {
		p.began = p.start
	}
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go p.tick(p.stop, p.stopped)
	return p.update
}

// tick redraws the line until stop closes.
func (p *Progress) tick(stop, stopped chan struct{}) {
	defer close(stopped)
	t := time.NewTicker(redraw)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.draw()
			p.mu.Unlock()
		}
	}
}

func (p *Progress) update(ops, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ops, p.bytes, p.reported = ops, bytes, true
	p.draw()
}

// draw writes the line, once the run has lasted ShowAfter; p.mu held.
func (p *Progress) draw() {
	elapsed := time.Since(p.start)
	if elapsed < p.ShowAfter {
		return
	}
	p.shown = true
	secs := elapsed.Seconds()
	round := fmt.Sprintf("round %d/%d", p.pos.Round+1, p.pos.Rounds)
	if p.pos.Warmup {
		round = "warm-up"
	}
	rate := fmt.Sprintf("%s ops/s  %s/s", si(float64(p.ops)/secs), bytesHuman(float64(p.bytes)/secs))
	if !p.reported {
		rate = fmt.Sprintf("running %s", elapsed.Round(100*time.Millisecond))
	}
	fmt.Fprintf(p.W, "\r\033[K%s  run %d/%d  %s  %s  ETA %s", round, p.pos.Done+1, p.pos.Total, p.cell, rate, p.eta(elapsed))
}

func (p *Progress) eta(elapsed time.Duration) string {
	per := p.RunTime
	if per == 0 {
		if p.pos.Done == 0 {
			return "?"
		}
		per = time.Since(p.began) / time.Duration(p.pos.Done)
	}
	left := time.Duration(p.pos.Total-p.pos.Done)*per - elapsed
	if left < 0 {
		left = 0
	}
	return left.Round(time.Second).String()
}

// End clears the line of a finished run.
func (p *Progress) End() {
	if p.stop != nil {
		close(p.stop)
		<-p.stopped
		p.stop = nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.W, "\r\033[K")
	}
	p.shown = false
}

func si(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func bytesHuman(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
