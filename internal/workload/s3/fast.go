package s3

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/iolab/iolab/internal/rawconn"
)

// fastConn is one worker's own connection for GET, PUT, HEAD and single
// DELETE: the request is
// signed with a signing key derived once a day (SigV4 derives it from four
// HMACs; minio-go does so for every request) and written straight to the
// connection, and the response's framing is read on the worker's own
// goroutine (readResponse). net/http's Transport hands every request between
// three goroutines; for 1 KiB objects that, and the signing, are most of a
// client's CPU. Everything else — LIST, batch DELETE, multipart, COPY,
// preflight — goes through minio-go.
type fastConn struct {
	*sigv4
	c        *client
	endpoint *url.URL
	conn     net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	addr     *net.TCPAddr // the endpoint's address when it is an IP literal
	dialer   net.Dialer   // without TCP keep-alive probes: four system calls fewer per connection
	tlsConf  *tls.Config
	unwatch  func() bool   // stops the watch that unblocks conn when the run's context ends
	timeout  time.Duration // --timeout: each request's deadline
	head     []byte        // the request head being sent
}

// sigv4 writes signed request heads for one connection at a time: its
// buffers are reused by every request.
type sigv4 struct {
	host   string // the endpoint's host:port, as the Host header
	region string
	access string
	secret string
	token  string
	day    string    // the day mac's key is for
	mac    hash.Hash // HMAC-SHA256 keyed with the day's signing key
	sig    []byte    // the last signature (its own buffer: a local one would escape through mac.Sum)

	date, path, scope, scratch []byte
	second                     int64 // the Unix second date is of
}

// newSigner signs for c's endpoint with the job's credentials; false when
// there are none to sign with.
func newSigner(c *client, o *Options) (*sigv4, *url.URL, bool) {
	u, err := url.Parse(c.endpoint)
	if err != nil {
		return nil, nil, false
	}
	v, err := credentialsOf(o).GetWithContext(nil)
	if err != nil || v.AccessKeyID == "" {
		return nil, nil, false
	}
	return &sigv4{host: u.Host, region: o.Region, access: v.AccessKeyID, secret: v.SecretAccessKey, token: v.SessionToken}, u, true
}

// newFastConn returns nil when the fast path does not apply: HTTP/2 (it
// speaks HTTP/1.1), a pool smaller than the concurrency (a worker's own
// connection cannot churn as a shared pool does), virtual-host addressing,
// credentials that cannot be read.
func newFastConn(c *client, o *Options) *fastConn {
	if o.Lookup == "dns" || o.HTTP2 || o.pool() < o.Concurrency {
		return nil
	}
	sig, u, ok := newSigner(c, o)
	if !ok {
		return nil
	}
	tlsConf, err := o.tlsConfig(u.Hostname())
	if err != nil {
		return nil
	}
	// An endpoint given as an IP address is dialed with raw system calls;
	// a name goes through net.Dialer, which resolves it for each connection.
	var addr *net.TCPAddr
	if ip := net.ParseIP(u.Hostname()); ip != nil {
		port, err := strconv.Atoi(u.Port())
		if err != nil {
			port = map[string]int{"http": 80, "https": 443}[u.Scheme]
		}
		addr = &net.TCPAddr{IP: ip, Port: port}
	}
	return &fastConn{sigv4: sig, c: c, endpoint: u, addr: addr, dialer: net.Dialer{KeepAlive: -1}, tlsConf: tlsConf, timeout: o.Timeout}
}

func (f *fastConn) close() {
	if f.conn != nil {
		f.unwatch()
		f.conn.Close()
		f.conn = nil
	}
}

func (f *fastConn) connect(ctx context.Context) error {
	if f.conn != nil {
		return nil
	}
	runCtx := ctx
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	var conn net.Conn
	var err error
	if f.addr != nil {
		conn, err = rawconn.Dial(ctx, f.addr)
	} else if conn, err = f.dialer.DialContext(ctx, "tcp", f.endpoint.Host); err == nil {
		conn = rawconn.Wrap(conn)
	}
	if err != nil {
		return err
	}
	f.c.dialed.Add(1)
	if f.endpoint.Scheme == "https" {
		tc := tls.Client(conn, f.tlsConf)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return err
		}
		conn = tc
	}
	// Servers that close every connection (versitygw does) make this a
	// per-request path: the buffers are kept across connections.
	if f.br == nil {
		f.br, f.bw = bufio.NewReaderSize(conn, 64<<10), bufio.NewWriterSize(conn, 64<<10)
	} else {
		f.br.Reset(conn)
		f.bw.Reset(conn)
	}
	f.conn = conn
	// The run's hard stop must end a request a hung server never answers,
	// as it does for minio-go's: a deadline in the past wakes the worker.
	f.unwatch = context.AfterFunc(runCtx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	return nil
}

// bound gives the request about to be sent its --timeout; the run's hard
// stop, if it came, keeps the deadline it set.
func (f *fastConn) bound(ctx context.Context) {
	if f.timeout <= 0 {
		return
	}
	_ = f.conn.SetDeadline(time.Now().Add(f.timeout))
	if ctx.Err() != nil {
		_ = f.conn.SetDeadline(time.Unix(1, 0))
	}
}

// signer returns the HMAC keyed with the day's signing key; SigV4 derives
// that key from four HMACs, so it is derived once per day and reused.
func (f *sigv4) signer(day []byte) hash.Hash {
	if string(day) != f.day {
		k := hmacSHA256([]byte("AWS4"+f.secret), string(day))
		for _, part := range []string{f.region, "s3", "aws4_request"} {
			k = hmacSHA256(k, part)
		}
		f.day, f.mac = string(day), hmac.New(sha256.New, k)
	}
	f.mac.Reset()
	return f.mac
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// appendRequest appends a signed request head (UNSIGNED-PAYLOAD, as
// minio-go sends with DisableContentSha256) to dst and returns it. It
// builds the canonical request and the string to sign in the signer's own
// buffers: a small object's request costs no allocation, and the head is
// written once, where it is sent from.
func (f *sigv4) appendRequest(dst []byte, method, bucket, key string, size int64, rangeHdr string) []byte {
	if now := time.Now(); now.Unix() != f.second || f.date == nil {
		f.date, f.second = now.UTC().AppendFormat(f.date[:0], "20060102T150405Z"), now.Unix()
	}
	amzDate := f.date // formatted once a second
	day := amzDate[:8]
	path := append(append(append(f.path[:0], '/'), bucket...), '/')
	path = appendEncodedPath(path, key)
	f.path = path
	signed := "host;x-amz-content-sha256;x-amz-date"
	if f.token != "" {
		signed += ";x-amz-security-token"
	}

	c := append(f.scratch[:0], method...)
	c = append(append(append(c, '\n'), path...), "\n\nhost:"...)
	c = append(append(c, f.host...), "\nx-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:"...)
	c = append(append(c, amzDate...), '\n')
	if f.token != "" {
		c = append(append(append(c, "x-amz-security-token:"...), f.token...), '\n')
	}
	c = append(append(append(c, '\n'), signed...), "\nUNSIGNED-PAYLOAD"...)
	f.scratch = c
	sum := sha256.Sum256(c)
	var sumHex [2 * sha256.Size]byte
	hex.Encode(sumHex[:], sum[:])

	scope := append(append(append(f.scope[:0], day...), '/'), f.region...)
	scope = append(scope, "/s3/aws4_request"...)
	f.scope = scope
	ts := append(f.scratch[:0], "AWS4-HMAC-SHA256\n"...)
	ts = append(append(append(append(append(ts, amzDate...), '\n'), scope...), '\n'), sumHex[:]...)
	mac := f.signer(day)
	mac.Write(ts)
	f.sig = mac.Sum(f.sig[:0])

	h := append(dst, method...)
	h = append(append(append(h, ' '), path...), " HTTP/1.1\r\nHost: "...)
	h = append(append(h, f.host...), "\r\nUser-Agent: iolab\r\nX-Amz-Content-Sha256: UNSIGNED-PAYLOAD\r\nX-Amz-Date: "...)
	h = append(append(h, amzDate...), "\r\n"...)
	if f.token != "" {
		h = append(append(append(h, "X-Amz-Security-Token: "...), f.token...), "\r\n"...)
	}
	h = append(append(append(h, "Authorization: AWS4-HMAC-SHA256 Credential="...), f.access...), '/')
	h = append(append(append(h, scope...), ", SignedHeaders="...), signed...)
	h = hex.AppendEncode(append(h, ", Signature="...), f.sig)
	h = append(h, "\r\n"...)
	if rangeHdr != "" {
		h = append(append(append(h, "Range: "...), rangeHdr...), "\r\n"...)
	}
	if method == http.MethodPut {
		h = strconv.AppendInt(append(h, "Content-Length: "...), size, 10)
		h = append(h, "\r\nContent-Type: application/octet-stream\r\n"...)
	}
	return append(h, "\r\n"...)
}

// do sends one request and copies the response body to dst, calling
// firstByte when the response begins. It returns the body bytes. A
// request that got no whole answer head is a *noAnswer (it may be sent
// again); one its --timeout ended, a *timeoutError.
func (f *fastConn) do(ctx context.Context, method, bucket, key string, body io.Reader, size int64, rangeHdr string,
	dst io.Writer, buf []byte, firstByte func()) (int64, error) {
	if err := f.connect(ctx); err != nil {
		return 0, &noAnswer{deadlineErr(ctx, f.timeout, err)}
	}
	f.bound(ctx)
	noAnswerFrom := func(err error) error {
		f.close()
		return &noAnswer{deadlineErr(ctx, f.timeout, err)}
	}
	f.head = f.appendRequest(f.head[:0], method, bucket, key, size, rangeHdr)
	f.bw.Write(f.head)
	if body != nil {
		if _, err := io.CopyBuffer(f.bw, struct{ io.Reader }{body}, buf); err != nil {
			return 0, noAnswerFrom(err)
		}
	}
	if err := f.bw.Flush(); err != nil {
		return 0, noAnswerFrom(err)
	}
	if _, err := f.br.Peek(1); err != nil {
		return 0, noAnswerFrom(err)
	}
	firstByte()
	resp, err := readResponse(f.br, method)
	if err != nil {
		return 0, noAnswerFrom(err)
	}
	if resp.status >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.body, 64<<10))
		f.finish(&resp)
		return 0, errorResponse(method, resp.status, b)
	}
	n, err := io.CopyBuffer(dst, struct{ io.Reader }{resp.body}, buf)
	if err != nil {
		f.close()
		return n, deadlineErr(ctx, f.timeout, err)
	}
	f.finish(&resp)
	return n, nil
}

// finish keeps the connection for the next request unless the server is
// closing it.
func (f *fastConn) finish(resp *response) {
	if _, err := io.Copy(io.Discard, resp.body); err != nil || resp.close {
		f.close()
	}
}

// appendEncodedPath appends an object key percent-encoded as SigV4 wants
// it: everything but unreserved characters and "/".
func appendEncodedPath(b []byte, key string) []byte {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b = append(b, c)
		} else {
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
		}
	}
	return b
}
