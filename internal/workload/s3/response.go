package s3

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"
)

// response is what the fast path needs of an HTTP/1.x response: its status,
// its body, and whether the server closes the connection after it.
// net/http.ReadResponse builds a canonicalised header map for every
// response; for a 1 KiB object that map costs more than the signature.
type response struct {
	status int
	body   io.Reader
	close  bool
}

var errMalformed = errors.New("malformed HTTP response")

// readResponse reads a response head from br and frames its body: by
// Content-Length, chunked transfer coding, or (without either) until the
// server closes the connection. Interim 1xx responses are skipped.
func readResponse(br *bufio.Reader, method string) (response, error) {
	for {
		r, length, chunked, err := readHead(br)
		if err != nil {
			return r, err
		}
		switch {
		case r.status >= 100 && r.status < 200 && r.status != http.StatusSwitchingProtocols:
			continue // 100 Continue, 103 Early Hints: the real response follows
		case method == http.MethodHead || r.status == http.StatusNoContent || r.status == http.StatusNotModified:
			r.body = http.NoBody
		case chunked:
			r.body = &chunkedBody{r: httputil.NewChunkedReader(br), br: br}
		case length >= 0:
			r.body = &lengthBody{r: br, left: length}
		default:
			r.body, r.close = br, true
		}
		return r, nil
	}
}

// errBodyLength is a body that is not the length it should be: cut short
// by the connection, or not the object's size.
var errBodyLength = errors.New("body of the wrong length")

// lengthBody is a body framed by Content-Length: its bytes, then io.EOF;
// a connection that ends before all of them came is errBodyLength, where
// an io.LimitReader would pass the rest off as a whole, shorter body.
type lengthBody struct {
	r    io.Reader
	left int64
}

func (b *lengthBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if err == io.EOF && b.left > 0 {
		err = fmt.Errorf("%w: the connection ended %d bytes before its Content-Length", errBodyLength, b.left)
	}
	return n, err
}

// head is what a response head says of the response's framing.
type head struct {
	response
	length  int64 // Content-Length; -1 if none
	chunked bool
	http10  bool
}

// readHead parses the status line and the headers that frame the body.
func readHead(br *bufio.Reader) (r response, length int64, chunked bool, err error) {
	line, err := readLine(br)
	if err != nil {
		return r, 0, false, err
	}
	h, err := statusLine(line)
	for err == nil {
		if line, err = readLine(br); err == nil {
			if len(line) == 0 {
				return h.response, h.length, h.chunked, nil
			}
			err = h.header(line)
		}
	}
	return r, 0, false, err
}

// parseHead parses a whole response head, its lines ending in CRLF (or
// LF), the blank line that ends it included.
func parseHead(b []byte) (head, error) {
	line, b, _ := bytes.Cut(b, []byte("\n"))
	h, err := statusLine(bytes.TrimSuffix(line, []byte("\r")))
	for err == nil {
		line, b, _ = bytes.Cut(b, []byte("\n"))
		if line = bytes.TrimSuffix(line, []byte("\r")); len(line) == 0 {
			return h, nil
		}
		err = h.header(line)
	}
	return h, err
}

// statusLine parses "HTTP/1.1 200 OK".
func statusLine(line []byte) (h head, err error) {
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return h, fmt.Errorf("%w: status line %q", errMalformed, line)
	}
	h.http10 = line[7] == '0'
	h.status, err = strconv.Atoi(string(line[9:12]))
	if err != nil || h.status < 100 || h.status > 999 {
		return h, fmt.Errorf("%w: status line %q", errMalformed, line)
	}
	h.close, h.length = h.http10, -1
	return h, nil
}

// header takes in one header line, those that frame the body.
func (h *head) header(line []byte) error {
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 {
		return fmt.Errorf("%w: header line %q", errMalformed, line)
	}
	name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
	switch {
	case bytes.EqualFold(name, []byte("Content-Length")):
		n, err := strconv.ParseInt(string(value), 10, 64)
		if err != nil || n < 0 || (h.length >= 0 && n != h.length) {
			return fmt.Errorf("%w: Content-Length %q", errMalformed, value)
		}
		h.length = n
	case bytes.EqualFold(name, []byte("Transfer-Encoding")):
		h.chunked = bytes.EqualFold(value, []byte("chunked"))
		if !h.chunked {
			return fmt.Errorf("%w: Transfer-Encoding %q", errMalformed, value)
		}
	case bytes.EqualFold(name, []byte("Connection")):
		for rest := value; len(rest) > 0; { // bytes.Split without its slice
			var tok []byte
			tok, rest, _ = bytes.Cut(rest, []byte(","))
			tok = bytes.TrimSpace(tok)
			if bytes.EqualFold(tok, []byte("close")) {
				h.close = true
			} else if h.http10 && bytes.EqualFold(tok, []byte("keep-alive")) {
				h.close = false
			}
		}
	}
	return nil
}

// readLine returns one line without its CRLF; the slice is valid until the
// next read from br.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, fmt.Errorf("%w: a header line longer than %d bytes", errMalformed, br.Size())
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r")), nil
}

// chunkedBody reads a chunked body and, at its end, the trailer section, so
// the connection is positioned at the next response.
type chunkedBody struct {
	r    io.Reader
	br   *bufio.Reader
	done bool
}

func (c *chunkedBody) Read(p []byte) (int, error) {
	if c.done {
		return 0, io.EOF
	}
	n, err := c.r.Read(p)
	if err == io.EOF {
		for {
			line, lerr := readLine(c.br)
			if lerr != nil {
				return n, lerr
			}
			if len(line) == 0 {
				break
			}
		}
		c.done = true
	}
	return n, err
}
