package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
)

// Every request is bounded by --timeout and sent at most 1 + --retries
// times, on both paths (minio-go's and the workers' own connections), and
// every retry is counted against the operation that made it: a flaky
// server shows as retries, never as latency nobody can explain.

// timeoutError is a request that had no whole answer within --timeout.
type timeoutError struct{ after time.Duration }

func (e *timeoutError) Error() string {
	return fmt.Sprintf("no whole answer within --timeout %v", e.after)
}

// Is makes it a deadline for minio-go, which sends such a request again.
func (e *timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// transport is minio-go's way to the server: each request (each attempt)
// bounded by --timeout, counted for the operation in progress (attempts),
// and a failed answer's body made readable (errorBodies).
type transport struct {
	rt      http.RoundTripper
	timeout time.Duration
}

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if a, ok := req.Context().Value(attemptsKey{}).(*attempts); ok {
		a.sent(req)
	}
	if t.timeout <= 0 {
		return t.rt.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	resp, err := t.rt.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, t.timedOut(ctx, err)
	}
	resp.Body = &timedBody{ReadCloser: resp.Body, ctx: ctx, cancel: cancel, t: t}
	return resp, nil
}

// timedOut says a request its own deadline ended timed out.
func (t transport) timedOut(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) && errors.Is(err, context.DeadlineExceeded) {
		return &timeoutError{t.timeout}
	}
	return err
}

// timedBody is a body read under its request's --timeout.
type timedBody struct {
	io.ReadCloser
	ctx    context.Context
	cancel context.CancelFunc
	t      transport
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = b.t.timedOut(b.ctx, err)
	}
	return n, err
}

func (b *timedBody) Close() error {
	defer b.cancel()
	return b.ReadCloser.Close()
}

// attempts tells the retries among the requests of one operation: a
// request sent again (the same method and URL; a multipart upload's parts
// differ by their number) is a retry.
type attempts struct {
	mu      sync.Mutex
	seen    []string
	retries int64
}

type attemptsKey struct{}

func (a *attempts) sent(req *http.Request) {
	k := req.Method + " " + req.URL.String()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.seen {
		if s == k {
			a.retries++
			return
		}
	}
	a.seen = append(a.seen, k)
}

// take returns the retries since the last take and starts a new operation.
func (a *attempts) take() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.retries
	a.retries, a.seen = 0, a.seen[:0]
	return n
}

// retryable says a failed request of the fast path may be sent again, as
// minio-go sends its own again: no whole answer head came (a connection
// refused, reset or timed out, a head that does not parse), or the answer
// asks for it (503 SlowDown, 500, 429, ...). A body cut short after a
// good answer is not: it was partly consumed.
func retryable(err error) bool {
	var na *noAnswer
	if errors.As(err, &na) {
		return true
	}
	resp := minio.ToErrorResponse(err)
	return resp.StatusCode != 0 && (retryStatus[resp.StatusCode] || retryCodes[resp.Code])
}

// retryStatus and retryCodes are the answers minio-go sends a request
// again for.
var (
	retryStatus = map[int]bool{http.StatusRequestTimeout: true, http.StatusTooManyRequests: true, 499: true,
		http.StatusInternalServerError: true, http.StatusBadGateway: true, http.StatusServiceUnavailable: true,
		http.StatusGatewayTimeout: true, 520: true}
	retryCodes = map[string]bool{"RequestError": true, "RequestTimeout": true, "Throttling": true, "ThrottlingException": true,
		"RequestLimitExceeded": true, "RequestThrottled": true, "InternalError": true, "SlowDown": true,
		"SlowDownWrite": true, "SlowDownRead": true}
)

// noAnswer is a request of the fast path that got no whole answer head.
type noAnswer struct{ err error }

func (e *noAnswer) Error() string { return e.err.Error() }
func (e *noAnswer) Unwrap() error { return e.err }

// backoff waits before retry number try (from 0) as minio-go does: a
// random time up to 200 ms x 2^try, at most 1 s. It says false when the
// run's hard stop came first.
func backoff(ctx context.Context, rng *rand.Rand, try int) bool {
	t := time.NewTimer(backoffDelay(rng, try))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// backoffDelay is the wait before retry number try.
func backoffDelay(rng *rand.Rand, try int) time.Duration {
	d := min(minio.DefaultRetryUnit<<min(try, 16), minio.DefaultRetryCap)
	return d - time.Duration(rng.Float64()*float64(d))
}

// deadlineErr says a connection's deadline ended a request of the fast
// path: its --timeout, unless the run's hard stop set it.
func deadlineErr(ctx context.Context, timeout time.Duration, err error) error {
	if timeout > 0 && ctx.Err() == nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return &timeoutError{timeout}
	}
	return err
}
