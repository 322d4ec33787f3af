// Package uring is a minimal io_uring ring for the fs workload: read, write,
// fsync, sync_file_range and timeouts, submitted in batches and reaped without a
// system call when completions are already posted.
//
// It exists because no io_uring module is reachable through the Go module
// proxy from this project's build machines (giouring, iouring-go, go-uring
// and gouring are all refused); it covers only what iolab needs.
//
// A Ring is owned by one goroutine, which must be locked to its OS thread
// (runtime.LockOSThread) because the ring is set up as single-issuer.
package uring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Opcodes of the operations iolab issues.
const (
	OpFsync         uint8 = 3
	OpReadFixed     uint8 = 4 // into the registered buffer
	OpWriteFixed    uint8 = 5 // from the registered buffer
	OpSyncFileRange uint8 = 8
	OpTimeout       uint8 = 11
	OpRead          uint8 = 22
	OpWrite         uint8 = 23
)

const (
	sysIOURingRegister = 427
	registerBuffers    = 0
)

const (
	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	featSingleMmap = 1 << 0
	enterGetEvents = 1 << 0

	setupCoopTaskrun  = 1 << 8
	setupSingleIssuer = 1 << 12
	setupDeferTaskrun = 1 << 13

	fsyncDatasync = 1 << 0
	sqeIODrain    = 1 << 1
)

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

// SQE is a submission queue entry, laid out as the kernel's io_uring_sqe.
type SQE struct {
	Opcode      uint8
	Flags       uint8
	IOPrio      uint16
	FD          int32
	Off         uint64
	Addr        uint64
	Len         uint32
	OpFlags     uint32
	UserData    uint64
	BufIndex    uint16
	Personality uint16
	SpliceFDIn  int32
	Addr3       uint64
	pad         uint64
}

// CQE is a completion queue entry: the request's UserData and its result
// (bytes transferred, or a negated errno).
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

// Ring is one io_uring instance.
type Ring struct {
	fd      int
	sqMem   []byte
	cqMem   []byte
	sqeMem  []byte
	sqHead  *uint32
	sqTail  *uint32
	sqMask  uint32
	sqArray []uint32
	sqes    []SQE
	cqHead  *uint32
	cqTail  *uint32
	cqMask  uint32
	cqes    []CQE

	pending uint32        // SQEs queued since the last Submit
	timeout unix.Timespec // of the queued timeout request
}

// New sets up a ring with room for entries submissions.
func New(entries uint32) (*Ring, error) {
	var p params
	fd, err := setup(entries, &p, setupSingleIssuer|setupDeferTaskrun|setupCoopTaskrun)
	if errors.Is(err, unix.EINVAL) {
		p = params{} // older kernels: plain ring
		fd, err = setup(entries, &p, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("io_uring_setup: %w", err)
	}
	r := &Ring{fd: fd}
	if err := r.mmap(&p); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return r, nil
}

func setup(entries uint32, p *params, flags uint32) (int, error) {
	p.flags = flags
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

func (r *Ring) mmap(p *params) error {
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(CQE{})))
	single := p.features&featSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	prot, flags := unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE
	if r.sqMem, err = unix.Mmap(r.fd, offSQRing, sqSize, prot, flags); err != nil {
		return fmt.Errorf("io_uring mmap sq: %w", err)
	}
	r.cqMem = r.sqMem
	if !single {
		if r.cqMem, err = unix.Mmap(r.fd, offCQRing, cqSize, prot, flags); err != nil {
			return fmt.Errorf("io_uring mmap cq: %w", err)
		}
	}
	sqeSize := int(p.sqEntries) * int(unsafe.Sizeof(SQE{}))
	if r.sqeMem, err = unix.Mmap(r.fd, offSQEs, sqeSize, prot, flags); err != nil {
		return fmt.Errorf("io_uring mmap sqes: %w", err)
	}
	r.sqHead = (*uint32)(unsafe.Pointer(&r.sqMem[p.sqOff.head]))
	r.sqTail = (*uint32)(unsafe.Pointer(&r.sqMem[p.sqOff.tail]))
	r.sqMask = *(*uint32)(unsafe.Pointer(&r.sqMem[p.sqOff.ringMask]))
	r.sqArray = unsafe.Slice((*uint32)(unsafe.Pointer(&r.sqMem[p.sqOff.array])), p.sqEntries)
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	r.cqHead = (*uint32)(unsafe.Pointer(&r.cqMem[p.cqOff.head]))
	r.cqTail = (*uint32)(unsafe.Pointer(&r.cqMem[p.cqOff.tail]))
	r.cqMask = *(*uint32)(unsafe.Pointer(&r.cqMem[p.cqOff.ringMask]))
	r.cqes = unsafe.Slice((*CQE)(unsafe.Pointer(&r.cqMem[p.cqOff.cqes])), p.cqEntries)
	// The kernel never reorders the array; map slot i to SQE i once.
	for i := range r.sqArray {
		r.sqArray[i] = uint32(i)
	}
	return nil
}

// Queue adds one request. buf must stay alive and unmoved until its
// completion is reaped. It returns false when the submission queue is full.
func (r *Ring) Queue(op uint8, fd int, buf []byte, offset int64, userData uint64) bool {
	tail := *r.sqTail + r.pending
	if tail-atomic.LoadUint32(r.sqHead) >= uint32(len(r.sqes)) {
		return false
	}
	sqe := &r.sqes[tail&r.sqMask]
	*sqe = SQE{Opcode: op, FD: int32(fd), Off: uint64(offset), UserData: userData}
	if len(buf) > 0 {
		sqe.Addr = uint64(uintptr(unsafe.Pointer(&buf[0])))
		sqe.Len = uint32(len(buf))
	}
	r.pending++
	return true
}

// QueueFsync adds an fsync (or fdatasync) of fd that the kernel starts only
// after every request queued before it has completed (IOSQE_IO_DRAIN), as
// fio's fsync=N does on asynchronous engines.
func (r *Ring) QueueFsync(fd int, datasync bool, userData uint64) bool {
	flags := uint32(0)
	if datasync {
		flags = fsyncDatasync
	}
	return r.queueDrained(OpFsync, fd, flags, userData)
}

// QueueSyncFileRange adds a sync_file_range(2) of all of fd with flags,
// drained as QueueFsync.
func (r *Ring) QueueSyncFileRange(fd int, flags uint32, userData uint64) bool {
	return r.queueDrained(OpSyncFileRange, fd, flags, userData)
}

func (r *Ring) queueDrained(op uint8, fd int, opFlags uint32, userData uint64) bool {
	if !r.Queue(op, fd, nil, 0, userData) {
		return false
	}
	sqe := &r.sqes[(*r.sqTail+r.pending-1)&r.sqMask]
	sqe.Flags = sqeIODrain
	sqe.OpFlags = opFlags
	return true
}

// QueueTimeout adds a request that completes (with -ETIME) after d, so a
// wait for completions also ends then. One may be queued at a time: its
// time is held by the ring until the next submission.
func (r *Ring) QueueTimeout(d time.Duration, userData uint64) bool {
	r.timeout = unix.NsecToTimespec(int64(d))
	if !r.Queue(OpTimeout, -1, nil, 0, userData) {
		return false
	}
	sqe := &r.sqes[(*r.sqTail+r.pending-1)&r.sqMask]
	sqe.Addr = uint64(uintptr(unsafe.Pointer(&r.timeout)))
	sqe.Len = 1
	return true
}

// RegisterBuffer pins mem once for the ring's lifetime, so fixed reads and
// writes into it skip pinning its pages on every request (fio's fixedbufs).
func (r *Ring) RegisterBuffer(mem []byte) error {
	iov := unix.Iovec{Base: &mem[0]}
	iov.SetLen(len(mem))
	_, _, errno := unix.Syscall6(sysIOURingRegister, uintptr(r.fd), registerBuffers, uintptr(unsafe.Pointer(&iov)), 1, 0, 0)
	if errno != 0 {
		return fmt.Errorf("io_uring_register buffers: %w", errno)
	}
	return nil
}

// Queued is the number of requests queued since the last submission.
func (r *Ring) Queued() uint32 { return r.pending }

// SubmitAndWait submits the queued requests and waits until at least
// waitFor completions are available.
func (r *Ring) SubmitAndWait(waitFor uint32) error {
	n := r.pending
	atomic.StoreUint32(r.sqTail, *r.sqTail+n)
	r.pending = 0
	var flags uintptr
	if waitFor > 0 {
		flags = enterGetEvents
	}
	for {
		_, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(n), uintptr(waitFor), flags, 0, 0)
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			n = 0 // the submissions were consumed; only wait again
			continue
		default:
			return fmt.Errorf("io_uring_enter: %w", errno)
		}
	}
}

// Reap calls fn for each posted completion and returns how many it saw.
func (r *Ring) Reap(fn func(CQE)) int {
	head := *r.cqHead
	tail := atomic.LoadUint32(r.cqTail)
	n := 0
	for ; head != tail; head++ {
		fn(r.cqes[head&r.cqMask])
		n++
	}
	atomic.StoreUint32(r.cqHead, head)
	return n
}

// Close releases the ring.
func (r *Ring) Close() error {
	_ = unix.Munmap(r.sqeMem)
	if &r.cqMem[0] != &r.sqMem[0] {
		_ = unix.Munmap(r.cqMem)
	}
	_ = unix.Munmap(r.sqMem)
	return unix.Close(r.fd)
}
