package s3

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// A server that accepts a request and never answers holds the worker only
// until the run's context ends.
func TestFastConnCancelledWhileWaiting(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan struct{})
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		c.Read(buf) // the request head arrives, no answer goes back
		close(got)
		io.Copy(io.Discard, c)
	}()
	o := DefaultOptions()
	o.Endpoint, o.Bucket, o.AccessKey, o.SecretKey = "http://"+l.Addr().String(), "b", "key", "secret"
	f := newFastConn(&client{endpoint: o.Endpoint}, &o)
	if f == nil || f.addr == nil {
		t.Fatal("no fast connection for an IP endpoint")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.do(ctx, http.MethodGet, "b", "k", nil, 0, "", io.Discard, make([]byte, 1024), func() {})
		done <- err
	}()
	<-got
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("request on a cancelled run: %v", err)
		}
	case <-time.After(30 * time.Second): // a liveness bound, not a timing
		t.Fatal("the request still waits for a server that never answers after the run was cancelled")
	}
	if f.conn != nil {
		t.Fatal("the connection of a failed request was kept")
	}
}
