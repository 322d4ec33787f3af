// Command s3_go_floor measures what a Go client costs in wrk's own model,
// against wrk, on 1 KiB GETs from versitygw (which closes every
// connection): the floor under any S3 client written in Go on this
// machine, iolab's included (docs/s3.md). The Go client is no part of
// iolab: two locked threads, each an epoll loop over its raw non-blocking
// sockets, a connection per request, anonymous requests, no signing,
// timing or histograms — its epoll_wait made through the scheduler
// ("poller") or raw with a processor per loop ("raw"). Each runs -runtime,
// in rotating order, -pairs times; it prints each one's CPU per request
// (whole process for wrk; for the Go client, the bench's own getrusage
// over its loop) and context switches per request.
//
//	go run ./bench/s3_go_floor [-pairs 3] [-runtime 5s] [-port N]
//
// It needs versitygw (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)
// and wrk (apt-get install wrk).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/minio/minio-go/v7"
	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/bench/internal/harness"
	"github.com/iolab/iolab/internal/stats"
)

const (
	accessKey = "benchkey"
	secretKey = "benchsecret12345"
	bucket    = "floor"
	objects   = 32
	conns     = 32
	threads   = 2
)

func main() { harness.Main(bench) }

func bench() {
	pairs := flag.Int("pairs", 3, "rounds; each runs every client once, in rotating order")
	d := flag.Duration("runtime", 5*time.Second, "duration of each run")
	port := flag.Int("port", 0, "versitygw's loopback port (0: a free one)")
	flag.Parse()
	work := harness.WorkDir("", "s3floor-")
	endpoint, _, stop := harness.StartS3(work, "versitygw", *port, accessKey, secretKey)
	defer stop()
	mc := harness.MakeBucket(endpoint, accessKey, secretKey, bucket)
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},` +
		`"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::` + bucket + `/*"]}]}`
	if err := mc.SetBucketPolicy(context.Background(), bucket, policy); err != nil {
		harness.Fatalf("bucket policy: %v", err)
	}
	for i := range objects {
		body := bytes.Repeat([]byte{byte(i)}, 1024)
		if _, err := mc.PutObject(context.Background(), bucket, "k/"+strconv.Itoa(i), bytes.NewReader(body), 1024, minio.PutObjectOptions{}); err != nil {
			harness.Fatal(err)
		}
	}
	script := filepath.Join(work, "get.lua")
	if err := os.WriteFile(script, []byte(fmt.Sprintf("request = function()\n  return wrk.format(\"GET\", \"/%s/k/\" .. math.random(0, %d))\nend\n", bucket, objects-1)), 0o644); err != nil {
		harness.Fatal(err)
	}
	clients := []string{"wrk", "go-poller", "go-raw"}
	cpu := map[string][]float64{}
	cs := map[string][]float64{}
	fmt.Printf("1 KiB GETs from versitygw at %s, c%d on %d threads, %d rounds x %v\n\n", endpoint, conns, threads, *pairs, *d)
	for p := range *pairs {
		for k := range clients {
			client := clients[(p+k)%len(clients)]
			var ops, sec, switches float64
			if client == "wrk" {
				ops, sec, switches = runWrk(endpoint, script, *d)
			} else {
				ops, sec, switches = runLoop(endpoint, *d, client == "go-raw")
			}
			cpu[client] = append(cpu[client], 1e6*sec/ops)
			cs[client] = append(cs[client], switches/ops)
			fmt.Printf("  round %d %-9s %6.0f requests/s  %5.1f µs CPU and %.2f context switches a request\n", p+1, client, ops/d.Seconds(), 1e6*sec/ops, switches/ops)
		}
	}
	fmt.Println()
	fmt.Println("| client | CPU µs per request (median) | context switches per request | CPU over wrk's |")
	fmt.Println("|---|---|---|---|")
	w := stats.Summarize(cpu["wrk"]).Median
	for _, c := range clients {
		m := stats.Summarize(cpu[c]).Median
		fmt.Printf("| %s | %.1f | %.2f | %.2f |\n", c, m, stats.Summarize(cs[c]).Median, m/w)
	}
}

var wrkRate = regexp.MustCompile(`Requests/sec:\s*([0-9.]+)`)

// runWrk returns wrk's requests, CPU seconds (whole process) and context
// switches over a run of d.
func runWrk(endpoint, script string, d time.Duration) (ops, cpu, switches float64) {
	cmd := exec.Command("wrk", "-t"+strconv.Itoa(threads), "-c"+strconv.Itoa(conns), "-d"+d.String(), "-s", script, endpoint)
	out, err := harness.Output(cmd)
	if err != nil {
		harness.Fatalf("wrk: %v", err)
	}
	m := wrkRate.FindSubmatch(out)
	if m == nil || bytes.Contains(out, []byte("Non-2xx")) {
		harness.Fatalf("wrk: no rate, or error responses:\n%s", out)
	}
	rate, _ := strconv.ParseFloat(string(m[1]), 64)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return rate * d.Seconds(), harness.CPUSeconds(cmd), float64(ru.Nvcsw + ru.Nivcsw)
}

// runLoop runs the Go client for d and returns its requests, the CPU
// seconds and context switches this process spent meanwhile.
func runLoop(endpoint string, d time.Duration, raw bool) (ops, cpu, switches float64) {
	var port int
	if _, err := fmt.Sscanf(endpoint, "http://127.0.0.1:%d", &port); err != nil {
		harness.Fatalf("endpoint %s: %v", endpoint, err)
	}
	if raw {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads + 1))
	}
	reqs := make([][]byte, objects)
	for i := range reqs {
		reqs[i] = []byte(fmt.Sprintf("GET /%s/k/%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", bucket, i, port))
	}
	var done, failed atomic.Int64
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for t := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := loop{port: port, reqs: reqs, next: t, raw: raw}
			l.run(deadline, &done, &failed)
		}()
	}
	wg.Wait()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	if failed.Load() > 0 || done.Load() == 0 {
		harness.Fatalf("the Go client: %d answers, %d not 200 (a server that keeps connections is not what it measures)", done.Load(), failed.Load())
	}
	sec := func(r *syscall.Rusage) float64 { return time.Duration(r.Utime.Nano() + r.Stime.Nano()).Seconds() }
	return float64(done.Load()), sec(&ru1) - sec(&ru0), float64(ru1.Nvcsw + ru1.Nivcsw - ru0.Nvcsw - ru0.Nivcsw)
}

// loop is one thread's epoll loop over conns/threads connections.
type loop struct {
	port int
	reqs [][]byte
	next int
	raw  bool
	ep   int
	open map[int]*conn
}

// conn is a connection and what it has read of its answer.
type conn struct {
	fd   int
	sent bool
	head []byte // the answer's first bytes, for its status
}

func (l *loop) run(deadline time.Time, done, failed *atomic.Int64) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		harness.Fatal(err)
	}
	l.ep, l.open = ep, map[int]*conn{}
	defer func() {
		for fd := range l.open {
			unix.Close(fd)
		}
		unix.Close(ep)
	}()
	for range conns / threads {
		l.dial()
	}
	events := make([]unix.EpollEvent, 64)
	buf := make([]byte, 16<<10)
	for time.Now().Before(deadline) {
		wait := syscall.Syscall6
		if l.raw {
			wait = syscall.RawSyscall6
		}
		n, _, errno := wait(unix.SYS_EPOLL_WAIT, uintptr(ep), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 100, 0, 0)
		if errno != 0 {
			continue // EINTR
		}
		for _, ev := range events[:n] {
			c := l.open[int(ev.Fd)]
			if c == nil {
				continue
			}
			if !c.sent && ev.Events&unix.EPOLLOUT != 0 {
				l.next++
				r := l.reqs[l.next%len(l.reqs)]
				syscall.RawSyscall(unix.SYS_WRITE, uintptr(c.fd), uintptr(unsafe.Pointer(&r[0])), uintptr(len(r)))
				c.sent = true
			}
			if ev.Events&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLRDHUP|unix.EPOLLERR) == 0 {
				continue
			}
			for {
				m, _, errno := syscall.RawSyscall(unix.SYS_READ, uintptr(c.fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
				if errno == unix.EAGAIN {
					break
				}
				if errno == 0 && m > 0 {
					c.head = append(c.head, buf[:min(int(m), 16-len(c.head))]...)
					continue
				}
				// Closed by the server, its answer whole (or a reset).
				if bytes.HasPrefix(c.head, []byte("HTTP/1.1 200")) {
					done.Add(1)
				} else {
					failed.Add(1)
				}
				delete(l.open, c.fd)
				syscall.RawSyscall(unix.SYS_CLOSE, uintptr(c.fd), 0, 0)
				l.dial()
				break
			}
		}
	}
}

// dial opens a connection, registered for its first write and its answer.
func (l *loop) dial() {
	fd, _, errno := syscall.RawSyscall(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if errno != 0 {
		harness.Fatal(os.NewSyscallError("socket", errno))
	}
	one := int32(1)
	syscall.RawSyscall6(unix.SYS_SETSOCKOPT, fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, uintptr(unsafe.Pointer(&one)), 4, 0)
	sa := unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: [4]byte{127, 0, 0, 1}}
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	p[0], p[1] = byte(l.port>>8), byte(l.port)
	if _, _, errno := syscall.RawSyscall(unix.SYS_CONNECT, fd, uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa)); errno != 0 && errno != unix.EINPROGRESS {
		harness.Fatal(os.NewSyscallError("connect", errno))
	}
	l.open[int(fd)] = &conn{fd: int(fd)}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLET | unix.EPOLLRDHUP, Fd: int32(fd)}
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, int(fd), &ev); err != nil {
		harness.Fatal(err)
	}
}
