package profiling

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParsePerfScript(t *testing.T) {
	text := `server  4242 10556.782342:     250000 cpu-clock:ppp: 
	ffffffff8177539a tls_encrypt+0x28a ([kernel.kallsyms])
	           1ab70 handle+0x10 (/srv/server)
	               0 [unknown] ([unknown])

server  4242 10556.783186:     250000 cpu-clock:ppp: 
	           1ab70 handle+0x10 (/srv/server)

server  4243 10556.783455:     250000 cpu-clock:ppp: 
	           1469e tls_encrypt+0x7e (/srv/server)
	           1ab70 handle+0x20 (/srv/server)
`
	p, err := ParsePerfScript(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	got := Shares(p)
	if len(got) != 3 || got[0].Name != "tls_encrypt" || !near(got[0].Flat, 2.0/3) || !near(got[0].Cum, 2.0/3) {
		t.Fatalf("shares %+v", got)
	}
	for _, f := range got {
		if f.Name == "handle" && (!near(f.Flat, 1.0/3) || !near(f.Cum, 1)) {
			t.Errorf("handle: %+v, want flat 1/3, cum 1", f)
		}
	}
	if _, err := ParsePerfScript(strings.NewReader("")); err == nil || !strings.Contains(err.Error(), "no samples") {
		t.Errorf("empty perf script: %v", err)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

//go:noinline
func hotLoop(d time.Duration) uint64 {
	x := uint64(1)
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := 0; i < 10000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

// A Go server's profile, taken in one-second windows across a run, names
// the function it spends its time in first; the windows cover the run.
func TestGoCaptureNamesTheHotFunction(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, err := StartGo(context.Background(), srv.URL+"/debug/pprof/profile")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	hotLoop(1500 * time.Millisecond) // longer than one window
	data, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if p.DurationNanos < int64(1500*time.Millisecond) {
		t.Errorf("profile covers %v, want the whole 1.5 s", time.Duration(p.DurationNanos))
	}
	top := Shares(p)
	if len(top) == 0 || !strings.HasSuffix(top[0].Name, "hotLoop") || top[0].Flat < 0.5 {
		t.Fatalf("top functions %+v", top[:min(len(top), 5)])
	}

	if _, err := StartGo(context.Background(), "ftp://x"); err == nil {
		t.Error("a non-HTTP URL was accepted")
	}
	bad, _ := StartGo(context.Background(), srv.URL+"/nothing")
	if _, err := bad.Stop(); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a URL that is no profile: %v", err)
	}
}

func TestDiff(t *testing.T) {
	base := []Func{{"a", 0.5, 0.6}, {"b", 0.3, 0.3}, {"gone", 0.2, 0.2}}
	other := []Func{{"a", 0.1, 0.2}, {"b", 0.3, 0.3}, {"tls", 0.6, 0.7}}
	d := Diff(base, other, SortFlat)
	if d[0].Name != "tls" || d[1].Name != "a" || d[len(d)-1].Name != "b" {
		t.Fatalf("diff %+v", d)
	}
}

// perf record of a running process names the function it spins in.
func TestPerfNamesTheHotFunction(t *testing.T) {
	if err := CheckPerf(); err != nil {
		t.Skip(err)
	}
	// A program built here: the test binary itself has no symbol table
	// (go test links with -s).
	bin := filepath.Join(t.TempDir(), "spin")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/spin").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	hot := exec.Command(bin)
	if err := hot.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { hot.Process.Kill(); hot.Wait() }()
	time.Sleep(200 * time.Millisecond)
	c, err := StartPerf([]int{hot.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	data, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	top := Shares(p)
	if len(top) == 0 || top[0].Name != "main.spin" || top[0].Flat < 0.5 {
		t.Fatalf("top functions %+v", top[:min(len(top), 5)])
	}
}

// A sample taken while a goroutine was being preempted counts for the
// function that was preempted.
func TestAsyncPreemptCountsForItsCaller(t *testing.T) {
	p, err := ParsePerfScript(strings.NewReader(`srv 1 1.0: 1 cpu-clock:
	1 runtime.asyncPreempt+0x1 (/srv)
	2 main.spin+0x2 (/srv)
	3 main.main+0x3 (/srv)

srv 1 1.1: 1 cpu-clock:
	2 main.spin+0x2 (/srv)
	3 main.main+0x3 (/srv)
`))
	if err != nil {
		t.Fatal(err)
	}
	top := Shares(p)
	if top[0].Name != "main.spin" || top[0].Flat != 1 {
		t.Fatalf("shares %+v", top)
	}
	for _, f := range top {
		if f.Name == "runtime.asyncPreempt" {
			t.Errorf("runtime.asyncPreempt listed: %+v", top)
		}
	}
}

// Focus names who calls a function and what it calls, each edge with the
// share of all samples through it; Diff by cum ranks by the change of
// that share.
func TestFocusAndCumulativeDiff(t *testing.T) {
	text := `srv 1 1.0: 1 cpu-clock:
	1 write+0x1 (/srv)
	2 upload+0x1 (/srv)
	3 serve+0x1 (/srv)

srv 1 1.1: 1 cpu-clock:
	4 checksum+0x1 (/srv)
	2 upload+0x1 (/srv)
	3 serve+0x1 (/srv)

srv 1 1.2: 1 cpu-clock:
	2 upload+0x1 (/srv)
	5 login+0x1 (/srv)
	3 serve+0x1 (/srv)

srv 1 1.3: 1 cpu-clock:
	6 parse+0x1 (/srv)
	3 serve+0x1 (/srv)
`
	p, err := ParsePerfScript(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	fs := Focus(p, regexp.MustCompile(`^upload$`))
	if len(fs) != 1 || fs[0].Name != "upload" || !near(fs[0].Cum, 0.75) || !near(fs[0].Flat, 0.25) {
		t.Fatalf("focus: %+v", fs)
	}
	callers := map[string]float64{}
	for _, c := range fs[0].Callers {
		callers[c.Name] = c.Cum
	}
	callees := map[string]float64{}
	for _, c := range fs[0].Callees {
		callees[c.Name] = c.Cum
	}
	if len(callers) != 2 || !near(callers["serve"], 0.5) || !near(callers["login"], 0.25) ||
		len(callees) != 2 || !near(callees["write"], 0.25) || !near(callees["checksum"], 0.25) {
		t.Errorf("callers %v, callees %v", callers, callees)
	}
	shares := Shares(p)
	SortShares(shares, SortCum)
	if shares[0].Name != "serve" || !near(shares[0].Cum, 1) || shares[1].Name != "upload" {
		t.Errorf("by cum: %+v", shares[:2])
	}
	other := []Func{{Name: "serve", Cum: 1}, {Name: "upload", Cum: 0.25, Flat: 0.25}, {Name: "parse", Cum: 0.75, Flat: 0.75}}
	if d := Diff(shares, other, SortCum); d[0].Name != "upload" && d[0].Name != "parse" || !near(abs(d[0].Cum-d[0].BaseCum), 0.5) {
		t.Errorf("diff by cum: %+v", d[:2])
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
