package rawconn

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// pair returns a wrapped client connection and the server's end.
func pair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	w := Wrap(c)
	if _, ok := w.(*Conn); !ok {
		t.Fatalf("Wrap of a TCP connection returned %T", w)
	}
	t.Cleanup(func() { w.Close(); s.Close() })
	return w, s
}

// A write far larger than the socket buffers waits for room and arrives
// whole; reads wait for data and see EOF when the peer closes.
func TestLargeTransferBothWays(t *testing.T) {
	c, s := pair(t)
	data := make([]byte, 16<<20)
	rand.Read(data)

	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(s)
		got <- b
	}()
	if n, err := c.Write(data); n != len(data) || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	c.(*Conn).Conn.(*net.TCPConn).CloseWrite()
	if b := <-got; !bytes.Equal(b, data) {
		t.Fatalf("server got %d bytes, not what was written", len(b))
	}

	go func() {
		s.Write(data)
		s.Close()
	}()
	b, err := io.ReadAll(c)
	if err != nil || !bytes.Equal(b, data) {
		t.Fatalf("read %d bytes, %v", len(b), err)
	}
}

// A read that waits past the deadline fails with the deadline error, as a
// net.Conn's would.
func TestReadDeadline(t *testing.T) {
	c, _ := pair(t)
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := c.Read(make([]byte, 10))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v", err)
	}
}

// Closing the connection wakes a waiting reader.
func TestCloseWakesReader(t *testing.T) {
	c, _ := pair(t)
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 10))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	c.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("read on a closed connection succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reader still waiting after Close")
	}
}

// A reset by the peer is an error, not EOF.
func TestReset(t *testing.T) {
	c, s := pair(t)
	s.(*net.TCPConn).SetLinger(0)
	s.Close()
	time.Sleep(20 * time.Millisecond)
	_, err := c.Read(make([]byte, 10))
	if err == nil || err == io.EOF {
		t.Fatalf("read after a reset: %v", err)
	}
}

func TestWrapLeavesOtherConns(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if Wrap(a) != a {
		t.Fatal("Wrap changed a connection that is not TCP")
	}
}

// Dial connects as net.Dial does: the server sees the client's address,
// data goes both ways, and a port nobody listens on is refused.
func TestDial(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		l, err := net.Listen(network, map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[network])
		if err != nil {
			t.Logf("%s: %v (skipped)", network, err)
			continue
		}
		accepted := make(chan net.Conn, 1)
		go func() {
			c, _ := l.Accept()
			accepted <- c
		}()
		c, err := Dial(context.Background(), l.Addr().(*net.TCPAddr))
		if err != nil {
			t.Fatalf("%s: %v", network, err)
		}
		s := <-accepted
		if c.LocalAddr().String() != s.RemoteAddr().String() || c.RemoteAddr().String() != l.Addr().String() {
			t.Errorf("%s: client %v -> %v, server sees %v on %v", network, c.LocalAddr(), c.RemoteAddr(), s.RemoteAddr(), l.Addr())
		}
		go func() {
			io.Copy(s, s) // echo
			s.Close()
		}()
		msg := bytes.Repeat([]byte("ping"), 1<<18)
		go c.Write(msg)
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("%s: echo: %v", network, err)
		}
		c.Close()
		l.Close()
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().(*net.TCPAddr)
	l.Close()
	if _, err := Dial(context.Background(), addr); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("dial of a closed port: %v", err)
	}
}
