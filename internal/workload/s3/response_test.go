package s3

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

// next is a response that follows the one under test on the same
// connection; it parses only if the first one's body was framed exactly.
const next = "HTTP/1.1 204 No Content\r\n\r\n"

func TestReadResponse(t *testing.T) {
	tests := []struct {
		name, method, raw string
		status            int
		body              string
		close             bool
		followed          bool // next comes after the response
	}{
		{"content-length", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: \"x\"\r\n\r\nhello", 200, "hello", false, true},
		{"header case and spaces", "GET", "HTTP/1.1 200 OK\r\ncontent-length:   3  \r\n\r\nabc", 200, "abc", false, true},
		{"chunked with trailer", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\nX-Sum: 1\r\n\r\n",
			200, "abcde", false, true},
		{"error body", "PUT", "HTTP/1.1 403 Forbidden\r\nContent-Length: 7\r\n\r\n<Error>", 403, "<Error>", false, true},
		{"connection close", "GET", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", 200, "ok", true, false},
		{"http/1.0 closes", "GET", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, "ok", true, false},
		{"http/1.0 keep-alive", "GET", "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok", 200, "ok", false, true},
		{"interim 100", "PUT", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 200, "", false, true},
		{"head has no body", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 1024\r\n\r\n", 200, "", false, true},
		{"204 has no body", "GET", "HTTP/1.1 204 No Content\r\n\r\n", 204, "", false, true},
		{"no length: until close", "GET", "HTTP/1.1 200 OK\r\n\r\nto the end", 200, "to the end", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := tt.raw
			if tt.followed {
				raw += next
			}
			br := bufio.NewReader(strings.NewReader(raw))
			r, err := readResponse(br, tt.method)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(r.body)
			if err != nil {
				t.Fatal(err)
			}
			if r.status != tt.status || string(body) != tt.body || r.close != tt.close {
				t.Fatalf("got status %d body %q close %v, want %d %q %v", r.status, body, r.close, tt.status, tt.body, tt.close)
			}
			if !tt.followed {
				return
			}
			r2, err := readResponse(br, "GET")
			if err != nil || r2.status != 204 {
				t.Fatalf("the next response: status %d, %v", r2.status, err)
			}
		})
	}
}

func TestReadResponseMalformed(t *testing.T) {
	for _, raw := range []string{
		"",
		"SSH-2.0-OpenSSH\r\n",
		"HTTP/1.1 2x0 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
		"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", // cut in the head
	} {
		_, err := readResponse(bufio.NewReader(strings.NewReader(raw)), "GET")
		if err == nil {
			t.Errorf("%q: no error", raw)
		} else if !errors.Is(err, errMalformed) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%q: %v", raw, err)
		}
	}
}
