package s3

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawIO reads and writes a TCP connection's non-blocking socket with raw
// system calls, still waiting for readiness on Go's network poller.
//
// net.Conn's Read and Write enter the scheduler's system-call state for every
// call, which wakes the runtime's monitor thread and lets it hand the
// worker's P to another thread; for a 1 KiB object, two such calls per
// request cost a client more CPU than its HTTP. A read or write of a
// non-blocking socket never blocks, so it is safe without that state.
type rawIO struct{ c syscall.RawConn }

func newRawIO(conn net.Conn) (rawIO, bool) {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return rawIO{}, false
	}
	c, err := tc.SyscallConn()
	if err != nil {
		return rawIO{}, false
	}
	return rawIO{c}, true
}

// Read reads what the socket holds, waiting until it holds something.
func (r rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n uintptr
	var errno syscall.Errno
	err := r.c.Read(func(fd uintptr) bool {
		for {
			n, _, errno = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			if errno != syscall.EINTR {
				return errno != syscall.EAGAIN
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, os.NewSyscallError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return int(n), nil
}

// Write writes all of p, waiting for room in the socket's buffer as needed.
func (r rawIO) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		var n uintptr
		var errno syscall.Errno
		err := r.c.Write(func(fd uintptr) bool {
			for {
				n, _, errno = syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[done])), uintptr(len(p)-done))
				if errno != syscall.EINTR {
					return errno != syscall.EAGAIN
				}
			}
		})
		if err != nil {
			return done, err
		}
		if errno != 0 {
			return done, os.NewSyscallError("write", errno)
		}
		done += int(n)
	}
	return done, nil
}
