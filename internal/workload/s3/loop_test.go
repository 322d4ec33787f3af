package s3

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A chunked body read by the event loop is the same whichever pieces the
// network cuts it into: its data, its end after the trailer, and nothing
// of what follows it.
func TestChunkReaderAnySplit(t *testing.T) {
	const body = "5\r\nhello\r\n3;name=value\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n"
	const next = "HTTP/1.1 200 OK\r\n"
	in := []byte(body + next)
	for a := 0; a <= len(in); a++ {
		for b := a; b <= len(in); b++ {
			var r chunkReader
			var got []byte
			used, end := 0, false
			for _, p := range [][]byte{in[:a], in[a:b], in[b:]} {
				if end {
					break
				}
				n, e, err := r.take(p, func(d []byte) { got = append(got, d...) })
				if err != nil {
					t.Fatalf("split at %d, %d: %v", a, b, err)
				}
				used, end = used+n, e
				if !end && n != len(p) {
					t.Fatalf("split at %d, %d: %d of %d bytes taken before the end", a, b, n, len(p))
				}
			}
			if !end || string(got) != "helloabc0123456789" || used != len(body) {
				t.Fatalf("split at %d, %d: end %v, body %q, %d bytes taken: want the end, helloabc0123456789, %d",
					a, b, end, got, used, len(body))
			}
		}
	}
}

// What is not a chunked body fails as malformed, not as a body of
// another length.
func TestChunkReaderRefusesMalformed(t *testing.T) {
	for _, in := range []string{
		"zz\r\nhello\r\n",     // a size that is not hex
		"5\r\nhelloXX\r\n",    // data longer than its size
		"-5\r\nhello\r\n",     // a negative size
		"5\r\nhello\r\n" + "", // cut short: no error, no end
	} {
		var r chunkReader
		_, end, err := r.take([]byte(in), func([]byte) {})
		if in == "5\r\nhello\r\n" {
			if err != nil || end {
				t.Errorf("%q: %v, end %v: want more to come", in, err, end)
			}
			continue
		}
		if !errors.Is(err, errMalformed) {
			t.Errorf("%q: %v: want a malformed answer", in, err)
		}
	}
}

// A response head read by the event loop is the same whichever pieces the
// network cuts it into, with lines ending in CRLF or in LF alone (as the
// goroutine-per-worker client reads them): its status, framing and
// Connection, and nothing of the body after it.
func TestHeadParserAnySplit(t *testing.T) {
	const head = "HTTP/1.1 206 Partial Content\r\nAccept-Ranges: bytes\r\nContent-Length: 5\r\n" +
		"Content-Type: application/octet-stream\r\nConnection: keep-alive, close\r\nX-Amz-Request-Id: 17A\r\n\r\n"
	for _, h := range []string{head, strings.ReplaceAll(head, "\r\n", "\n")} {
		in := []byte(h + "hello")
		for a := 0; a <= len(in); a++ {
			for b := a; b <= len(in); b++ {
				var p headParser
				used, done := 0, false
				for _, piece := range [][]byte{in[:a], in[a:b], in[b:]} {
					if done {
						break
					}
					n, d, err := p.feed(piece, maxHead)
					if err != nil {
						t.Fatalf("split at %d, %d: %v", a, b, err)
					}
					used, done = used+n, d
					if !done && n != len(piece) {
						t.Fatalf("split at %d, %d: %d of %d bytes used before the end", a, b, n, len(piece))
					}
				}
				if !done || used != len(h) || p.h.status != 206 || p.h.length != 5 || !p.h.close || p.h.chunked {
					t.Fatalf("split at %d, %d: done %v, %d bytes used, head %+v: want done, %d bytes, 206, length 5, close",
						a, b, done, used, p.h, len(h))
				}
			}
		}
	}
}

// A head that never ends fails once it passes the limit, however it
// arrives — a byte at a time too — and a malformed line fails at once.
func TestHeadParserRefuses(t *testing.T) {
	for _, long := range []string{
		"HTTP/1.1 200 OK\r\nX-Filler: " + strings.Repeat("x", 2000), // a line that never ends
		"HTTP/1.1 200 OK\r\n" + strings.Repeat("X-A: 1\r\n", 300),   // lines that do
	} {
		for _, step := range []int{1, 7, len(long)} {
			var p headParser
			var err error
			for i := 0; i < len(long) && err == nil; i += step {
				_, _, err = p.feed([]byte(long[i:min(i+step, len(long))]), 1024)
			}
			if !errors.Is(err, errMalformed) || !strings.Contains(err.Error(), "longer than 1024") {
				t.Errorf("%.20q... fed %d bytes at a time: %v: want a head longer than 1024 bytes", long[17:], step, err)
			}
		}
	}
	for _, in := range []string{"HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"} {
		var p headParser
		if _, _, err := p.feed([]byte(in), maxHead); !errors.Is(err, errMalformed) {
			t.Errorf("%q: %v: want a malformed answer", in, err)
		}
	}
}

// Object keys are what fmt made of them before: a run's manifest, --verify
// and a resumed experiment find them by name.
func TestAppendPaddedIsFmts(t *testing.T) {
	for _, n := range []int{0, 7, 42, 999, 1000, 12345, 99999999, 123456789} {
		for _, width := range []int{4, 8} {
			if got, want := string(appendPadded([]byte("k"), n, width)), fmt.Sprintf("k%0*d", width, n); got != want {
				t.Errorf("appendPadded(%d, %d) = %q, want %q", n, width, got, want)
			}
		}
	}
}
