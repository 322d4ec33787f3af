// Package segment is a process's share of a load that N processes run
// together (on N hosts, as a Kubernetes Indexed Job runs them): segment I
// of N takes its part of the concurrency, the jobs and the rate, writes
// names no other segment writes, and all start at one agreed instant.
// The segments meet in the store, not over a protocol of their own: each
// stores its runs, and show merges them.
package segment

import (
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"time"
)

// Segment is segment I (from 0) of N.
type Segment struct {
	I, N int
}

// Whole is the load run by one process.
var Whole = Segment{0, 1}

// Of says whether s splits the load.
func (s Segment) Split() bool { return s.N > 1 }

func (s Segment) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// Parse reads I/N (0 <= I < N).
func Parse(v string) (Segment, error) {
	i, n, ok := strings.Cut(v, "/")
	a, err1 := strconv.Atoi(strings.TrimSpace(i))
	b, err2 := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err1 != nil || err2 != nil || b < 1 || b > 10000 || a < 0 || a >= b {
		return Segment{}, fmt.Errorf("%q: want I/N with 0 <= I < N <= 10000, e.g. 0/4", v)
	}
	return Segment{a, b}, nil
}

// Index is I of "I/N", -1 when s is not one: the order segments are
// listed in.
func Index(s string) int {
	seg, err := Parse(s)
	if err != nil {
		return -1
	}
	return seg.I
}

// Environment variables a Kubernetes Indexed Job gives each pod (the
// index), and the count iolab's manifest adds.
const (
	EnvIndex = "JOB_COMPLETION_INDEX"
	EnvCount = "IOLAB_SEGMENTS"
)

// FromEnv is the segment of a process its launcher started as one of N,
// and the name of the load its launcher's job gives the segments ("" if
// none): a pod of an Indexed Job — JOB_COMPLETION_INDEX of IOLAB_SEGMENTS
// (which iolab's manifest sets; Whole without it, so iolab in another
// Indexed Job runs its load whole) — or a task of mpirun or srun, from
// their ranks (Launchers). One of one is Whole.
func FromEnv() (Segment, string, error) {
	idx, count := os.Getenv(EnvIndex), os.Getenv(EnvCount)
	if count != "" {
		if idx == "" {
			return Segment{}, "", fmt.Errorf("%s=%s but %s is not set: run it as an Indexed Job (iolab k8s job), or give --segment I/N", EnvCount, count, EnvIndex)
		}
		s, err := Parse(idx + "/" + count)
		if err != nil {
			return Segment{}, "", fmt.Errorf("%s/%s: %w", EnvIndex, EnvCount, err)
		}
		return s, "", nil
	}
	for _, l := range Launchers {
		idx, count := os.Getenv(l.Index), os.Getenv(l.Count)
		if idx == "" || count == "" || (l.Step != "" && os.Getenv(l.Step) == "") {
			continue
		}
		s, err := Parse(idx + "/" + count)
		if err != nil {
			return Segment{}, "", fmt.Errorf("%s: %s/%s: %w", l.Name, l.Index, l.Count, err)
		}
		if s.N == 1 {
			return Whole, "", nil
		}
		grp := ""
		if job := os.Getenv(l.Job); job != "" {
			grp = l.Prefix + job
			if l.Step != "" {
				grp += "." + os.Getenv(l.Step)
			}
		}
		return s, grp, nil
	}
	return Whole, "", nil
}

// A Launcher starts N copies of a command and tells each its rank: the
// segment it runs. Its job's ID (and step) names the load they share.
type Launcher struct {
	Name, Index, Count string
	// Job names the job; Step, when set, must be set for the copies to be
	// a launch of N (Slurm's batch script sees the job's task count, but
	// is no step of them) and is part of the load's name.
	Job, Step, Prefix string
}

// Launchers are the launchers whose environment gives a segment: Open
// MPI's mpirun, PMI (MPICH's mpiexec, srun --mpi=pmi2), and Slurm's srun.
var Launchers = []Launcher{
	{Name: "mpirun (Open MPI)", Index: "OMPI_COMM_WORLD_RANK", Count: "OMPI_COMM_WORLD_SIZE", Job: "OMPI_MCA_ess_base_jobid", Prefix: "mpi-"},
	{Name: "PMI (mpiexec)", Index: "PMI_RANK", Count: "PMI_SIZE"}, // no job ID it is known to give: --segment-group names the load
	{Name: "srun (Slurm)", Index: "SLURM_PROCID", Count: "SLURM_STEP_NUM_TASKS", Job: "SLURM_JOB_ID", Step: "SLURM_STEP_ID", Prefix: "slurm-"},
}

// Share is the segment's part of total: total/N, the first total%N
// segments one more, so the N shares add up to total exactly. A share
// may be 0 when total < N.
func (s Segment) Share(total int) int {
	if !s.Split() {
		return total
	}
	n := total / s.N
	if s.I < total%s.N {
		n++
	}
	return n
}

// Starved says whether some segment of the load gets none of total (total
// < N), and the first such: every segment asks, not only the starved one,
// so all refuse the load at once rather than wait at a barrier for one
// that never comes.
func (s Segment) Starved(total int) (Segment, bool) {
	if !s.Split() || total >= s.N {
		return Segment{}, false
	}
	return Segment{I: max(total, 0), N: s.N}, true
}

// StarvedError is a load of which some segment would get none of a flag's
// total (the first such, At): every segment refuses it, before any
// barrier; iolab k8s job refuses the Job so.
type StarvedError struct {
	Flag  string // --concurrency
	Total int
	At    Segment
	// Without is what segment At is left without ("no worker", "nothing
	// to do"); Enough, that a total of N (one each) would do.
	Without string
	Enough  bool
}

func (e *StarvedError) Error() string {
	msg := fmt.Sprintf("%s %d over %d segments leaves segment %s %s", e.Flag, e.Total, e.At.N, e.At, e.Without)
	if e.Enough {
		msg += fmt.Sprintf("; give at least %d", e.At.N)
	}
	return msg
}

// Starve is the StarvedError of flag's total, or nil when every segment
// gets some of it.
func (s Segment) Starve(flag string, total int, without string, enough bool) error {
	at, ok := s.Starved(total)
	if !ok {
		return nil
	}
	return &StarvedError{Flag: flag, Total: total, At: at, Without: without, Enough: enough}
}

// First is the index of the segment's first unit of total (its jobs are
// First .. First+Share-1), so names built from it never collide.
func (s Segment) First(total int) int {
	first := 0
	for i := range s.I {
		first += Segment{i, s.N}.Share(total)
	}
	return first
}

// Rate is the segment's part of a rate: rate/N.
func (s Segment) Rate(rate float64) float64 {
	if !s.Split() {
		return rate
	}
	return rate / float64(s.N)
}

// ParseStart reads --start-at: an RFC 3339 time (2026-11-23T18:00:00Z), or
// +DURATION from now (+30s).
func ParseStart(v string, now time.Time) (time.Time, error) {
	if d, ok := strings.CutPrefix(v, "+"); ok {
		dur, err := time.ParseDuration(d)
		if err != nil || dur < 0 {
			return time.Time{}, fmt.Errorf("%q: want an RFC 3339 time (2026-11-23T18:00:00Z) or +DURATION (+30s)", v)
		}
		return now.Add(dur), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want an RFC 3339 time (2026-11-23T18:00:00Z) or +DURATION (+30s)", v)
	}
	return t, nil
}

// GroupSeed is the seed of a load's segments, when none was given: the
// same in each, so all run the cells in one order.
func GroupSeed(grp string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(grp))
	return h.Sum64() >> 1
}

// AlignSlack is how far apart the segments' runs of one merged run may
// start, beyond AlignShare of their duration: the barriers start them
// together (0.4 s or 1 s after the last arrives, hosts' clocks in step),
// so more means a run that did not meet the others — redone alone after
// its runner died, or started past a barrier — and its seconds are not
// the load's.
const (
	AlignSlack = time.Second
	AlignShare = 0.05
)

// Apart is how far apart the earliest and the latest of the segments'
// runs of one merged run started, and whether that is more than one
// load's runs may be (AlignSlack, or AlignShare of the shortest run):
// the one rule the search that runs a load and the report that merges it
// both judge by.
func Apart(starts []time.Time, shortest time.Duration) (time.Duration, bool) {
	if len(starts) == 0 {
		return 0, false
	}
	first, last := starts[0], starts[0]
	for _, s := range starts[1:] {
		if s.Before(first) {
			first = s
		}
		if s.After(last) {
			last = s
		}
	}
	apart := last.Sub(first)
	return apart, apart > max(AlignSlack, time.Duration(AlignShare*float64(shortest)))
}
