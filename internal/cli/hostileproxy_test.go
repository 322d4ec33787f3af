package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// hostileModes are the ways hostileFront spoils an answer.
var hostileModes = []string{"flip", "truncate", "wrong-length", "garbage", "close", "stall", "500"}

// reframeModes are the ways hostileFront frames a good answer as HTTP/1.1
// allows and S3 servers seldom do:
//   - chunked: the body in chunks of 1000 bytes, each written apart, with
//     a trailer;
//   - continue: a 100 Continue before the answer;
//   - close-delimited: an HTTP/1.0 answer without Content-Length, its
//     body ended by closing the connection;
//   - bare-lf: the head's lines ended by LF alone, sent a byte at a time
//     (each byte its own write; the proxy's connection sends without delay).
var reframeModes = []string{"chunked", "continue", "close-delimited", "bare-lf"}

// hostileFront is a proxy in front of an S3 server that passes every
// request through and spoils the answer to each object GET in one way:
//   - flip: one byte of the body changed;
//   - truncate: the head as sent (its Content-Length), half the body, the
//     connection closed;
//   - wrong-length: a Content-Length one short of the body, all of it
//     sent, the connection kept (what follows is not the next answer);
//   - garbage: bytes that are not HTTP, the connection closed;
//   - close: the connection closed unanswered;
//   - stall: no answer, until the client gives up;
//   - 500: an S3 InternalError.
//
// spoiled, if not nil, gets a value at each spoiled answer (never blocking).
func hostileFront(t *testing.T, target, mode string, spoiled chan<- string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tu, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	var conns sync.WaitGroup
	t.Cleanup(func() { l.Close(); conns.Wait(); tr.CloseIdleConnections() })
	serve := func(conn net.Conn) {
		defer conns.Done()
		defer conn.Close()
		br := bufio.NewReader(conn)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			req.URL.Scheme, req.URL.Host, req.RequestURI = tu.Scheme, tu.Host, ""
			objectGet := req.Method == http.MethodGet && strings.Count(strings.Trim(req.URL.Path, "/"), "/") >= 1 && req.URL.RawQuery == ""
			resp, err := tr.RoundTrip(req)
			if err != nil {
				return
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return
			}
			if !objectGet || resp.StatusCode != http.StatusOK || len(body) < 2 {
				resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
				if resp.Write(conn) != nil {
					return
				}
				continue
			}
			if spoiled != nil {
				select {
				case spoiled <- req.URL.Path:
				default:
				}
			}
			head := func(length int) string { // the server's, but for its length
				var b strings.Builder
				b.WriteString("HTTP/1.1 200 OK\r\n")
				resp.Header.Del("Content-Length")
				resp.Header.Del("Transfer-Encoding")
				resp.Header.Del("Connection")
				resp.Header.Write(&b)
				switch length {
				case -1:
					b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
				case -2: // none: HTTP/1.0, until the connection closes
					return strings.Replace(b.String(), "HTTP/1.1", "HTTP/1.0", 1) + "\r\n"
				default:
					fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", length)
				}
				return b.String()
			}
			switch mode {
			case "flip":
				body[len(body)/2] ^= 0x5a
				io.WriteString(conn, head(len(body)))
				conn.Write(body)
				continue
			case "truncate":
				io.WriteString(conn, head(len(body)))
				conn.Write(body[:len(body)/2])
			case "wrong-length":
				io.WriteString(conn, head(len(body)-1))
				conn.Write(body)
				continue
			case "garbage":
				conn.Write([]byte("\x00\xff\x13 this is not HTTP\r\n\r\n"))
			case "close":
			case "stall":
				_, _ = io.Copy(io.Discard, conn) // until the client closes
			case "chunked":
				io.WriteString(conn, head(-1))
				for rest := body; len(rest) > 0; rest = rest[min(1000, len(rest)):] {
					fmt.Fprintf(conn, "%x\r\n%s\r\n", min(1000, len(rest)), rest[:min(1000, len(rest))])
				}
				io.WriteString(conn, "0\r\nX-Checked: no\r\n\r\n")
				continue
			case "continue":
				io.WriteString(conn, "HTTP/1.1 100 Continue\r\n\r\n")
				io.WriteString(conn, head(len(body)))
				conn.Write(body)
				continue
			case "close-delimited":
				io.WriteString(conn, head(-2))
				conn.Write(body)
			case "bare-lf":
				for _, c := range []byte(strings.ReplaceAll(head(len(body)), "\r\n", "\n")) {
					if _, err := conn.Write([]byte{c}); err != nil {
						return
					}
				}
				conn.Write(body)
				continue
			case "500":
				e := "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>"
				fmt.Fprintf(conn, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/xml\r\nContent-Length: %d\r\n\r\n%s", len(e), e)
				continue
			default:
				panic("hostileFront: unknown mode " + mode)
			}
			return
		}
	}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go serve(conn)
		}
	}()
	return "http://" + l.Addr().String()
}

// Behind a proxy that spoils every object GET — in each way a hostile or
// broken server does — a mix of PUTs and GETs ends (within its --timeout
// and --retries), counts every GET as failed and no PUT, counts the
// retries against GET, and exits non-zero; with --verify too. A flipped
// byte is found as the GET arrives (--check-reads), at its offset. Every
// client: event loops, a goroutine per connection, minio-go.
func TestHostileServerAnswers(t *testing.T) {
	t.Parallel()
	srv := s3Servers(t)[0]
	for _, mode := range hostileModes {
		for _, client := range []string{"loop", "conn", "sdk"} {
			t.Run(mode+"/"+client, func(t *testing.T) {
				t.Parallel()
				front := hostileFront(t, srv.endpoint, mode, nil)
				db := filepath.Join(t.TempDir(), "x.db")
				args := []string{"s3", "--endpoint", front, "--bucket", "hostile-" + mode, "--create-bucket",
					"--access-key", testAccessKey, "--secret-key", testSecretKey, "--mix", "put=1,get=1", "--size", "4k",
					"--count", "12", "--concurrency", "2", "--timeout", "1s", "--retries", "1", "--verify", "--check-reads",
					"--rounds", "1", "--warmup", "0", "--keep-going", "--db", db, "--json", "--client", client}
				out, stderr, err := iolab(t, context.Background(), args...)
				if err == nil || out == "" {
					t.Fatalf("exit 0 behind a proxy that spoils every GET: %v\n%s\n%s", err, out, stderr)
				}
				var r jsonRunS3
				decodeInto(t, out, &r)
				if len(r.Runs) != 1 {
					t.Fatalf("%s", out)
				}
				run := r.Runs[0]
				if loops := run.Extra["event_loops"]; (client == "loop") != (loops > 0) {
					t.Fatalf("--client %s ran in %v event loops", client, loops)
				}
				get, put := run.Ops["get"], run.Ops["put"]
				if get.Ops != 0 || get.Errors == 0 || put.Errors != 0 || put.Ops == 0 || get.Errors+put.Ops != 12 {
					t.Fatalf("get %+v, put %+v: want every GET failed, every PUT done", get, put)
				}
				retried := run.Extra["get.retries"]
				if want := mode == "garbage" || mode == "close" || mode == "stall" || mode == "500"; want != (retried == float64(get.Errors)) {
					t.Errorf("%v GET retries for %d failed GETs (one each when the answer may pass on retry)", retried, get.Errors)
				}
				if run.Extra["put.retries"] != 0 || run.Extra["retries"] != retried {
					t.Errorf("retries %v: want only GET's", run.Extra)
				}
				if mode == "flip" {
					show, _, _ := iolab(t, context.Background(), "show", "--db", db, "--json")
					if !strings.Contains(show, `"get:content"`) || !strings.Contains(show, "byte 2048 is not what was written") {
						t.Errorf("flipped GETs not failed as content at byte 2048:\n%s", show)
					}
				}
				// None is missing (the server never said so): read and
				// not as written, or not read whole.
				v := run.Verify
				switch {
				case v == nil || v.Checked == 0 || v.Missing != 0 || v.Mismatched+v.Unreadable != v.Checked:
					t.Errorf("verify %+v: want every object read back found wrong or unreadable, none missing", v)
				case mode == "flip" && v.Mismatched != v.Checked:
					t.Errorf("verify %+v: want every object read and found different", v)
				case mode != "flip" && mode != "wrong-length" && v.Unreadable != v.Checked:
					t.Errorf("verify %+v: want every object unreadable", v)
				}
			})
		}
	}
}

// Behind a proxy that frames every object GET's answer as HTTP/1.1
// allows but S3 servers seldom do (chunked in pieces, after a 100
// Continue, ended by the connection's close), every GET is read whole and
// found right (--check-reads), by every client, none sent again, and
// iolab's own keep a connection unless its answer ended with it.
func TestReframedAnswersAreRead(t *testing.T) {
	t.Parallel()
	srv := s3Servers(t)[0]
	for _, mode := range reframeModes {
		for _, client := range []string{"loop", "conn", "sdk"} {
			t.Run(mode+"/"+client, func(t *testing.T) {
				t.Parallel()
				spoiled := make(chan string, 1)
				front := hostileFront(t, srv.endpoint, mode, spoiled)
				out, stderr, err := iolab(t, context.Background(), "s3", "--endpoint", front, "--bucket", "reframed-"+mode, "--create-bucket",
					"--access-key", testAccessKey, "--secret-key", testSecretKey, "--mix", "put=1,get=1", "--size", "4k",
					"--count", "16", "--concurrency", "2", "--timeout", "10s", "--check-reads", "--rounds", "1", "--warmup", "0",
					"--db", filepath.Join(t.TempDir(), "x.db"), "--json", "--client", client)
				if err != nil {
					t.Fatalf("%v\n%s\n%s", err, out, stderr)
				}
				var r jsonRunS3
				decodeInto(t, out, &r)
				run := r.Runs[0]
				if loops := run.Extra["event_loops"]; (client == "loop") != (loops > 0) {
					t.Fatalf("--client %s ran in %v event loops", client, loops)
				}
				get, put := run.Ops["get"], run.Ops["put"]
				if get.Errors != 0 || put.Errors != 0 || get.Ops == 0 || get.Ops+put.Ops != 16 || run.Extra["retries"] != 0 {
					t.Fatalf("get %+v, put %+v, extra %v: want 16 operations done, none sent again", get, put, run.Extra)
				}
				// The proxy passes on versitygw's "Connection: close" with
				// each PUT's answer and keeps a connection after each GET's
				// but a close-delimited one: iolab's own clients open none
				// for GETs. (net/http's pool may dial while a connection is
				// on its way back to it: minio-go's count is not exact.)
				opened := run.Extra["connections_opened"]
				if mode != "close-delimited" && client != "sdk" && opened > float64(2+put.Ops) {
					t.Errorf("%v connections opened by 2 workers for %d PUTs whose answers close them and %d GETs whose answers keep them",
						opened, put.Ops, get.Ops)
				}
				if mode == "close-delimited" && opened < float64(get.Ops) {
					t.Errorf("%v connections opened for %d GETs each ended by its connection's close", opened, get.Ops)
				}
				select {
				case <-spoiled:
				default:
					t.Fatal("no GET went through the proxy's framing")
				}
			})
		}
	}
}

// A server that never answers, and no --timeout: at the run's hard stop
// (the grace period after its --runtime) every GET still waiting is cut —
// counted as a failed GET, code cut — and the run is stored with them,
// whichever client sent them.
func TestS3HardStopCutsStalledRequests(t *testing.T) {
	t.Parallel()
	srv := s3Servers(t)[0]
	for _, client := range []string{"loop", "conn", "sdk"} {
		t.Run(client, func(t *testing.T) {
			t.Parallel()
			front := hostileFront(t, srv.endpoint, "stall", nil)
			db := filepath.Join(t.TempDir(), "x.db")
			out, stderr, err := iolab(t, context.Background(), "s3", "--endpoint", front, "--bucket", "stalled", "--create-bucket",
				"--access-key", testAccessKey, "--secret-key", testSecretKey, "--mix", "get", "--size", "4k", "--objects", "4",
				"--runtime", "1s", "--concurrency", "3", "--timeout", "0", "--retries", "0", "--rounds", "1", "--warmup", "0",
				"--keep-going", "--db", db, "--json", "--client", client)
			if err == nil || out == "" {
				t.Fatalf("exit 0, or nothing stored, with every GET stalled: %v\n%s\n%s", err, out, stderr)
			}
			var r jsonRunS3
			decodeInto(t, out, &r)
			run := r.Runs[0]
			if loops := run.Extra["event_loops"]; (client == "loop") != (loops > 0) {
				t.Fatalf("--client %s ran in %v event loops", client, loops)
			}
			if get := run.Ops["get"]; get.Ops != 0 || get.Errors != 3 {
				t.Fatalf("get %+v: want the 3 GETs in flight cut, none done", get)
			}
			if show, _, _ := iolab(t, context.Background(), "show", "--db", db, "--json"); !strings.Contains(show, `"get:cut"`) {
				t.Errorf("the stalled GETs are not counted as cut:\n%s", show)
			}
		})
	}
}

// Ctrl-C or SIGTERM while --verify reads from a server that stalls ends
// at once (not after --timeout, not after minio-go's retries): the run
// stored, as interrupted, exit 130 or 143.
func TestSignalDuringVerify(t *testing.T) {
	t.Parallel()
	srv := s3Servers(t)[0]
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			spoiled := make(chan string, 1)
			front := hostileFront(t, srv.endpoint, "stall", spoiled)
			db := filepath.Join(t.TempDir(), "x.db")
			cmd := testIolab("s3", "--endpoint", front, "--bucket", "stalled-verify", "--create-bucket", "--mix", "put", "--size", "4k",
				"--count", "8", "--concurrency", "2", "--verify", "--timeout", "10m", "--rounds", "1", "--warmup", "0", "--db", db)
			cmd.Env = append(cmd.Env, "AWS_ACCESS_KEY_ID="+testAccessKey, "AWS_SECRET_ACCESS_KEY="+testSecretKey)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-spoiled: // verify is reading
			case <-time.After(2 * time.Minute):
				_ = cmd.Process.Kill()
				t.Fatalf("verify never began\n%s", stderr.String())
			}
			_ = cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute): // the stall's own end is 10 minutes away
				_ = cmd.Process.Kill()
				t.Fatalf("%v during verify ignored\n%s", sig, stderr.String())
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 128+int(sig) {
				t.Fatalf("%v: %v, want exit %d\n%s", sig, err, 128+int(sig), stderr.String())
			}
			if n := countRows(t, db, `SELECT count(*) FROM runs WHERE status = 'interrupted'`); n != 1 {
				t.Errorf("%d interrupted runs stored, want the one cut in its verify", n)
			}
			if n := countRows(t, db, `SELECT count(*) FROM experiments WHERE status = 'interrupted'`); n != 1 {
				t.Errorf("the experiment is not marked interrupted\n%s", stderr.String())
			}
		})
	}
}

// hostileHTTP is an HTTP server that keeps what is PUT and answers every
// GET of it spoiled in one of hostileFront's ways.
func hostileHTTP(t *testing.T, mode string) string {
	t.Helper()
	var mu sync.Mutex
	kept := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			kept[r.URL.Path] = b
			mu.Unlock()
			fmt.Fprintf(w, `{"id":%q}`, path.Base(r.URL.Path))
			return
		}
		mu.Lock()
		body := bytes.Clone(kept[r.URL.Path])
		mu.Unlock()
		if mode == "500" {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		head := func(n int) { fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", n) }
		switch mode {
		case "flip":
			body[len(body)/2] ^= 0x5a
			head(len(body))
			buf.Write(body)
		case "truncate":
			head(len(body))
			buf.Write(body[:len(body)/2])
		case "wrong-length":
			head(len(body) - 1)
			buf.Write(body)
		case "garbage":
			buf.WriteString("\x00\xff\x13 this is not HTTP\r\n\r\n")
		case "close":
		case "stall":
			buf.Flush()
			_, _ = io.Copy(io.Discard, conn)
		default:
			panic("hostileHTTP: unknown mode " + mode)
		}
		buf.Flush()
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// The same for http: uploads, each downloaded back with --verify, from a
// server that spoils every download; every download fails (none is a
// success), every upload stands, within --timeout, exit non-zero.
func TestHostileHTTPDownloads(t *testing.T) {
	t.Parallel()
	for _, mode := range hostileModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			url := hostileHTTP(t, mode)
			out, stderr, err := iolab(t, context.Background(), "http", "upload", "--url", url+"/f/{{i}}", "--id-from-json", "id",
				"--download-url", url+"/f/{{id}}",
				"--verify", "--size", "4k", "--count", "6", "--timeout", "1s", "--rounds", "1", "--warmup", "0", "--keep-going",
				"--db", filepath.Join(t.TempDir(), "x.db"), "--json")
			if err == nil || out == "" {
				t.Fatalf("exit 0 from a server that spoils every download: %v\n%s\n%s", err, out, stderr)
			}
			var r jsonRunS3
			decodeInto(t, out, &r)
			if len(r.Runs) != 1 {
				t.Fatalf("%s", out)
			}
			up, down := r.Runs[0].Ops["upload"], r.Runs[0].Ops["download"]
			if up.Ops != 6 || up.Errors != 0 || down.Ops != 0 || down.Errors != 6 {
				t.Fatalf("uploads %+v, downloads %+v: want 6 uploads, 6 failed downloads", up, down)
			}
		})
	}
}
