package harness

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times; it is 100
// on every Linux architecture Go supports.
const clockTicks = 100

// CPUSampler reads a running process's CPU time (user + system) every
// interval, so that the CPU a server spent during any window — a reference
// tool's run, or the measured part of an iolab run — can be read after it.
type CPUSampler struct {
	pid  int
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	samples []cpuSample
}

type cpuSample struct {
	at  time.Time
	cpu float64 // seconds
}

// SampleCPU starts sampling process pid until Stop.
func SampleCPU(pid int, interval time.Duration) *CPUSampler {
	s := &CPUSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *CPUSampler) sample() {
	cpu, err := processCPU(s.pid)
	if err != nil {
		return
	}
	s.add(time.Now(), cpu)
}

// add records that the process had spent cpu seconds at t.
func (s *CPUSampler) add(t time.Time, cpu float64) {
	s.mu.Lock()
	s.samples = append(s.samples, cpuSample{t, cpu})
	s.mu.Unlock()
}

// Stop ends sampling.
func (s *CPUSampler) Stop() {
	close(s.stop)
	<-s.done
}

// Between returns the CPU seconds the process spent from t0 to t1,
// interpolating linearly between the samples around each end.
func (s *CPUSampler) Between(t0, t1 time.Time) float64 {
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at(t1) - s.at(t0)
}

func (s *CPUSampler) at(t time.Time) float64 {
	xs := s.samples
	if len(xs) == 0 || !t.After(xs[0].at) {
		if len(xs) == 0 {
			return 0
		}
		return xs[0].cpu
	}
	for i := 1; i < len(xs); i++ {
		if !t.After(xs[i].at) {
			a, b := xs[i-1], xs[i]
			f := float64(t.Sub(a.at)) / float64(b.at.Sub(a.at))
			return a.cpu + f*(b.cpu-a.cpu)
		}
	}
	return xs[len(xs)-1].cpu
}

// processCPU reads utime + stime of pid from /proc/PID/stat.
func processCPU(pid int) (float64, error) {
	st, err := readStat(pid)
	return st.self, err
}

// procStat is what /proc/PID/stat says of a process: its parent, its CPU
// seconds (utime + stime) and those of the children it waited for (cutime
// + cstime).
type procStat struct {
	ppid           int
	self, children float64
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) may hold spaces; fields after its closing
	// parenthesis are fixed: state is field 3, ppid 4, utime 14, stime 15,
	// cutime 16, cstime 17.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	var t [4]float64
	for k := range t {
		if t[k], err = strconv.ParseFloat(f[11+k], 64); err != nil {
			return procStat{}, fmt.Errorf("/proc/%d/stat: bad CPU times", pid)
		}
	}
	ppid, _ := strconv.Atoi(f[1])
	return procStat{ppid: ppid, self: (t[0] + t[1]) / clockTicks, children: (t[2] + t[3]) / clockTicks}, nil
}
