package segment

import (
	"strings"
	"testing"
	"time"
)

// The shares of N segments add up to the whole, and their first units
// tile it without overlap.
func TestShares(t *testing.T) {
	t.Parallel()
	for _, total := range []int{0, 1, 3, 7, 16, 100} {
		for n := 1; n <= 9; n++ {
			sum, next := 0, 0
			for i := range n {
				s := Segment{i, n}
				if s.First(total) != next {
					t.Fatalf("%d over %d: segment %d starts at %d, want %d", total, n, i, s.First(total), next)
				}
				sum += s.Share(total)
				next += s.Share(total)
			}
			if sum != total {
				t.Fatalf("%d over %d: shares add up to %d", total, n, sum)
			}
		}
	}
	if (Segment{1, 4}).Rate(100) != 25 || Whole.Rate(100) != 100 {
		t.Fatal("rates")
	}
}

func TestParse(t *testing.T) {
	if s, err := Parse("2/5"); err != nil || s != (Segment{2, 5}) || s.String() != "2/5" {
		t.Fatalf("%v %v", s, err)
	}
	for _, bad := range []string{"5/5", "-1/2", "1", "a/b", "0/0", "1/20000"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	t.Setenv(EnvIndex, "3")
	t.Setenv(EnvCount, "4")
	if s, _, err := FromEnv(); err != nil || s != (Segment{3, 4}) {
		t.Fatalf("from the environment: %v %v", s, err)
	}
	t.Setenv(EnvCount, "")
	if s, _, err := FromEnv(); err != nil || s != Whole {
		t.Fatalf("another Indexed Job (index, no count): %v %v", s, err)
	}
	t.Setenv(EnvIndex, "")
	t.Setenv(EnvCount, "4")
	if _, _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), "is not set") {
		t.Fatalf("count without index: %v", err)
	}
}

// The ranks mpirun, mpiexec and srun give their tasks are segments, the
// job (and step) naming the load; Slurm's batch script, no step, and one
// task of one, run whole.
func TestSegmentFromALauncher(t *testing.T) {
	for _, l := range Launchers {
		for _, k := range []string{l.Index, l.Count, l.Job, l.Step} {
			if k != "" {
				t.Setenv(k, "")
			}
		}
	}
	t.Setenv(EnvIndex, "")
	t.Setenv(EnvCount, "")
	for _, c := range []struct {
		env  map[string]string
		want Segment
		grp  string
	}{
		{map[string]string{"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_MCA_ess_base_jobid": "423428097"}, Segment{2, 4}, "mpi-423428097"},
		{map[string]string{"PMI_RANK": "1", "PMI_SIZE": "3"}, Segment{1, 3}, ""},
		{map[string]string{"SLURM_PROCID": "5", "SLURM_STEP_NUM_TASKS": "8", "SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0"}, Segment{5, 8}, "slurm-77.0"},
		{map[string]string{"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "8", "SLURM_JOB_ID": "77"}, Whole, ""}, // a batch script
		{map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "1", "OMPI_MCA_ess_base_jobid": "9"}, Whole, ""},
	} {
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		s, grp, err := FromEnv()
		if err != nil || s != c.want || grp != c.grp {
			t.Errorf("%v: %v %q %v, want %v %q", c.env, s, grp, err, c.want, c.grp)
		}
		for k := range c.env {
			t.Setenv(k, "")
		}
	}
	t.Setenv("OMPI_COMM_WORLD_RANK", "4")
	t.Setenv("OMPI_COMM_WORLD_SIZE", "4")
	if _, _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), "mpirun (Open MPI): OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE") {
		t.Errorf("a rank past the size: %v", err)
	}
}

func TestParseStart(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC)
	if at, err := ParseStart("+30s", now); err != nil || !at.Equal(now.Add(30*time.Second)) {
		t.Fatalf("+30s: %v %v", at, err)
	}
	if at, err := ParseStart("2026-11-23T18:05:00Z", now); err != nil || at.Sub(now) != 5*time.Minute {
		t.Fatalf("RFC 3339: %v %v", at, err)
	}
	for _, bad := range []string{"soon", "+-3s", "18:05"} {
		if _, err := ParseStart(bad, now); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Any --segment and --start-at text is accepted as a segment of a load and
// an instant, or refused in one line; never a panic, never I outside 0..N-1.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{"0/2", "1/4", " 3 / 4 ", "-1/2", "2/2", "1/0", "9999999999999999999/1", "+30s", "2026-11-23T18:00:00Z", "+-1s", "/"} {
		f.Add(seed)
	}
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, v string) {
		s, err := Parse(v)
		switch {
		case err != nil && strings.Contains(err.Error(), "\n"):
			t.Fatalf("%q: a message on several lines: %q", v, err)
		case err == nil && (s.N < 1 || s.I < 0 || s.I >= s.N || s.Share(s.N) != 1 || s.First(s.N) != s.I):
			t.Fatalf("%q: accepted as %+v", v, s)
		}
		if _, err := ParseStart(v, now); err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("%q: a message on several lines: %q", v, err)
		}
	})
}

// Every segment of a load too small to share says so, naming the first
// left with nothing — not only that one, which would leave the others
// waiting at a barrier for it.
func TestStarvedIsTheSameInEverySegment(t *testing.T) {
	t.Parallel()
	for i := range 3 {
		s := Segment{I: i, N: 3}
		if got, ok := s.Starved(2); !ok || got != (Segment{I: 2, N: 3}) {
			t.Errorf("%s of 2: %v %v", s, got, ok)
		}
		if _, ok := s.Starved(3); ok {
			t.Errorf("%s of 3: starved", s)
		}
	}
	if _, ok := Whole.Starved(0); ok {
		t.Error("the whole load starved")
	}
}

func TestIndex(t *testing.T) {
	for s, want := range map[string]int{"0/4": 0, "3/4": 3, "": -1, "4/4": -1, "x": -1} {
		if got := Index(s); got != want {
			t.Errorf("Index(%q) = %d, want %d", s, got, want)
		}
	}
}

// Runs of one merged run started together or not: within a second (or
// 5% of the shortest run), one load's; beyond, not.
func TestApart(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	for _, c := range []struct {
		starts   []time.Time
		shortest time.Duration
		bad      bool
	}{
		{[]time.Time{t0, t0.Add(900 * time.Millisecond)}, 300 * time.Millisecond, false},
		{[]time.Time{t0.Add(1100 * time.Millisecond), t0}, 300 * time.Millisecond, true},
		{[]time.Time{t0, t0.Add(2 * time.Second)}, time.Minute, false}, // 5% of a minute: 3 s
		{[]time.Time{t0, t0.Add(4 * time.Second), t0.Add(time.Second)}, time.Minute, true},
		{nil, time.Second, false},
	} {
		if _, bad := Apart(c.starts, c.shortest); bad != c.bad {
			t.Errorf("%v over runs of %v: apart %v, want %v", c.starts, c.shortest, bad, c.bad)
		}
	}
}
