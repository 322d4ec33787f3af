package s3

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/rawconn"
)

// The event loop is the workers' way to a plain-HTTP server for GET, PUT,
// HEAD and DELETE, as wrk's client is built: a loop per CPU, each waiting
// in epoll_wait itself — a raw system call that keeps its P, as all its
// system calls are — for the non-blocking sockets of the workers it
// drives, one request in flight on each. A goroutine per worker parks on
// Go's network poller instead, and each small request then costs a park,
// a wake-up of another thread and the scheduler's hand-off: for 1 KiB
// objects at 32 in flight, a third more CPU than wrk (docs/s3.md). The
// loops are not locked to their threads: the runtime's monitor preempts a
// goroutine that runs 10 ms, and a locked one is handed back to its
// thread through two futex calls each time. The loop does what the
// workers' own connections do — the same signed requests, timing,
// --timeout, --retries and their backoff, --check-reads, keep-alive or a
// connection per request, the run's hard stop — and a job it cannot run
// (TLS, a mix with LIST, multipart or COPY, paced runs) runs as before
// (loopable says why).

// loopable says why a job's workers cannot run in event loops, or nil.
func (o *Options) loopable() error {
	for _, w := range o.Mix {
		switch w.Op {
		case metrics.Get, metrics.Put, metrics.Head:
		case metrics.Delete:
			if o.DeleteBatch > 1 {
				return fmt.Errorf("--delete-batch %d sends DeleteObjects through minio-go", o.DeleteBatch)
			}
		default:
			return fmt.Errorf("--mix has %s, which goes through minio-go", w.Op)
		}
	}
	switch {
	case o.Client == ClientSDK:
		return fmt.Errorf("--client sdk sends every request through minio-go")
	case o.Rate > 0 || o.PacedLater:
		return fmt.Errorf("a paced run (--rate, a curve's or a search's loads) keeps its schedule per worker")
	case o.MaxConcurrency > o.Concurrency:
		return fmt.Errorf("--max-concurrency adds workers during the run")
	case o.Lookup == "dns":
		return fmt.Errorf("--lookup dns addresses the bucket by name")
	case o.pool() < o.Concurrency:
		return fmt.Errorf("--pool %d shares connections between workers", o.Pool)
	}
	for _, ep := range o.endpoints() {
		if u, err := url.Parse(ep); err != nil || u.Scheme != "http" {
			return fmt.Errorf("--endpoint %s: TLS goes through Go's crypto/tls on each worker's own connection", ep)
		}
	}
	if v, err := credentialsOf(o).GetWithContext(nil); err != nil || v.AccessKeyID == "" {
		return fmt.Errorf("anonymous requests go through minio-go")
	}
	return nil
}

// loops returns the run's event loops, each with the workers it drives
// (worker i in loop i % len), or nil when the job does not run in them.
// They get a P each and one is left for the rest of the process.
func (s *S3) loops(workers []*worker) ([]*loopGroup, func(), error) {
	if (s.opts.Client != ClientAuto && s.opts.Client != ClientLoop) || s.opts.loopable() != nil {
		return nil, func() {}, nil // Validate refused --client loop where it cannot be
	}
	targets := map[*client]*loopTarget{}
	for _, c := range s.clients {
		t, err := resolveTarget(s.ctx, c)
		if err != nil {
			return nil, nil, err
		}
		targets[c] = t
	}
	n := min(len(workers), driver.CPUs())
	groups := make([]*loopGroup, n)
	for g := range groups {
		groups[g] = &loopGroup{loop: &eventLoop{s: s}, done: make(chan struct{})}
	}
	for i, w := range workers {
		sig, _, ok := newSigner(w.c, &s.opts)
		if !ok {
			return nil, nil, fmt.Errorf("the credentials went away between preflight and the run")
		}
		g := groups[i%n]
		g.loop.conns = append(g.loop.conns, &loopConn{w: w, target: targets[w.c], sig: sig, fd: -1, slot: int32(len(g.loop.conns))})
		g.ready.Add(1)
	}
	return groups, driver.HoldProcs(n), nil
}

// loopTarget is an endpoint's address, resolved when the run starts.
type loopTarget struct {
	client *client
	family int
	raw    unsafe.Pointer // its sockaddr, as connect(2) takes it
	rawLen uintptr
}

// resolveTarget finds c's endpoint's address as a connection to it does:
// the one Go's dialer reaches first (of a name's several), else the first.
func resolveTarget(ctx context.Context, c *client) (*loopTarget, error) {
	u, err := url.Parse(c.endpoint)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		port = 80
	}
	addr := &net.TCPAddr{Port: port}
	if ip := net.ParseIP(u.Hostname()); ip != nil {
		addr.IP = ip
	} else if conn, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp", u.Host); err == nil {
		addr = conn.RemoteAddr().(*net.TCPAddr)
		conn.Close()
	} else if ips, err := net.DefaultResolver.LookupIPAddr(ctx, u.Hostname()); err == nil && len(ips) > 0 {
		addr.IP, addr.Zone = ips[0].IP, ips[0].Zone // it fails as it does, each operation counted
	} else {
		return nil, fmt.Errorf("--endpoint %s: %v", c.endpoint, err)
	}
	sa, family, err := rawconn.Sockaddr(addr)
	if err != nil {
		return nil, fmt.Errorf("--endpoint %s: %w", c.endpoint, err)
	}
	t := &loopTarget{client: c, family: family}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		raw := &unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: sa.Addr}
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&raw.Port))[:], uint16(sa.Port))
		t.raw, t.rawLen = unsafe.Pointer(raw), unsafe.Sizeof(*raw)
	case *unix.SockaddrInet6:
		raw := &unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: sa.Addr, Scope_id: sa.ZoneId}
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&raw.Port))[:], uint16(sa.Port))
		t.raw, t.rawLen = unsafe.Pointer(raw), unsafe.Sizeof(*raw)
	}
	return t, nil
}

// loopGroup is an event loop and the workers' goroutines it stands for:
// the driver runs a goroutine per worker, as for every workload; the first
// of each group runs the loop once every member has brought its recorder,
// the others wait for it to end.
type loopGroup struct {
	loop  *eventLoop
	ready sync.WaitGroup
	done  chan struct{}
}

// join is worker i's part of the run; slot is its place in the group.
func (g *loopGroup) join(runner bool, slot int, ctx context.Context, clock metrics.Clock, stop *driver.Stop, rec *metrics.Recorder) error {
	c := g.loop.conns[slot]
	c.rec = rec
	c.w.check = c.w.s.content.Checker()
	g.ready.Done()
	if !runner {
		<-g.done
		return nil
	}
	defer close(g.done)
	g.ready.Wait()
	return g.loop.run(ctx, clock, stop)
}

// eventLoop drives its connections from one goroutine that keeps its P.
type eventLoop struct {
	s       *S3
	ctx     context.Context // the run's hard stop
	clock   metrics.Clock
	stop    *driver.Stop
	epfd    int
	conns   []*loopConn
	busy    int   // connections not done
	soonest int64 // the earliest deadline or wake-up among them
	later   []*loopConn
	spare   []*loopConn
	buf     []byte // what a read brings
	events  []unix.EpollEvent
}

// connState is where a connection's operation is.
type connState uint8

const (
	idle       connState = iota // between operations (a kept connection may be open)
	connecting                  // the TCP handshake is under way
	sending                     // the request is being written
	answering                   // the request is sent; the answer is being read
	waiting                     // a retry's backoff
	done                        // the worker stopped
)

// loopConn is one worker in a loop: its connection and the operation in
// progress.
type loopConn struct {
	w      *worker
	rec    *metrics.Recorder
	target *loopTarget
	sig    *sigv4
	slot   int32 // its index in its loop, the tag of its events
	fd     int
	state  connState
	err    error // an attempt's failure found while starting it, handled at the loop's next turn

	// the operation
	op                    metrics.Op
	method, key, rangeHdr string
	size                  int64 // a PUT's body
	obj                   object
	get                   getPlan
	start, first          int64 // its start; its attempt's first response byte (0: none yet)
	try                   int
	deadline, wakeAt      int64  // the attempt's --timeout; the retry's start (0: none)
	req                   []byte // the request's head and (some of) its body
	out                   []byte // what of req is being sent
	outAt                 int
	body                  io.ReadSeeker // a PUT's body (bodyLeft bytes of it still to send after out)
	bodyLeft              int64
	hp                    headParser // the answer's head as it arrives (hp.h, once headDone)
	headDone              bool
	frame                 framing
	left                  int64 // Content-Length framing: bytes to come
	chunks                chunkReader
	n                     int64  // body bytes read
	errBody               []byte // a failed answer's body, for its message
}

// framing is how an answer's body ends.
type framing uint8

const (
	noBody framing = iota
	byLength
	byChunks
	byClose
)

// maxHead bounds an answer's head; a longer one is malformed.
const maxHead = 64 << 10

// putInline is the largest PUT whose body is written with its head in one
// system call; a larger one is sent from a buffer of this size.
const putInline = 64 << 10

func (l *eventLoop) run(ctx context.Context, clock metrics.Clock, stop *driver.Stop) error {
	l.ctx, l.clock, l.stop = ctx, clock, stop
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("epoll_create1", err)
	}
	l.epfd = epfd
	defer unix.Close(epfd)
	l.buf = make([]byte, 64<<10)
	l.events = make([]unix.EpollEvent, min(len(l.conns), 256))
	l.soonest = math.MaxInt64
	l.busy = len(l.conns)
	for _, c := range l.conns {
		l.next(c)
	}
	for l.busy > 0 {
		wait := 0
		if len(l.later) == 0 {
			// At most 100 ms: the soft stop reaches a worker between
			// operations, the hard stop one whose server never answers.
			wait = 100
			if l.soonest != math.MaxInt64 {
				wait = int(min(100, max(0, (l.soonest-clock.Now()+999_999)/1_000_000)))
			}
		}
		n, _, errno := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&l.events[0])),
			uintptr(len(l.events)), uintptr(wait), 0, 0)
		if errno != 0 && errno != unix.EINTR {
			l.cut()
			return os.NewSyscallError("epoll_pwait", errno)
		}
		if errno == 0 {
			for _, ev := range l.events[:n] {
				l.event(l.conns[ev.Fd], ev.Events)
			}
		}
		select {
		case <-ctx.Done():
			l.cut()
			return nil
		default:
		}
		if now := clock.Now(); now >= l.soonest {
			l.expire(now)
		}
		batch := l.later
		l.later = l.spare[:0]
		for _, c := range batch {
			if err := c.err; err != nil {
				c.err = nil
				l.failed(c, err)
			} else {
				l.next(c)
			}
		}
		l.spare = batch[:0]
	}
	return nil
}

// next starts the worker's next operation, or ends the worker.
func (l *eventLoop) next(c *loopConn) {
	w := c.w
	if l.stop.Stopped() || (w.limited && w.budget.Add(-1) < 0) {
		l.closeConn(c)
		c.state = done
		l.busy--
		return
	}
	op := w.s.opts.Mix.pick(w.rng)
	w.size, w.op = 0, op
	c.op, c.try, c.rangeHdr, c.size = op, 0, "", 0
	c.start = l.clock.Now()
	switch op {
	case metrics.Put:
		c.obj = w.newObject()
		c.method, c.key, c.size = http.MethodPut, c.obj.key, c.obj.size
	case metrics.Get:
		g, err := w.planGet()
		if err != nil {
			l.opDone(c, err) // its record is at the loop's next turn
			return
		}
		c.get, c.method, c.key, c.rangeHdr = g, http.MethodGet, g.obj.key, g.rangeHdr
	case metrics.Head:
		c.method, c.key = http.MethodHead, w.existing().key
	case metrics.Delete:
		keys, err := w.deleteKeys()
		if err != nil {
			l.opDone(c, err)
			return
		}
		c.method, c.key = http.MethodDelete, keys[0]
	default: // loopable keeps every other operation out of the loops
		l.opDone(c, fmt.Errorf("%s: not an operation of the event loops", op))
		return
	}
	l.attempt(c)
}

// attempt sends the operation's request (again).
func (l *eventLoop) attempt(c *loopConn) {
	o := &l.s.opts
	c.first, c.n, c.headDone, c.errBody, c.wakeAt = 0, 0, false, c.errBody[:0], 0
	c.hp.reset()
	c.chunks = chunkReader{}
	c.deadline = 0
	if o.Timeout > 0 {
		c.deadline = l.clock.Now() + int64(o.Timeout)
		l.soonest = min(l.soonest, c.deadline)
	}
	c.req = c.sig.appendRequest(c.req[:0], c.method, o.Bucket, c.key, c.size, c.rangeHdr)
	c.out, c.outAt, c.bodyLeft = c.req, 0, 0
	if c.method == http.MethodPut {
		c.body, c.bodyLeft = l.s.content.Again(c.body, c.obj.seed, c.obj.size), c.obj.size
		if c.size <= putInline {
			if err := c.fill(); err != nil {
				l.failLater(c, err)
				return
			}
		}
	}
	if c.fd < 0 {
		if err := l.dial(c); err != nil {
			l.failLater(c, &noAnswer{err})
		}
		return
	}
	c.state = sending
	l.send(c)
}

// fill appends to out what of the body fits, up to putInline bytes; out
// starts again when all of it went.
func (c *loopConn) fill() error {
	if c.outAt == len(c.out) {
		c.out, c.outAt = c.req[:0], 0
	}
	n := int(min(c.bodyLeft, putInline))
	at := len(c.out)
	c.out = slices.Grow(c.out, n)[:at+n]
	c.req = c.out[:0] // its room kept for the next
	if _, err := io.ReadFull(c.body, c.out[at:]); err != nil {
		return fmt.Errorf("generating a PUT's body: %w", err)
	}
	c.bodyLeft -= int64(n)
	return nil
}

// failLater fails the attempt at the loop's next turn, so a server that
// refuses at once cannot make the loop recurse.
func (l *eventLoop) failLater(c *loopConn, err error) {
	c.err, c.state = err, idle
	l.later = append(l.later, c)
}

// dial opens the connection: a non-blocking connect, its end reported as
// the socket becoming writable. Its system calls are raw, as the loop's
// others: none puts the loop's P in the system-call state, where the
// runtime's monitor would hand it to another thread.
func (l *eventLoop) dial(c *loopConn) error {
	t := c.target
	fd, _, errno := syscall.RawSyscall(unix.SYS_SOCKET, uintptr(t.family), unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if errno != 0 {
		return os.NewSyscallError("socket", errno)
	}
	one := int32(1)
	if _, _, errno := syscall.RawSyscall6(unix.SYS_SETSOCKOPT, fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, uintptr(unsafe.Pointer(&one)), 4, 0); errno != 0 {
		syscall.RawSyscall(unix.SYS_CLOSE, fd, 0, 0)
		return os.NewSyscallError("setsockopt", errno)
	}
	if _, _, errno := syscall.RawSyscall(unix.SYS_CONNECT, fd, uintptr(t.raw), t.rawLen); errno != 0 && errno != unix.EINPROGRESS {
		syscall.RawSyscall(unix.SYS_CLOSE, fd, 0, 0)
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno)}
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: c.slot}
	if _, _, errno := syscall.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(l.epfd), unix.EPOLL_CTL_ADD, fd, uintptr(unsafe.Pointer(&ev)), 0, 0); errno != 0 {
		syscall.RawSyscall(unix.SYS_CLOSE, fd, 0, 0)
		return os.NewSyscallError("epoll_ctl", errno)
	}
	c.fd, c.state = int(fd), connecting
	return nil
}

func (l *eventLoop) closeConn(c *loopConn) {
	if c.fd >= 0 {
		syscall.RawSyscall(unix.SYS_CLOSE, uintptr(c.fd), 0, 0)
		c.fd = -1
	}
}

// event handles what epoll reported of c's socket.
func (l *eventLoop) event(c *loopConn, ev uint32) {
	switch c.state {
	case connecting:
		if ev&(unix.EPOLLERR|unix.EPOLLHUP) != 0 {
			err := unix.ECONNREFUSED
			if e, gerr := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_ERROR); gerr == nil && e != 0 {
				err = unix.Errno(e)
			}
			l.failed(c, &noAnswer{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", err)}})
			return
		}
		if ev&unix.EPOLLOUT != 0 {
			c.target.client.dialed.Add(1)
			c.state = sending
			l.send(c)
		}
	case sending:
		if ev&unix.EPOLLOUT != 0 {
			l.send(c)
		}
		// An answer before the whole request went is a refusal; one
		// that came as it went is read now: an edge is reported once.
		if (c.state == sending || c.state == answering) && ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			l.read(c)
		}
	case answering:
		l.read(c)
	case idle:
		if ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			l.closeConn(c) // a kept connection the server closed, or spoke on unasked
		}
	}
}

// send writes what is left of the request until the socket is full.
func (l *eventLoop) send(c *loopConn) {
	for {
		if c.outAt == len(c.out) {
			if c.bodyLeft == 0 {
				c.state = answering
				return
			}
			if err := c.fill(); err != nil {
				l.failed(c, err)
				return
			}
		}
		p := c.out[c.outAt:]
		n, _, errno := syscall.RawSyscall(unix.SYS_WRITE, uintptr(c.fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch errno {
		case 0:
			c.outAt += int(n)
		case unix.EINTR:
		case unix.EAGAIN:
			return // the next EPOLLOUT
		default:
			l.failed(c, &noAnswer{os.NewSyscallError("write", errno)})
			return
		}
	}
}

// read reads what the socket holds and takes it in; it returns when the
// socket is empty or the answer is whole.
func (l *eventLoop) read(c *loopConn) {
	for {
		n, _, errno := syscall.RawSyscall(unix.SYS_READ, uintptr(c.fd), uintptr(unsafe.Pointer(&l.buf[0])), uintptr(len(l.buf)))
		switch {
		case errno == unix.EAGAIN:
			return
		case errno == unix.EINTR:
			continue
		case errno != 0:
			l.ended(c, os.NewSyscallError("read", errno))
			return
		case n == 0:
			l.ended(c, io.EOF)
			return
		}
		if c.first == 0 {
			c.first = l.clock.Now()
		}
		if l.take(c, l.buf[:n]) {
			return
		}
	}
}

// take takes in bytes of the answer; it says true when the answer is
// whole or failed (the attempt is over).
func (l *eventLoop) take(c *loopConn, p []byte) bool {
	for !c.headDone {
		used, done, err := c.hp.feed(p, maxHead)
		if err != nil {
			l.failed(c, &noAnswer{err})
			return true
		}
		if p = p[used:]; !done {
			return false
		}
		h := &c.hp.h
		if h.status >= 100 && h.status < 200 && h.status != http.StatusSwitchingProtocols {
			// 100 Continue, 103 Early Hints: the real answer follows.
			c.hp.reset()
			continue
		}
		c.headDone = true
		switch {
		case c.method == http.MethodHead || h.status == http.StatusNoContent || h.status == http.StatusNotModified:
			c.frame = noBody
		case h.chunked:
			c.frame = byChunks
		case h.length >= 0:
			c.frame, c.left = byLength, h.length
		default:
			c.frame, h.close = byClose, true
		}
		if c.method == http.MethodGet && h.status < 300 && c.frame == byLength && h.length != c.get.want {
			// Closed unread: what follows a wrong Content-Length is no
			// answer to the next request.
			l.closeConn(c)
			l.opDone(c, announcedLength(c.key, h.length, c.get.want))
			return true
		}
		if c.frame == noBody || (c.frame == byLength && c.left == 0) {
			l.complete(c, len(p) > 0)
			return true
		}
	}
	switch c.frame {
	case byLength:
		m := min(int64(len(p)), c.left)
		c.takeBody(p[:m])
		c.left -= m
		if c.left == 0 {
			l.complete(c, int64(len(p)) > m)
			return true
		}
	case byChunks:
		used, end, err := c.chunks.take(p, c.takeBody)
		if err != nil {
			l.failed(c, err)
			return true
		}
		if end {
			l.complete(c, used < len(p))
			return true
		}
	case byClose:
		c.takeBody(p)
	}
	return false
}

// takeBody takes in bytes of the answer's body.
func (c *loopConn) takeBody(b []byte) {
	if c.hp.h.status >= 300 {
		c.errBody = append(c.errBody, b[:min(len(b), 64<<10-len(c.errBody))]...)
		return
	}
	if c.method == http.MethodGet && c.w.s.opts.CheckReads {
		c.get.dst.Write(b)
	}
	c.n += int64(len(b))
}

// ended handles the connection's end (io.EOF) or failure while an answer
// was awaited.
func (l *eventLoop) ended(c *loopConn, err error) {
	switch {
	case !c.headDone:
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		l.failed(c, &noAnswer{err})
	case c.frame == byClose && err == io.EOF:
		l.complete(c, false)
	case c.frame == byLength && err == io.EOF:
		l.failed(c, fmt.Errorf("%w: the connection ended %d bytes before its Content-Length", errBodyLength, c.left))
	case err == io.EOF:
		l.failed(c, io.ErrUnexpectedEOF)
	default:
		l.failed(c, err)
	}
}

// complete ends an attempt whose answer is whole; the connection stays for
// the next request unless the server closes it, more than the answer came,
// or the answer came before the whole request went.
func (l *eventLoop) complete(c *loopConn, extra bool) {
	if extra || c.hp.h.close || c.outAt < len(c.out) || c.bodyLeft > 0 {
		l.closeConn(c)
	}
	c.state = idle
	var err error
	if c.hp.h.status >= 300 {
		err = errorResponse(c.method, c.hp.h.status, c.errBody)
	}
	l.attemptDone(c, err)
}

// failed ends an attempt that failed, and its connection.
func (l *eventLoop) failed(c *loopConn, err error) {
	l.closeConn(c)
	c.state = idle
	l.attemptDone(c, err)
}

// attemptDone sends the request again after a backoff, as the workers'
// own connections do (worker.again), or ends the operation.
func (l *eventLoop) attemptDone(c *loopConn, err error) {
	if err != nil && c.try < l.s.opts.Retries && retryable(err) && l.ctx.Err() == nil {
		c.w.retries[c.op]++
		d := backoffDelay(c.w.rng, c.try)
		c.try++
		c.state, c.wakeAt, c.deadline = waiting, l.clock.Now()+int64(d), 0
		l.soonest = min(l.soonest, c.wakeAt)
		return
	}
	l.opDone(c, err)
}

// opDone records the operation and queues the worker's next for the
// loop's next turn.
func (l *eventLoop) opDone(c *loopConn, err error) {
	end := l.clock.Now()
	w := c.w
	n := c.n
	switch c.op {
	case metrics.Get:
		if err = w.checkGet(c.get, n, err); errors.Is(err, errBodyLength) {
			l.closeConn(c)
		}
	case metrics.Put:
		if err == nil {
			w.written = append(w.written, c.obj)
			w.size, n = c.obj.size, c.obj.size
		}
	default:
		n = 0
	}
	c.state, c.deadline = idle, 0
	if !w.record(l.ctx, c.rec, c.op, n, err, c.start, end, unpaced, c.first) {
		l.closeConn(c)
		c.state = done
		l.busy--
		return
	}
	l.later = append(l.later, c)
}

// expire fails the attempts whose --timeout passed and starts the retries
// whose backoff did.
func (l *eventLoop) expire(now int64) {
	l.soonest = math.MaxInt64
	for _, c := range l.conns {
		switch {
		case c.state == waiting && now >= c.wakeAt:
			l.attempt(c)
		case c.state == waiting:
			l.soonest = min(l.soonest, c.wakeAt)
		case c.deadline == 0 || (c.state != connecting && c.state != sending && c.state != answering):
		case now >= c.deadline:
			var err error = &timeoutError{l.s.opts.Timeout}
			if !c.headDone {
				err = &noAnswer{err}
			}
			l.failed(c, err)
		default:
			l.soonest = min(l.soonest, c.deadline)
		}
	}
}

// cut ends the run at its hard stop: every operation in flight is an error
// of its kind, as a goroutine's is.
func (l *eventLoop) cut() {
	now := l.clock.Now()
	for _, c := range l.conns {
		if c.state == done {
			continue
		}
		if c.state != idle || c.err != nil {
			c.rec.OpError(c.op, "cut", cutError(c.op, now-c.start))
		}
		l.closeConn(c)
		c.state = done
	}
	l.busy = 0
}

// chunkReader takes in a chunked body as it arrives, its trailer too.
type chunkReader struct {
	left      int64 // bytes of the chunk in progress still to come
	inData    bool
	afterData bool // the CRLF after a chunk's data is next
	trailer   bool
	line      []byte // a size or trailer line that came in pieces
}

// take takes in p, handing the body's bytes to body; it returns how much
// of p the body held and whether it ended.
func (r *chunkReader) take(p []byte, body func([]byte)) (int, bool, error) {
	used := 0
	for used < len(p) {
		if r.inData {
			m := min(int64(len(p)-used), r.left)
			body(p[used : used+int(m)])
			used += int(m)
			if r.left -= m; r.left == 0 {
				r.inData, r.afterData = false, true
			}
			continue
		}
		i := bytes.IndexByte(p[used:], '\n')
		if i < 0 {
			if r.line = append(r.line, p[used:]...); len(r.line) > 4096 {
				return used, false, fmt.Errorf("%w: a chunk line longer than 4096 bytes", errMalformed)
			}
			return len(p), false, nil
		}
		line := bytes.TrimSuffix(append(r.line, p[used:used+i]...), []byte("\r"))
		used += i + 1
		r.line = r.line[:0]
		switch {
		case r.afterData:
			if len(line) != 0 {
				return used, false, fmt.Errorf("%w: chunk data not followed by CRLF", errMalformed)
			}
			r.afterData = false
		case r.trailer:
			if len(line) == 0 {
				return used, true, nil
			}
		default:
			size, _, _ := bytes.Cut(line, []byte(";"))
			n, err := strconv.ParseInt(string(bytes.TrimSpace(size)), 16, 64)
			if err != nil || n < 0 {
				return used, false, fmt.Errorf("%w: chunk size %q", errMalformed, line)
			}
			if n == 0 {
				r.trailer = true
			} else {
				r.left, r.inData = n, true
			}
		}
	}
	return used, false, nil
}
