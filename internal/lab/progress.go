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
// ShowAfter: throughput so far, round k/N and the time left.
type Progress struct {
	W         io.Writer
	ShowAfter time.Duration
	// RunTime is the expected duration of one run (0 if unknown: the ETA
	// is then estimated from the runs so far).
	RunTime time.Duration

	mu    sync.Mutex
	start time.Time
	began time.Time // of the experiment
	shown bool
	cell  string
	pos   RunPosition
}

// Start begins a run and returns the callback its workload reports to.
func (p *Progress) Start(cell string, pos RunPosition) func(ops, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.start, p.cell, p.pos, p.shown = time.Now(), cell, pos, false
	if p.began.IsZero() {
		p.began = p.start
	}
	return p.update
}

func (p *Progress) update(ops, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
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
	fmt.Fprintf(p.W, "\r\033[K%s  %s  %s ops/s  %s/s  ETA %s",
		round, p.cell, si(float64(ops)/secs), bytesHuman(float64(bytes)/secs), p.eta(elapsed))
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
