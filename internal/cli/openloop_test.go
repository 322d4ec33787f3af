package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// wrk2's demonstration: a server that stalls once for a second under a
// paced load. The stalled request's service time is one slow operation in
// a hundred and more, so the service-time p99 stays low; the operations
// scheduled during the stall start late, and their response time — from
// their place on the schedule — shows the stall at p99, as a client that
// kept its schedule would have seen it. Both are stored, reported and
// compared; the late starts are counted.
func TestPacedResponseTimeShowsAStall(t *testing.T) {
	slow(t)
	t.Parallel()
	srv := s3Servers(t)[0]
	target, err := url.Parse(srv.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var gets atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1 && gets.Add(1) == 40 {
			time.Sleep(time.Second)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	db := filepath.Join(t.TempDir(), "x.db")
	// A process of its own: what iolab's threads waited for a CPU is its
	// own, not that of the tests running beside this one.
	cmd := exec.Command(buildIolab(t), "s3", "--endpoint", front.URL, "--bucket", "paced", "--create-bucket",
		"--access-key", testAccessKey, "--secret-key", testSecretKey, "--mix", "get=1", "--objects", "8", "--size", "4k",
		"--rate", "50", "--concurrency", "1", "--runtime", "4s", "--rounds", "1", "--warmup", "0", "--db", db, "--json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	out := string(stdout)
	var r struct {
		Runs []struct {
			Ops map[string]struct {
				Ops      int64
				Lat      struct{ P99 int64 }  `json:"lat_ns"`
				Response *struct{ P99 int64 } `json:"response_ns"`
			}
			Extra map[string]float64
		}
	}
	decodeInto(t, out, &r)
	if len(r.Runs) != 1 {
		t.Fatalf("%s", out)
	}
	get, extra := r.Runs[0].Ops["get"], r.Runs[0].Extra
	if gets.Load() < 40 || get.Response == nil {
		t.Fatalf("%d GETs, response %v: the stall never came, or no response time was kept: %s", gets.Load(), get.Response, out)
	}
	service, response := time.Duration(get.Lat.P99), time.Duration(get.Response.P99)
	if response < 500*time.Millisecond || service > response/3 {
		t.Errorf("a 1 s stall among %d GETs: response p99 %v, service p99 %v; want the stall in the response time only", get.Ops, response, service)
	}
	if extra["late_starts"] < 20 {
		t.Errorf("late starts %v: the GETs scheduled during the stall started late", extra["late_starts"])
	}
	// In fio's shape (--format fio) beside fio's lat_ns, the service
	// time, iolab.response_ns is the response time: its p99 the run's.
	fioOut, _, err := iolab(t, context.Background(), "show", "--db", db, "--format", "fio")
	var doc struct {
		Jobs []struct {
			Iolab struct {
				Response map[string]struct {
					N          int64
					Percentile map[string]int64
				} `json:"response_ns"`
			}
		}
	}
	decodeInto(t, fioOut, &doc)
	if err != nil || len(doc.Jobs) != 1 || doc.Jobs[0].Iolab.Response["get"].N != get.Ops ||
		doc.Jobs[0].Iolab.Response["get"].Percentile["99.000000"] != get.Response.P99 {
		t.Errorf("fio's shape (%v): response %+v, want %d GETs of p99 %v:\n%s", err, doc.Jobs, get.Ops, response, fioOut)
	}
	// The text report names both, the late starts' share, and who fell
	// behind (iolab used little CPU: the target).
	text, _, _ := iolab(t, context.Background(), "show", "--db", db)
	for _, want := range []string{"get lat p99", "get response p99", "late starts %", "get service time (from each actual start)",
		"get response time (from each intended start", "[late-starts] s3 get=1 4k c1: "} {
		if !strings.Contains(text, want) {
			t.Errorf("show lacks %q:\n%s", want, text)
		}
	}
}

// The same over HTTP: a download server that stalls once for a second
// under 50 paced downloads a second.
func TestPacedHTTPResponseTimeShowsAStall(t *testing.T) {
	slow(t)
	t.Parallel()
	var n atomic.Int64
	body := make([]byte, 4096)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 40 {
			time.Sleep(time.Second)
		}
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	out, stderr, err := iolab(t, context.Background(), "http", "download", "--url", srv.URL+"/obj/{{i}}", "--rate", "50", "--concurrency", "1",
		"--runtime", "4s", "--rounds", "1", "--warmup", "0", "--db", filepath.Join(t.TempDir(), "x.db"), "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var r struct {
		Runs []struct {
			Ops map[string]struct {
				Lat      struct{ P99 int64 }  `json:"lat_ns"`
				Response *struct{ P99 int64 } `json:"response_ns"`
			}
			Extra map[string]float64
		}
	}
	decodeInto(t, out, &r)
	if len(r.Runs) != 1 || r.Runs[0].Ops["download"].Response == nil {
		t.Fatalf("no response time of a paced download: %s", out)
	}
	d := r.Runs[0].Ops["download"]
	if service, response := time.Duration(d.Lat.P99), time.Duration(d.Response.P99); n.Load() < 40 || response < 500*time.Millisecond || service > response/3 {
		t.Errorf("%d downloads, a 1 s stall: response p99 %v, service p99 %v", n.Load(), response, service)
	}
	if r.Runs[0].Extra["late_starts"] < 20 {
		t.Errorf("late starts %v", r.Runs[0].Extra["late_starts"])
	}
	if _, _, err := iolab(t, context.Background(), "http", "download", "--url", srv.URL+"/obj/{{i}}", "--rate", "0.01", "--runtime", "1s",
		"--db", filepath.Join(t.TempDir(), "y.db")); err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "--rate") {
		t.Errorf("a rate slower than the run: %v", err)
	}
}

// The same growth against a real S3 server: versitygw behind a proxy that
// takes 20 ms per GET, 200 GETs/s asked of one worker. --max-concurrency
// adds workers (each with its own connection) and the schedule is kept.
func TestPacedS3AddsWorkersToKeepItsSchedule(t *testing.T) {
	t.Parallel()
	srv := s3Servers(t)[0]
	target, err := url.Parse(srv.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1 {
			time.Sleep(20 * time.Millisecond)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	out, stderr, err := iolab(t, context.Background(), "s3", "--endpoint", front.URL, "--bucket", "grow", "--create-bucket",
		"--access-key", testAccessKey, "--secret-key", testSecretKey, "--mix", "get=1", "--objects", "8", "--size", "4k",
		"--rate", "200", "--concurrency", "1", "--max-concurrency", "16", "--runtime", "1s", "--rounds", "1", "--warmup", "0",
		"--db", filepath.Join(t.TempDir(), "x.db"), "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var r struct {
		Runs []struct {
			OpsPerS float64 `json:"ops_per_s"`
			Extra   map[string]float64
		}
	}
	decodeInto(t, out, &r)
	if run := r.Runs[0]; run.Extra["workers_peak"] < 4 || run.OpsPerS < 170 || run.Extra["connections_opened"] < 4 {
		t.Errorf("%.0f GETs/s with %v workers, %v connections; want about 200/s from 4 or more", run.OpsPerS, run.Extra["workers_peak"], run.Extra["connections_opened"])
	}
}
