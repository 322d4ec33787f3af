package cli

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Who fell behind a paced load's schedule is named from what the
// generator measured of itself, each case by the process iolab really
// is (its threads' wait for a CPU is its own, not the tests' beside it),
// against a server of known capacity: 4 workers of 20 ms, 200/s.
//
//   - starved: iolab at nice 19 beside stress-ng, asking 10% of the
//     server's capacity: every late start is iolab's (a late start here
//     was counted only when a worker asked for its slot late: 0% late);
//   - capped: 400/s asked with at most 8 workers: every one at work;
//   - the target: 400/s asked with 16 workers: they all wait for it.
func TestWhoFellBehindIsNamed(t *testing.T) {
	slow(t)
	t.Parallel()
	need(t, "stress-ng")
	srv := capacityServer(t, 4, 20*time.Millisecond)
	bin := buildIolab(t)
	run := func(nice bool, args ...string) string {
		db := filepath.Join(t.TempDir(), "x.db")
		args = append([]string{"http", "download", "--url", srv.URL, "--runtime", "2s", "--rounds", "2", "--warmup", "0", "--db", db, "-q", "--json"}, args...)
		cmd := exec.Command(bin, args...)
		if nice {
			cmd = exec.Command("nice", append([]string{"-n", "19", bin}, args...)...)
		}
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr.String())
		}
		return out.String()
	}
	warned := func(out string) (codes []string, r jsonReport) {
		decodeInto(t, out, &r)
		for _, w := range r.Warnings {
			switch w.Code {
			case "generator-starved", "generator-saturated", "concurrency-cap", "late-starts":
				codes = append(codes, w.Code+": "+w.Message)
			}
		}
		return codes, r
	}
	for _, c := range []struct {
		name, code string
		args       []string
	}{
		{"capped", "concurrency-cap", []string{"--rate", "400", "--concurrency", "2", "--max-concurrency", "8"}},
		{"the target", "late-starts", []string{"--rate", "400", "--concurrency", "16"}},
	} {
		codes, r := warned(run(false, c.args...))
		if len(codes) != 1 || !strings.HasPrefix(codes[0], c.code+": ") {
			t.Errorf("%s: %q, want %s\n%+v", c.name, codes, c.code, r.Warnings)
		}
	}
	stress := exec.Command("stress-ng", "--cpu", "4", "--timeout", "5m")
	if err := startDying(stress); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stress.Process.Kill(); _ = stress.Wait() })
	codes, r := warned(run(true, "--rate", "20", "--concurrency", "4"))
	if len(codes) != 1 || !strings.HasPrefix(codes[0], "generator-starved: ") {
		t.Errorf("a starved generator: %q\n%+v", codes, r.Warnings)
	}
	if !hasWarning(r, "generator-delayed") {
		t.Errorf("a starved generator's runs are not flagged: %+v", r.Warnings)
	}
}
