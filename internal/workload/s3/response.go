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

// headParser reads a response head as it arrives, a line at a time: each
// byte is looked at once, however the head is cut into pieces (a server
// that sends a byte at a time costs no more than one that sends it whole).
// Lines end in CRLF or LF, as readHead reads them.
type headParser struct {
	h       head
	started bool   // the status line is read
	partial []byte // a line that has not ended yet
	size    int    // bytes of the head so far
}

// reset readies p for the next head (after a 1xx answer, or for the next
// request on the connection).
func (p *headParser) reset() {
	*p = headParser{partial: p.partial[:0]}
}

// feed reads b's bytes and returns how many belong to the head and
// whether the head ended among them; what follows them is the body. A
// head longer than limit bytes is malformed.
func (p *headParser) feed(b []byte, limit int) (used int, done bool, err error) {
	for used < len(b) && !done && err == nil {
		i := bytes.IndexByte(b[used:], '\n')
		if i < 0 {
			i = len(b) - used
			if p.size += i; p.size > limit {
				return used, false, fmt.Errorf("%w: a head longer than %d bytes", errMalformed, limit)
			}
			p.partial = append(p.partial, b[used:]...)
			return len(b), false, nil
		}
		line := b[used : used+i]
		used += i + 1
		if p.size += i + 1; p.size > limit {
			return used, false, fmt.Errorf("%w: a head longer than %d bytes", errMalformed, limit)
		}
		if len(p.partial) > 0 {
			p.partial = append(p.partial, line...)
			line, p.partial = p.partial, p.partial[:0]
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case !p.started:
			p.started = true
			p.h, err = statusLine(line)
		case len(line) == 0:
			done = true
		default:
			err = p.h.header(line)
		}
	}
	return used, done, err
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
	// Most of a server's headers are none of these three: their names'
	// lengths tell them apart before any byte is compared.
	name := line[:colon]
	switch {
	case len(name) == len("Content-Length") && bytes.EqualFold(name, []byte("Content-Length")):
		value := bytes.TrimSpace(line[colon+1:])
		n, err := strconv.ParseInt(string(value), 10, 64)
		if err != nil || n < 0 || (h.length >= 0 && n != h.length) {
			return fmt.Errorf("%w: Content-Length %q", errMalformed, value)
		}
		h.length = n
	case len(name) == len("Transfer-Encoding") && bytes.EqualFold(name, []byte("Transfer-Encoding")):
		value := bytes.TrimSpace(line[colon+1:])
		h.chunked = bytes.EqualFold(value, []byte("chunked"))
		if !h.chunked {
			return fmt.Errorf("%w: Transfer-Encoding %q", errMalformed, value)
		}
	case len(name) == len("Connection") && bytes.EqualFold(name, []byte("Connection")):
		for rest := line[colon+1:]; len(rest) > 0; { // bytes.Split without its slice
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
