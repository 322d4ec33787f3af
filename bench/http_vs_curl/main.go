// Command http_vs_curl uploads and downloads one large body against a local
// HTTP server with iolab and with curl, in alternation, and prints the
// throughput ratio iolab/curl and iolab's peak RSS (issue 5: ratio >= 1.0,
// RSS < 64 MiB). CPU per GiB is given on two bases, each the same for both
// clients: their transfer windows (the process's CPU read from /proc every
// 5 ms: iolab's run by the start and duration its JSON gives, curl's the
// last time_total of its life), and their whole processes (getrusage at
// exit: start-up — iolab's store, its environment snapshots, its report —
// included). Beside them it prints the ceiling: the same
// transfer made with raw TCP by the bench itself, what the server and
// loopback carry when a client does nothing else.
//
// The server is the bench's own program run as a process of its own
// (-serve), as a real server is: in the bench's process it shared a Go
// runtime — its scheduler, its collector, the CPU sampler's wake-ups every
// 5 ms — with what measures the clients (downloads were 0.92x curl's
// there; docs/http.md has the sittings before and after).
//
//	go run ./bench/http_vs_curl [-size 1g] [-pairs 8] [-port N]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/iolab/iolab/bench/internal/harness"
	"github.com/iolab/iolab/internal/datagen"
	"github.com/iolab/iolab/internal/procgroup"
	"github.com/iolab/iolab/internal/units"
)

func main() { harness.Main(bench) }

func bench() {
	sizeFlag := flag.String("size", "1g", "body size")
	pairs := flag.Int("pairs", 8, "alternating pairs per direction (6 or more give a 95% CI of the median ratio)")
	port := flag.Int("port", 0, "the local server's loopback port (0: a free one)")
	serveAt := flag.String("serve", "", "be the server, on this loopback address (the bench starts itself so)")
	flag.Parse()
	size, err := units.ParseSize(*sizeFlag)
	if err != nil {
		harness.Fatal(err)
	}
	if *serveAt != "" {
		serve(size, *serveAt)
		return
	}
	work := harness.WorkDir("", "httpbench-")
	bin := harness.BuildIolab(work)
	// curl uploads a file of the same size; it is read once so it is in the
	// page cache, and iolab generates its body as it sends it.
	file := filepath.Join(work, "body.bin")
	f, _ := os.Create(file)
	_, _ = io.Copy(f, datagen.ContentOf(datagen.Pattern{}, 1).Body(0, size))
	f.Close()
	url := startServer(*sizeFlag, *port)
	fmt.Printf("one %s body per run, local server (PUT to discard, GET from memory), %d pairs\n\n", units.FormatSize(size), *pairs)
	fmt.Println("| direction | curl MiB/s | iolab MiB/s | ratio iolab/curl: median [95% CI] | CPU s/GiB curl: transfer [whole] | CPU s/GiB iolab: transfer [whole] | CPU ratio: transfer [whole] | iolab peak RSS MiB | ceiling MiB/s (raw TCP client) |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, dir := range []string{"upload", "download"} {
		var c, i, rss float64
		var cCPU, iCPU cpuTotal
		var ratios []float64 // of each pair
		for p := 0; p < *pairs; p++ {
			var pc, pi float64
			order := []bool{true, false}
			if p%2 == 1 {
				order = []bool{false, true}
			}
			for _, curlFirst := range order {
				if curlFirst {
					bps, cpu := runCurl(dir, url, file)
					c, pc = c+bps, bps
					cCPU.add(cpu)
				} else {
					bps, cpu, r := runIolab(bin, dir, url, size, work)
					i, pi = i+bps, bps
					iCPU.add(cpu)
					rss = max(rss, r)
				}
			}
			ratios = append(ratios, pi/pc)
		}
		gib := float64(*pairs) * float64(size) / (1 << 30)
		var top []float64
		for range 3 {
			top = append(top, ceiling(dir, url, size))
		}
		slices.Sort(top)
		fmt.Printf("| %s | %.0f | %.0f | %s | %.3f [%.3f] | %.3f [%.3f] | %.2fx [%.2fx] | %.1f | %.0f |\n", dir, c/float64(*pairs)/(1<<20), i/float64(*pairs)/(1<<20), harness.MedianRatio(ratios),
			cCPU.window/gib, cCPU.whole/gib, iCPU.window/gib, iCPU.whole/gib, iCPU.window/cCPU.window, iCPU.whole/cCPU.whole, rss/(1<<20), top[1]/(1<<20))
	}
}

// cpuInterval is how often a client's CPU is read while it runs.
const cpuInterval = 5 * time.Millisecond

// cpuTotal is CPU-seconds summed over runs: of their transfer windows and
// of their whole processes.
type cpuTotal struct{ window, whole float64 }

func (t *cpuTotal) add(c cpuTotal) { t.window, t.whole = t.window+c.window, t.whole+c.whole }

// startServer starts the bench's program as the server on port (0: a free
// one), a process that dies with the bench, and returns the body's URL.
func startServer(size string, port int) string {
	if port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			harness.Fatal(err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(os.Args[0], "-serve", addr, "-size", size)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := procgroup.Start(cmd); err != nil {
		harness.Fatalf("start the server: %v", err)
	}
	harness.AtExit(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for range 200 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr + "/obj/0"
		}
		time.Sleep(50 * time.Millisecond)
	}
	harness.Fatalf("the server on %s did not start", addr)
	return ""
}

// serve is the server, on addr until killed: PUT bodies are read and
// dropped, GET returns a generated body of the size.
func serve(size int64, addr string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		harness.Fatal(err)
	}
	content := datagen.ContentOf(datagen.Pattern{}, 2)
	harness.Fatal(http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusCreated)
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		_, _ = io.Copy(w, content.Body(0, size))
	})))
}

// ceiling is what the server and loopback carry when the client does
// nothing but the transfer: bytes per second of one request made with raw
// TCP from the bench itself (a request head, then 1 MiB writes of a buffer
// filled once, or 1 MiB reads thrown away). A client that reaches it is
// bound by the server and loopback, not by itself.
func ceiling(dir, url string, size int64) float64 {
	u := strings.TrimPrefix(url, "http://")
	host, path, _ := strings.Cut(u, "/")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		harness.Fatal(err)
	}
	defer conn.Close()
	buf := make([]byte, 1<<20)
	start := time.Now()
	if dir == "upload" {
		datagen.New(datagen.Pattern{}, 3).Fill(buf)
		fmt.Fprintf(conn, "PUT /%s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", path, host, size)
		for left := size; left > 0; left -= int64(len(buf)) {
			if _, err := conn.Write(buf[:min(left, int64(len(buf)))]); err != nil {
				harness.Fatal(err)
			}
		}
		_, _ = io.CopyBuffer(io.Discard, conn, buf)
	} else {
		fmt.Fprintf(conn, "GET /%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, host)
		if n, _ := io.CopyBuffer(io.Discard, conn, buf); n < size {
			harness.Fatalf("ceiling: %d of %d bytes", n, size)
		}
	}
	return float64(size) / time.Since(start).Seconds()
}

// runCurl returns curl's bytes per second and CPU-seconds.
func runCurl(dir, url, file string) (float64, cpuTotal) {
	args := []string{"-s", "-o", "/dev/null", "-w", "%{speed_download} %{time_total}"}
	if dir == "upload" {
		args = []string{"-s", "-o", "/dev/null", "-T", file, "-w", "%{speed_upload} %{time_total}"}
	}
	cmd := exec.Command("curl", append(args, url)...)
	out, cpu, err := harness.Measured(cmd, cpuInterval)
	end := time.Now()
	if err != nil {
		harness.Fatalf("curl: %v", err)
	}
	var bps, secs float64
	if _, err := fmt.Sscan(string(out), &bps, &secs); err != nil {
		harness.Fatalf("curl's -w output %q: %v", out, err)
	}
	return bps, cpuTotal{cpu.Between(end.Add(-time.Duration(secs*float64(time.Second))), end), harness.CPUSeconds(cmd)}
}

// runIolab returns iolab's bytes per second, CPU-seconds and peak RSS.
func runIolab(bin, dir, url string, size int64, work string) (bps float64, cpu cpuTotal, rss float64) {
	cmd := exec.Command(bin, "http", dir, "--url", url, "--size", strconv.FormatInt(size, 10), "--count", "1",
		"--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(work, "b.db"))
	out, sampled, err := harness.Measured(cmd, cpuInterval)
	if err != nil {
		harness.Fatalf("iolab: %v", err)
	}
	var r struct {
		Runs []struct {
			Start     time.Time `json:"start"`
			DurationS float64   `json:"duration_s"`
			BytesPerS float64   `json:"bytes_per_s"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Runs) != 1 {
		harness.Fatalf("iolab output: %v", err)
	}
	run := r.Runs[0]
	end := run.Start.Add(time.Duration(run.DurationS * float64(time.Second)))
	cpu = cpuTotal{sampled.Between(run.Start, end), harness.CPUSeconds(cmd)}
	return run.BytesPerS, cpu, float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) * 1024
}
