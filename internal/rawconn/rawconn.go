// Package rawconn reads and writes TCP connections with raw system calls
// while still waiting for readiness on Go's network poller.
//
// net.Conn's Read and Write enter the scheduler's system-call state for
// every call, which wakes the runtime's monitor thread and lets it hand the
// goroutine's P to another thread. For a client that makes tens of
// thousands of small calls a second — a 1 KiB object is one write and one
// read — that bookkeeping costs more CPU than the HTTP. A read or write of a
// non-blocking socket never blocks, so it is safe without it.
package rawconn

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// Conn is a TCP connection whose Read and Write are raw system calls; the
// rest (deadlines, Close, addresses) is the net.Conn's.
type Conn struct {
	net.Conn
	raw syscall.RawConn
}

// Wrap returns conn with raw reads and writes when it is a TCP connection,
// else conn itself.
func Wrap(conn net.Conn) net.Conn {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return conn
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return conn
	}
	return &Conn{Conn: conn, raw: raw}
}

// Read reads what the socket holds, waiting until it holds something.
func (c *Conn) Read(p []byte) (int, error) { return read(c.raw, p) }

// Write writes all of p, waiting for room in the socket's buffer as needed.
func (c *Conn) Write(p []byte) (int, error) { return write(c.raw, p) }

func read(raw syscall.RawConn, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n uintptr
	var errno syscall.Errno
	err := raw.Read(func(fd uintptr) bool {
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

func write(raw syscall.RawConn, p []byte) (int, error) {
	done := 0
	for done < len(p) {
		var n uintptr
		var errno syscall.Errno
		err := raw.Write(func(fd uintptr) bool {
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
