package lab

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// RunPosition places a run in the experiment, for the progress line.
type RunPosition struct {
	Round, Rounds int
	Warmup        bool
	Done, Total   int // runs finished before this one, and in all
	Variant       string
}

// Progress is one live line on a terminal, from the first build to the
// last run, redrawn in place (as k6's and hyperfine's): what iolab does
// now — building variant i/N with the build's last line of output,
// starting a server, running (run i/N, round, variant, cell, the rate so
// far, or the time for a run that reports nothing), cooling down — and
// the time the experiment has left. The line is cut to the terminal's
// width, so it never wraps (a wrapped line cannot be redrawn in place);
// anything else written to the terminal goes through Above, which clears
// the line first. A nil *Progress draws nothing.
type Progress struct {
	W io.Writer
	// Width says the terminal's columns now (it may be resized); nil or 0
	// is taken as 80.
	Width func() int
	// RunTime is the expected duration of one run (0 if unknown: the ETA
	// is then estimated from the runs so far).
	RunTime time.Duration

	mu         sync.Mutex
	began      time.Time // of the experiment's first run
	phase      string    // what is done now, between runs
	detail     string    // its last line of output
	phaseStart time.Time
	running    bool
	start      time.Time // of the run
	cell       string
	pos        RunPosition
	ops, bytes int64
	reported   bool
	step       string // of the run, before its workload reports
	shown      bool
	ticking    bool
	stop       chan struct{}
	stopped    chan struct{}
}

// redraw is how often the line is drawn again.
const redraw = 250 * time.Millisecond

// Phase says what is being done between runs ("building variant 1/3
// main"); the line shows it with its elapsed time until the next Phase or
// run.
func (p *Progress) Phase(text string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase, p.detail, p.phaseStart, p.running = text, "", time.Now(), false
	p.tickLocked()
	p.draw()
}

// Detail is the current phase's last line of output (a build's).
func (p *Progress) Detail(line string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if line = strings.TrimSpace(line); line != "" {
		p.detail = line
	}
}

// Start begins a run and returns the callback its workload reports to.
func (p *Progress) Start(cell string, pos RunPosition) func(ops, bytes int64) {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.start, p.cell, p.pos, p.running = time.Now(), cell, pos, true
	p.ops, p.bytes, p.reported, p.step = 0, 0, false, ""
	if p.began.IsZero() {
		p.began = p.start
	}
	p.tickLocked()
	p.draw()
	return p.update
}

// Step says what a run does before its workload reports ("starting the
// server"); "" when the workload runs.
func (p *Progress) Step(text string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.step = text
	p.draw()
}

// End ends a run; the line stays, saying so, until the next thing.
func (p *Progress) End() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase, p.detail, p.phaseStart, p.running = fmt.Sprintf("run %d/%d done", p.pos.Done+1, p.pos.Total), "", time.Now(), false
	p.pos.Done++
	p.draw()
}

// Close erases the line and stops redrawing it.
func (p *Progress) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	stop, stopped := p.stop, p.stopped
	p.ticking, p.stop = false, nil
	p.clear()
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-stopped
	}
}

// Above returns a writer for anything else said on the terminal while the
// line is up: each write clears the line first; the next redraw brings it
// back beneath.
func (p *Progress) Above(w io.Writer) io.Writer {
	if p == nil {
		return w
	}
	return aboveWriter{p, w}
}

type aboveWriter struct {
	p *Progress
	w io.Writer
}

func (a aboveWriter) Write(b []byte) (int, error) {
	a.p.mu.Lock()
	defer a.p.mu.Unlock()
	a.p.clear()
	return a.w.Write(b)
}

// tickLocked starts the redrawing goroutine once; p.mu held.
func (p *Progress) tickLocked() {
	if p.ticking {
		return
	}
	p.ticking = true
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go func(stop, stopped chan struct{}) {
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
	}(p.stop, p.stopped)
}

func (p *Progress) update(ops, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ops, p.bytes, p.reported = ops, bytes, true
	p.draw()
}

// clear erases the line if it is shown; p.mu held.
func (p *Progress) clear() {
	if p.shown {
		fmt.Fprint(p.W, "\r\033[K")
		p.shown = false
	}
}

// draw writes the line, cut to the terminal's width; p.mu held. What
// names the run or the phase (a variant's and a cell's names, which may
// be long) is shortened in its middle so that the figures after it —
// the rate, the elapsed time, the ETA — always show; a build's last line
// of output comes last, and is what is cut.
func (p *Progress) draw() {
	var before, after []string
	var name, tail string
	if !p.running {
		if p.phase == "" {
			return
		}
		name, tail = p.phase, p.detail
		after = append(after, time.Since(p.phaseStart).Round(time.Second).String())
		if eta := p.eta(0); p.pos.Total > 0 && eta != "?" {
			after = append(after, "ETA "+eta)
		}
	} else {
		elapsed := time.Since(p.start)
		round := fmt.Sprintf("round %d/%d", p.pos.Round+1, p.pos.Rounds)
		if p.pos.Warmup {
			round = "warm-up"
		}
		name = p.cell
		if p.pos.Variant != "" {
			name = p.pos.Variant + " / " + p.cell
		}
		rate := fmt.Sprintf("running %s", elapsed.Round(100*time.Millisecond))
		if p.step != "" {
			rate = p.step
		} else if p.reported {
			secs := max(elapsed.Seconds(), 1e-3)
			rate = fmt.Sprintf("%s ops/s  %s/s", si(float64(p.ops)/secs), bytesHuman(float64(p.bytes)/secs))
		}
		before = []string{fmt.Sprintf("run %d/%d", p.pos.Done+1, p.pos.Total), round}
		after = []string{rate, "ETA " + p.eta(elapsed)}
	}
	fmt.Fprint(p.W, "\r\033[K"+fit(line(before, name, after, tail, p.width()), p.width()))
	p.shown = true
}

// sep is what the line's parts are joined by.
const sep = "  "

// line joins before, name, after and tail, name shortened in its middle
// so that all but tail fit in fewer than width columns; where the name
// would keep fewer than 12 characters, the parts of before after its
// first (the round) are left out first. tail, if any, is what fit cuts.
func line(before []string, name string, after []string, tail string, width int) string {
	const minName = 12
	fixed := func(before []string) int {
		n := utf8.RuneCountInString(strings.Join(after, sep)) + len(sep)
		if len(before) > 0 {
			n += utf8.RuneCountInString(strings.Join(before, sep)) + len(sep)
		}
		return n
	}
	name = strings.TrimSpace(name)
	for len(before) > 1 && utf8.RuneCountInString(name) > width-1-fixed(before) && width-1-fixed(before) < minName {
		before = before[:len(before)-1]
	}
	if budget := max(width-1-fixed(before), minName); utf8.RuneCountInString(name) > budget {
		runes := []rune(name)
		head := (budget - 1) / 2
		name = string(runes[:head]) + "…" + string(runes[len(runes)-(budget-1-head):])
	}
	parts := append(append(slices.Clone(before), name), after...)
	if tail != "" {
		parts = append(parts, tail)
	}
	return strings.Join(parts, sep)
}

func (p *Progress) width() int {
	if p.Width != nil {
		if w := p.Width(); w > 0 {
			return w
		}
	}
	return 80
}

// fit cuts a line to fewer than width columns (a character in the last
// column makes some terminals wrap), ending it with … when cut.
func fit(line string, width int) string {
	line = strings.Map(func(r rune) rune { // one line: no control characters
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, line)
	if utf8.RuneCountInString(line) < width {
		return line
	}
	runes := []rune(line)
	return string(runes[:max(width-2, 0)]) + "…"
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
