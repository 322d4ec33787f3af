package suggest

import "testing"

func TestClosest(t *testing.T) {
	t.Parallel()
	names := []string{"iodepth", "numjobs", "rw", "workloads", "warmup", "rounds"}
	for in, want := range map[string]string{"iodpeth": "iodepth", "numjob": "numjobs", "worklods": "workloads", "rouns": "rounds",
		"wr": "", "zzzz": "", "warmups": "warmup", "": ""} {
		if got := Closest(in, names); got != want {
			t.Errorf("Closest(%q) = %q, want %q", in, got, want)
		}
	}
}
