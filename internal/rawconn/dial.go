package rawconn

import (
	"context"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Dial opens a TCP connection to addr with the fewest system calls Linux
// allows — socket, TCP_NODELAY, connect, and the poller's registration —
// where net.Dialer also reads back the socket's error and both addresses
// and allocates a resolver's worth of state. A client whose server closes
// every connection (versitygw does) dials once per request, and then the
// difference is a fifth of its CPU. The connection reads and writes as Conn
// does; ctx's deadline bounds the connect.
func Dial(ctx context.Context, addr *net.TCPAddr) (net.Conn, error) {
	sa, family, err := Sockaddr(addr)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("setsockopt", err)
	}
	cerr := unix.Connect(fd, sa)
	if cerr != nil && cerr != unix.EINPROGRESS {
		unix.Close(fd)
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: addr, Err: os.NewSyscallError("connect", cerr)}
	}
	// A non-blocking descriptor becomes a File registered with the poller.
	f := os.NewFile(uintptr(fd), "tcp:"+addr.String())
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	c := &fileConn{File: f, raw: raw, remote: addr}
	if cerr == unix.EINPROGRESS {
		if d, ok := ctx.Deadline(); ok {
			f.SetWriteDeadline(d)
		}
		// Connecting again reports the outcome: EALREADY while the
		// handshake is under way, EISCONN once it is done, or its error.
		var result error
		werr := raw.Write(func(fd uintptr) bool {
			switch err := unix.Connect(int(fd), sa); err {
			case unix.EALREADY, unix.EINPROGRESS, unix.EINTR:
				return false
			case nil, unix.EISCONN:
				return true
			default:
				result = err
				return true
			}
		})
		f.SetWriteDeadline(time.Time{})
		if werr == nil && result != nil {
			werr = os.NewSyscallError("connect", result)
		}
		if werr != nil {
			f.Close()
			return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: addr, Err: werr}
		}
	}
	return c, nil
}

// Sockaddr is addr as connect(2) takes it, and its address family.
func Sockaddr(addr *net.TCPAddr) (unix.Sockaddr, int, error) {
	if ip4 := addr.IP.To4(); ip4 != nil {
		sa := &unix.SockaddrInet4{Port: addr.Port}
		copy(sa.Addr[:], ip4)
		return sa, unix.AF_INET, nil
	}
	if ip6 := addr.IP.To16(); ip6 != nil {
		sa := &unix.SockaddrInet6{Port: addr.Port}
		copy(sa.Addr[:], ip6)
		if addr.Zone != "" {
			ifi, err := net.InterfaceByName(addr.Zone)
			if err != nil {
				return nil, 0, fmt.Errorf("address %s: %w", addr, err)
			}
			sa.ZoneId = uint32(ifi.Index)
		}
		return sa, unix.AF_INET6, nil
	}
	return nil, 0, fmt.Errorf("address %s: not an IP address", addr)
}

// fileConn is a connected socket held as a pollable File: deadlines and
// Close are the File's, reads and writes raw.
type fileConn struct {
	*os.File
	raw    syscall.RawConn
	remote *net.TCPAddr
}

func (c *fileConn) Read(p []byte) (int, error)  { return read(c.raw, p) }
func (c *fileConn) Write(p []byte) (int, error) { return write(c.raw, p) }
func (c *fileConn) RemoteAddr() net.Addr        { return c.remote }

// LocalAddr asks the kernel, only when someone wants it.
func (c *fileConn) LocalAddr() net.Addr {
	var a net.Addr = &net.TCPAddr{}
	_ = c.raw.Control(func(fd uintptr) {
		switch sa := must(unix.Getsockname(int(fd))).(type) {
		case *unix.SockaddrInet4:
			a = &net.TCPAddr{IP: net.IP(sa.Addr[:]).To16(), Port: sa.Port}
		case *unix.SockaddrInet6:
			a = &net.TCPAddr{IP: net.IP(sa.Addr[:]), Port: sa.Port}
		}
	})
	return a
}

func must(sa unix.Sockaddr, err error) unix.Sockaddr {
	if err != nil {
		return nil
	}
	return sa
}
