// Package profiling captures CPU profiles of a server while a run is
// measured — from its Go pprof endpoint, or with perf record of its
// process tree — as pprof profiles, and reads them back as people ask:
// the functions that take the most CPU, and what changed between two
// variants.
//
// A Go server's pprof endpoint profiles for a duration fixed in advance,
// and a run's length is not always known (a count of operations): the
// capture asks for one-second windows back to back and merges them, so
// the profile covers the measured window, plus at most a second after it
// in which the server is idle and adds few samples.
package profiling

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/pprof/profile"

	"github.com/iolab/iolab/internal/procgroup"
	"github.com/iolab/iolab/internal/redact"
)

// Kinds of profile.
const (
	GoPprof = "go_pprof"
	Perf    = "perf"
)

// Capture is a profile being recorded.
type Capture interface {
	// Stop ends the capture and returns the profile, gzipped pprof.
	Stop() ([]byte, error)
}

// maxProfile bounds what one window of an endpoint may send.
const maxProfile = 64 << 20

// goCapture asks a Go pprof endpoint for one-second windows until stopped.
type goCapture struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	merged *profile.Profile // the windows so far, merged as they come
	err    error
}

// StartGo starts profiling the server behind a Go pprof CPU profile URL
// (http://127.0.0.1:PORT/debug/pprof/profile).
func StartGo(ctx context.Context, endpoint string) (Capture, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("profile.go_pprof %q: want the URL of a Go pprof CPU profile, such as http://127.0.0.1:{{port}}/debug/pprof/profile", redact.URL(endpoint))
	}
	q := u.Query()
	q.Set("seconds", "1")
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithCancel(ctx)
	c := &goCapture{cancel: cancel, done: make(chan struct{})}
	go c.loop(ctx, u.String())
	return c, nil
}

func (c *goCapture) loop(ctx context.Context, u string) {
	defer close(c.done)
	client := &http.Client{Timeout: 30 * time.Second}
	// At least one window, however short the run; each runs to its end
	// even when stopped: its profile holds the run's last moments.
	for first := true; first || ctx.Err() == nil; first = false {
		req, _ := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodGet, u, nil)
		p, err := fetch(client, req)
		c.mu.Lock()
		if err != nil {
			if c.err == nil {
				c.err = err
			}
			c.mu.Unlock()
			return
		}
		if c.merged != nil {
			p, err = profile.Merge([]*profile.Profile{c.merged, p})
		}
		if err != nil {
			c.err = fmt.Errorf("profile.go_pprof: merge windows: %w", err)
			c.mu.Unlock()
			return
		}
		c.merged = p
		c.mu.Unlock()
	}
}

func fetch(client *http.Client, req *http.Request) (*profile.Profile, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("profile.go_pprof: %w", redact.Err(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxProfile))
	if err != nil {
		return nil, fmt.Errorf("profile.go_pprof %s: %w", redact.URL(req.URL.String()), err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("profile.go_pprof %s: %s: %s", redact.URL(req.URL.String()), resp.Status, strings.TrimSpace(string(body[:min(len(body), 200)])))
	}
	p, err := profile.ParseData(body)
	if err != nil {
		return nil, fmt.Errorf("profile.go_pprof %s: not a pprof profile: %w", redact.URL(req.URL.String()), err)
	}
	return p, nil
}

func (c *goCapture) Stop() ([]byte, error) {
	c.cancel()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	if c.merged == nil {
		return nil, errors.New("profile.go_pprof: no profile window completed")
	}
	return encode(c.merged)
}

func encode(p *profile.Profile) ([]byte, error) {
	var b bytes.Buffer
	if err := p.Write(&b); err != nil { // gzipped
		return nil, err
	}
	return b.Bytes(), nil
}

// perfCapture is perf record of a process tree.
type perfCapture struct {
	cmd    *exec.Cmd
	dir    string
	out    bytes.Buffer
	exited chan struct{}
	err    error // of perf record, once exited is closed
}

// perfFrequency is the sampling rate: odd, so it does not beat with
// periodic work.
const perfFrequency = 499

// CheckPerf says whether perf can record here, and if not, why.
func CheckPerf() error {
	path, err := exec.LookPath("perf")
	if err != nil {
		return errors.New("profile.perf: perf is not installed (Debian: apt-get install linux-perf)")
	}
	dir, err := os.MkdirTemp("", "iolab-perf-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	out, err := exec.Command(path, "record", "-q", "-g", "-o", filepath.Join(dir, "check.data"), "--", "true").CombinedOutput()
	if err != nil {
		paranoid, _ := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
		return fmt.Errorf("profile.perf: the kernel refuses perf record (perf_event_paranoid %s): %s", strings.TrimSpace(string(paranoid)), firstLine(out))
	}
	return nil
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// perfStart bounds the wait for perf to begin recording.
const perfStart = 30 * time.Second

// StartPerf starts perf record -g of the processes pids (a server's tree;
// children they start later are followed) and returns once it records:
// perf starts with its events disabled and is told to enable them through
// its control FIFO, whose acknowledgement means sampling has begun — on a
// busy machine perf can take longer to start than a short run lasts.
func StartPerf(pids []int) (Capture, error) {
	dir, err := os.MkdirTemp("", "iolab-perf-")
	if err != nil {
		return nil, err
	}
	ctl, ack := filepath.Join(dir, "ctl"), filepath.Join(dir, "ack")
	for _, f := range []string{ctl, ack} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("profile.perf: %w", err)
		}
	}
	list := make([]string, len(pids))
	for i, p := range pids {
		list[i] = strconv.Itoa(p)
	}
	c := &perfCapture{dir: dir, exited: make(chan struct{})}
	c.cmd = exec.Command("perf", "record", "-q", "-g", "-F", strconv.Itoa(perfFrequency), "-D", "-1",
		"--control", "fifo:"+ctl+","+ack, "-p", strings.Join(list, ","), "-o", filepath.Join(dir, "perf.data"))
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // no perf left attached if iolab dies
	if err := procgroup.Start(c.cmd); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("profile.perf: %w", err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.exited) }()
	if err := c.enable(ctl, ack); err != nil {
		_ = c.cmd.Process.Kill()
		<-c.exited
		os.RemoveAll(dir)
		return nil, fmt.Errorf("profile.perf: perf record did not start recording: %v: %s", err, firstLine(c.out.Bytes()))
	}
	return c, nil
}

// enable tells perf to start sampling and waits for its acknowledgement.
// Both FIFOs are opened read-write, which never blocks, so a perf that
// dies before it opens them cannot hang the open.
func (c *perfCapture) enable(ctlPath, ackPath string) error {
	ctl, err := os.OpenFile(ctlPath, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer ctl.Close()
	ack, err := os.OpenFile(ackPath, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer ack.Close()
	if _, err := ctl.WriteString("enable\n"); err != nil {
		return err
	}
	got := make(chan error, 1)
	go func() {
		buf := make([]byte, 16)
		_, err := ack.Read(buf)
		got <- err
	}()
	select {
	case err := <-got:
		return err
	case <-c.exited:
		return fmt.Errorf("perf exited (%v)", c.err)
	case <-time.After(perfStart):
		_ = ack.SetReadDeadline(time.Now()) // ends the read
		return fmt.Errorf("no acknowledgement after %v", perfStart)
	}
}

func (c *perfCapture) Stop() ([]byte, error) {
	defer os.RemoveAll(c.dir)
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	<-c.exited
	if c.err != nil && !isInterrupt(c.err) {
		return nil, fmt.Errorf("profile.perf: perf record: %v: %s", c.err, firstLine(c.out.Bytes()))
	}
	// Streamed: an hour's script is gigabytes of text.
	script := exec.Command("perf", "script", "-F", "comm,pid,tid,period,ip,sym,dso", "-i", filepath.Join(c.dir, "perf.data"))
	out, err := script.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("profile.perf: perf script: %w", err)
	}
	if err := script.Start(); err != nil {
		return nil, fmt.Errorf("profile.perf: perf script: %w", err)
	}
	p, perr := ParsePerfScript(out)
	_, _ = io.Copy(io.Discard, out) // what a failed parse left, so perf script can end
	if err := script.Wait(); err != nil {
		return nil, fmt.Errorf("profile.perf: perf script: %v", err)
	}
	if perr != nil {
		return nil, perr
	}
	return encode(p)
}

func isInterrupt(err error) bool {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && (ws.Signaled() || ws.ExitStatus() == 130 || ws.ExitStatus() == 0) {
			return true
		}
	}
	return false
}

// ParsePerfScript turns perf script's samples (a header line, then one
// frame per line, innermost first, then a blank line), read as they come,
// into a pprof profile of sample counts.
func ParsePerfScript(r io.Reader) (*profile.Profile, error) {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     int64(time.Second / perfFrequency),
	}
	funcs := map[string]*profile.Function{}
	locs := map[string]*profile.Location{}
	location := func(name string) *profile.Location {
		if l, ok := locs[name]; ok {
			return l
		}
		f := &profile.Function{ID: uint64(len(funcs) + 1), Name: name, SystemName: name}
		funcs[name] = f
		l := &profile.Location{ID: uint64(len(locs) + 1), Line: []profile.Line{{Function: f}}}
		locs[name] = l
		p.Function = append(p.Function, f)
		p.Location = append(p.Location, l)
		return l
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var stack []*profile.Location
	inSample := false
	// One sample per distinct stack, counted: memory grows with the
	// stacks a server has, not with how long it was recorded.
	byStack := map[string]*profile.Sample{}
	var key strings.Builder
	flush := func() {
		if inSample && len(stack) > 0 {
			key.Reset()
			for _, l := range stack {
				key.WriteString(strconv.FormatUint(l.ID, 36))
				key.WriteByte(',')
			}
			if s, ok := byStack[key.String()]; ok {
				s.Value[0]++
			} else {
				s := &profile.Sample{Location: stack, Value: []int64{1}}
				byStack[key.String()] = s
				p.Sample = append(p.Sample, s)
			}
		}
		stack, inSample = nil, false
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] != ' ' && line[0] != '\t':
			flush()
			inSample = true
		default:
			// "	ffffffff8177539a elf_load+0x28a ([kernel.kallsyms])"
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			name := f[1]
			if i := strings.LastIndex(name, "+0x"); i > 0 {
				name = name[:i]
			}
			if name == "[unknown]" && len(f) > 2 {
				name = "[unknown] " + strings.Trim(f[len(f)-1], "()")
			}
			stack = append(stack, location(name))
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("profile.perf: perf script: %w", err)
	}
	if len(p.Sample) == 0 {
		return nil, errors.New("profile.perf: no samples (the server used no CPU while it was recorded)")
	}
	return p, p.CheckValid()
}

// Func is a function's share of a profile's samples.
type Func struct {
	Name string  `json:"name"`
	Flat float64 `json:"flat"` // in the function itself
	Cum  float64 `json:"cum"`  // in it and what it called
}

// Parse reads a stored profile.
func Parse(data []byte) (*profile.Profile, error) { return profile.ParseData(data) }

// Merge merges profiles of one kind (a variant's runs).
func Merge(ps []*profile.Profile) (*profile.Profile, error) { return profile.Merge(ps) }

// Shares gives every function's flat and cumulative share of the samples
// (the last sample value: CPU time in a Go profile), largest flat first.
func Shares(p *profile.Profile) []Func {
	if len(p.SampleType) == 0 {
		return nil
	}
	vi := len(p.SampleType) - 1
	flat, cum := map[string]float64{}, map[string]float64{}
	total := 0.0
	for _, s := range p.Sample {
		v := float64(s.Value[vi])
		total += v
		seen := map[string]bool{}
		leaf := true
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function == nil {
					continue
				}
				name := line.Function.Name
				// A goroutine stopped to be preempted samples in
				// runtime.asyncPreempt; the time is its caller's (it shows
				// most on a busy machine, where preemption is frequent).
				if leaf && name == "runtime.asyncPreempt" {
					continue
				}
				if leaf {
					flat[name] += v
					leaf = false
				}
				if !seen[name] {
					seen[name] = true
					cum[name] += v
				}
			}
		}
	}
	if total == 0 {
		return nil
	}
	out := make([]Func, 0, len(cum))
	for name, c := range cum {
		out = append(out, Func{Name: name, Flat: flat[name] / total, Cum: c / total})
	}
	SortShares(out, SortFlat)
	return out
}

// The orders of a profile's functions: by their own share (flat, as
// pprof's top), or by their share with what they call (cum, pprof's
// -cum: where a server's own code shows, though its time is spent in
// the syscalls it makes).
const (
	SortFlat = "flat"
	SortCum  = "cum"
)

// SortShares orders functions by flat or cum share, largest first; ties
// by the other share, then by name.
func SortShares(fs []Func, by string) {
	key := func(f Func) (float64, float64) {
		if by == SortCum {
			return f.Cum, f.Flat
		}
		return f.Flat, f.Cum
	}
	sort.Slice(fs, func(i, j int) bool {
		a1, a2 := key(fs[i])
		b1, b2 := key(fs[j])
		if a1 != b1 {
			return a1 > b1
		}
		if a2 != b2 {
			return a2 > b2
		}
		return fs[i].Name < fs[j].Name
	})
}

// Neighbours are the functions a focused function is called by, or calls,
// with the share of all samples that passed through each edge.
type Neighbours struct {
	Name    string  `json:"name"`
	Flat    float64 `json:"flat"`
	Cum     float64 `json:"cum"`
	Callers []Func  `json:"callers"` // Cum: the share through the caller
	Callees []Func  `json:"callees"` // Cum: the share through the callee
}

// Focus gives, for every function whose name matches re, its callers and
// callees (as pprof's peek does), largest first. A sample counts once
// per function and per edge, however deep its recursion.
func Focus(p *profile.Profile, re *regexp.Regexp) []Neighbours {
	if len(p.SampleType) == 0 {
		return nil
	}
	vi := len(p.SampleType) - 1
	type acc struct {
		flat, cum       float64
		callers, callee map[string]float64
	}
	byName := map[string]*acc{}
	total := 0.0
	for _, s := range p.Sample {
		v := float64(s.Value[vi])
		total += v
		var frames []string // leaf first
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function != nil && !(len(frames) == 0 && line.Function.Name == "runtime.asyncPreempt") {
					frames = append(frames, line.Function.Name)
				}
			}
		}
		seen := map[string]bool{}
		for i, name := range frames {
			if !re.MatchString(name) {
				continue
			}
			a := byName[name]
			if a == nil {
				a = &acc{callers: map[string]float64{}, callee: map[string]float64{}}
				byName[name] = a
			}
			if i == 0 {
				a.flat += v
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			a.cum += v
			if i+1 < len(frames) {
				a.callers[frames[i+1]] += v
			}
			if i > 0 {
				a.callee[frames[i-1]] += v
			}
		}
	}
	if total == 0 {
		return nil
	}
	list := func(m map[string]float64) []Func {
		out := make([]Func, 0, len(m))
		for name, v := range m {
			out = append(out, Func{Name: name, Cum: v / total})
		}
		SortShares(out, SortCum)
		return out
	}
	out := make([]Neighbours, 0, len(byName))
	for name, a := range byName {
		out = append(out, Neighbours{Name: name, Flat: a.flat / total, Cum: a.cum / total, Callers: list(a.callers), Callees: list(a.callee)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Cum != out[j].Cum {
			return out[i].Cum > out[j].Cum
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Change is a function whose share differs between two profiles.
type Change struct {
	Name     string  `json:"name"`
	BaseFlat float64 `json:"base_flat"`
	Flat     float64 `json:"flat"`
	BaseCum  float64 `json:"base_cum"`
	Cum      float64 `json:"cum"`
}

// Diff lists the functions whose share (flat or cum, by) changed from base
// to other, the largest change first.
func Diff(base, other []Func, by string) []Change {
	byName := map[string]*Change{}
	for _, f := range base {
		byName[f.Name] = &Change{Name: f.Name, BaseFlat: f.Flat, BaseCum: f.Cum}
	}
	for _, f := range other {
		c := byName[f.Name]
		if c == nil {
			c = &Change{Name: f.Name}
			byName[f.Name] = c
		}
		c.Flat, c.Cum = f.Flat, f.Cum
	}
	out := make([]Change, 0, len(byName))
	for _, c := range byName {
		out = append(out, *c)
	}
	abs := func(x float64) float64 {
		if x < 0 {
			return -x
		}
		return x
	}
	change := func(c Change) float64 {
		if by == SortCum {
			return abs(c.Cum - c.BaseCum)
		}
		return abs(c.Flat - c.BaseFlat)
	}
	sort.Slice(out, func(i, j int) bool {
		di, dj := change(out[i]), change(out[j])
		if di != dj {
			return di > dj
		}
		return out[i].Name < out[j].Name
	})
	return out
}
