package s3

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
)

// fastConn is one worker's own connection for GET and PUT: the request is
// signed with a signing key derived once a day (SigV4 derives it from four
// HMACs; minio-go does so for every request) and written straight to the
// connection, and the response is parsed by net/http's ReadResponse on the
// worker's own goroutine. net/http's Transport hands every request between
// three goroutines; for 1 KiB objects that, and the signing, are most of a
// client's CPU. Everything else — HEAD, LIST, DELETE, multipart, COPY,
// preflight — goes through minio-go.
type fastConn struct {
	c        *client
	endpoint *url.URL
	region   string
	access   string
	secret   string
	token    string
	day      string
	key      []byte
	conn     net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	dialer   net.Dialer
	tlsConf  *tls.Config
}

// newFastConn returns nil when the fast path does not apply (virtual-host
// addressing, credentials that cannot be read).
func newFastConn(c *client, o *Options) *fastConn {
	if o.Lookup == "dns" {
		return nil
	}
	u, err := url.Parse(o.Endpoint)
	if err != nil {
		return nil
	}
	v, err := credentialsOf(o).GetWithContext(nil)
	if err != nil || v.AccessKeyID == "" {
		return nil
	}
	return &fastConn{c: c, endpoint: u, region: o.Region, access: v.AccessKeyID, secret: v.SecretAccessKey,
		token: v.SessionToken, tlsConf: &tls.Config{InsecureSkipVerify: o.Insecure, ServerName: u.Hostname()}} //nolint:gosec // only with --insecure
}

func (f *fastConn) close() {
	if f.conn != nil {
		f.conn.Close()
		f.conn = nil
	}
}

func (f *fastConn) connect(ctx context.Context) error {
	if f.conn != nil {
		return nil
	}
	conn, err := f.dialer.DialContext(ctx, "tcp", f.endpoint.Host)
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
	f.conn, f.br, f.bw = conn, bufio.NewReaderSize(conn, 64<<10), bufio.NewWriterSize(conn, 64<<10)
	return nil
}

// signingKey is derived once per day.
func (f *fastConn) signingKey(day string) []byte {
	if day != f.day {
		k := hmacSHA256([]byte("AWS4"+f.secret), day)
		for _, part := range []string{f.region, "s3", "aws4_request"} {
			k = hmacSHA256(k, part)
		}
		f.day, f.key = day, k
	}
	return f.key
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// writeRequest writes a signed request head (UNSIGNED-PAYLOAD, as minio-go
// sends with DisableContentSha256).
func (f *fastConn) writeRequest(method, bucket, key string, size int64, rangeHdr string) {
	now := time.Now().UTC()
	amzDate, day := now.Format("20060102T150405Z"), now.Format("20060102")
	path := "/" + bucket + "/" + encodePath(key)
	headers := "host:" + f.endpoint.Host + "\nx-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:" + amzDate + "\n"
	signed := "host;x-amz-content-sha256;x-amz-date"
	if f.token != "" {
		headers += "x-amz-security-token:" + f.token + "\n"
		signed += ";x-amz-security-token"
	}
	canonical := method + "\n" + path + "\n\n" + headers + "\n" + signed + "\nUNSIGNED-PAYLOAD"
	sum := sha256.Sum256([]byte(canonical))
	scope := day + "/" + f.region + "/s3/aws4_request"
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	sig := hex.EncodeToString(hmacSHA256(f.signingKey(day), toSign))
	w := f.bw
	fmt.Fprintf(w, "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: iolab\r\nX-Amz-Content-Sha256: UNSIGNED-PAYLOAD\r\nX-Amz-Date: %s\r\n",
		method, path, f.endpoint.Host, amzDate)
	if f.token != "" {
		fmt.Fprintf(w, "X-Amz-Security-Token: %s\r\n", f.token)
	}
	fmt.Fprintf(w, "Authorization: AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s\r\n", f.access, scope, signed, sig)
	if rangeHdr != "" {
		fmt.Fprintf(w, "Range: %s\r\n", rangeHdr)
	}
	if method == http.MethodPut {
		fmt.Fprintf(w, "Content-Length: %d\r\nContent-Type: application/octet-stream\r\n", size)
	}
	w.WriteString("\r\n")
}

// do sends one request and copies the response body to dst, calling
// firstByte when the response begins. It returns the body bytes.
func (f *fastConn) do(ctx context.Context, method, bucket, key string, body io.Reader, size int64, rangeHdr string,
	dst io.Writer, buf []byte, firstByte func()) (int64, error) {
	if err := f.connect(ctx); err != nil {
		return 0, err
	}
	if d, ok := ctx.Deadline(); ok {
		_ = f.conn.SetDeadline(d)
	}
	f.writeRequest(method, bucket, key, size, rangeHdr)
	if body != nil {
		if _, err := io.CopyBuffer(f.bw, struct{ io.Reader }{body}, buf); err != nil {
			f.close()
			return 0, err
		}
	}
	if err := f.bw.Flush(); err != nil {
		f.close()
		return 0, err
	}
	if _, err := f.br.Peek(1); err != nil {
		f.close()
		return 0, err
	}
	firstByte()
	resp, err := http.ReadResponse(f.br, &http.Request{Method: method})
	if err != nil {
		f.close()
		return 0, err
	}
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		f.finish(resp)
		return 0, errorResponse(resp, b)
	}
	n, err := io.CopyBuffer(dst, struct{ io.Reader }{resp.Body}, buf)
	if err != nil {
		f.close()
		return n, err
	}
	f.finish(resp)
	return n, nil
}

// finish keeps the connection for the next request unless the server is
// closing it.
func (f *fastConn) finish(resp *http.Response) {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Close {
		f.close()
	}
}

// errorResponse is an S3 error as minio-go reports it, so errors are
// counted by the same codes on both paths.
func errorResponse(resp *http.Response, body []byte) error {
	var e struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	_ = xml.Unmarshal(body, &e)
	if e.Code == "" {
		e.Code = strconv.Itoa(resp.StatusCode)
		if resp.StatusCode == http.StatusNotFound {
			e.Code = "NoSuchKey"
		}
	}
	return minio.ErrorResponse{Code: e.Code, Message: e.Message, StatusCode: resp.StatusCode}
}

// encodePath percent-encodes an object key as SigV4 wants it: everything
// but unreserved characters and "/".
func encodePath(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
