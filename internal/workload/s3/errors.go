package s3

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/minio/minio-go/v7"

	"github.com/iolab/iolab/internal/metrics"
)

// What a server says when a request fails is kept in every error: the
// HTTP status, the S3 code and message — or, when the body is not an S3
// error at all, its first line. minio-go makes up a code for a body it
// cannot read (a 404 becomes NoSuchKey, "The specified key does not
// exist."), which hid unsupported operations behind a missing key; here
// such an answer is its status, and 404/405/501 ask whether the server
// supports the operation.

// notS3 starts the message of an answer whose body is not an S3 error.
const notS3 = "no S3 error in the answer"

// errorBodies marks failed answers whose body is not an S3 error, through
// the headers minio-go takes a code and message from, so that its error
// carries the status and the body's first line instead of a made-up code.
// HEAD answers have no body and are left to minio-go.
type errorBodies struct{ rt http.RoundTripper }

func (e errorBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := e.rt.RoundTrip(req)
	if err != nil || resp.StatusCode < 300 || resp.StatusCode == http.StatusNotModified || req.Method == http.MethodHead {
		return resp, err
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
	if rerr == nil && !isS3Error(body) && resp.Header.Get("x-minio-error-code") == "" {
		resp.Header.Set("x-minio-error-code", strconv.Itoa(resp.StatusCode))
		resp.Header.Set("x-minio-error-desc", notS3Message(body))
	}
	return resp, nil
}

// isS3Error says the body is an S3 error document.
func isS3Error(body []byte) bool {
	var e struct {
		XMLName xml.Name
		Code    string
	}
	return xml.Unmarshal(body, &e) == nil && e.XMLName.Local == "Error" && e.Code != ""
}

// notS3Message says what came instead of an S3 error: the body's first
// line, or that there was none. (It must not end with a quote: minio-go
// trims them.)
func notS3Message(body []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimSpace(body), []byte("\n"))
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return notS3 + " (empty body)"
	}
	s := string(line)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "?")
	}
	return fmt.Sprintf("%s; the body begins %q (%d bytes)", notS3, s, len(body))
}

// errorResponse is a failed answer to a request of the fast path, as
// errorBodies and minio-go make it, so errors read and count the same on
// both paths.
func errorResponse(method string, status int, body []byte) error {
	var e struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	switch {
	case isS3Error(body):
		_ = xml.Unmarshal(body, &e)
	case method == http.MethodHead && status == http.StatusNotFound:
		e.Code, e.Message = "NoSuchKey", "The specified key does not exist."
	case method == http.MethodHead && status == http.StatusForbidden:
		e.Code, e.Message = "AccessDenied", "Access Denied." // as minio-go says it
	case method == http.MethodHead:
		e.Code, e.Message = strconv.Itoa(status), "a HEAD answer has no body to say more"
	default:
		e.Code, e.Message = strconv.Itoa(status), notS3Message(body)
	}
	return minio.ErrorResponse{Code: e.Code, Message: e.Message, StatusCode: status}
}

// malformed says err is an answer that does not parse as S3's (a LIST
// whose dates are not dates, XML that is not XML).
func malformed(err error) bool {
	var syntax *xml.SyntaxError
	var unmarshal xml.UnmarshalError
	var date *time.ParseError
	var num *strconv.NumError
	return errors.As(err, &syntax) || errors.As(err, &unmarshal) || errors.As(err, &date) || errors.As(err, &num)
}

// cutShort is a body read's error as iolab's own clients say it: a body
// net/http (minio-go's client, verify's) found cut short is errBodyLength,
// as it is theirs.
func cutShort(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %v", errBodyLength, err)
	}
	return err
}

// errorCode is how a failed operation is counted: the S3 error code, else
// the HTTP status, "malformed-response" for an answer that is not S3's
// (a success without the document it should carry included), else
// "network".
func errorCode(err error) string {
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return "malformed-response"
	case resp.Code != "":
		return resp.Code
	case resp.StatusCode != 0:
		return strconv.Itoa(resp.StatusCode)
	case errors.As(err, new(*timeoutError)):
		return "timeout"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	case errors.Is(err, errBodyLength):
		return "body-length"
	case errors.Is(err, errContent):
		return "content"
	case errors.Is(err, errShortList):
		return "list-short"
	case malformed(err), errors.Is(err, errMalformed), strings.Contains(err.Error(), "malformed HTTP"):
		// (An answer that is not HTTP, as iolab's clients and net/http's
		// transport each say it.)
		return "malformed-response"
	}
	return "network"
}

// serverSaid is what the server answered, for an error message: "HTTP 403
// SignatureDoesNotMatch: The request signature ...".
func serverSaid(err error) string {
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return fmt.Sprintf("HTTP %d, but not the answer S3 gives: a malformed success (%s)", resp.StatusCode, firstOf(resp.Message, resp.Code))
	case resp.StatusCode != 0 && strings.HasPrefix(resp.Message, notS3):
		return fmt.Sprintf("HTTP %d, %s", resp.StatusCode, resp.Message)
	case resp.StatusCode != 0 && (resp.Code == strconv.Itoa(resp.StatusCode) || resp.Code == ""):
		return strings.TrimSuffix(fmt.Sprintf("HTTP %d: %s", resp.StatusCode, resp.Message), ": ")
	case resp.StatusCode != 0:
		return strings.TrimSuffix(fmt.Sprintf("HTTP %d %s: %s", resp.StatusCode, resp.Code, resp.Message), ": ")
	case malformed(err):
		return "an answer that does not parse as S3's: " + err.Error()
	}
	return err.Error()
}

// explain is a failed operation's error: the operation, what the server
// said, and for a status that means "no such thing here" without an S3
// error, whether the server supports the operation at all.
func explain(op metrics.Op, err error) error {
	msg := serverSaid(err)
	resp := minio.ToErrorResponse(err)
	switch code := resp.StatusCode; {
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed || code == http.StatusNotImplemented:
		if strings.HasPrefix(resp.Message, notS3) {
			msg += fmt.Sprintf("; %s not supported by this server?", op)
		}
	case code >= 200 && code < 300:
		// A success without the result S3 sends (an empty 200 to COPY):
		// what a server that routes an operation it lacks to a generic
		// handler answers.
		msg += fmt.Sprintf("; %s not supported by this server?", op)
	}
	return &opError{msg: fmt.Sprintf("%s: %s", op, msg), err: err}
}

// opError is a failed operation: its message says what the server said,
// and it wraps the client's error for errors.Is and As.
type opError struct {
	msg string
	err error
}

func (e *opError) Error() string { return e.msg }
func (e *opError) Unwrap() error { return e.err }

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
